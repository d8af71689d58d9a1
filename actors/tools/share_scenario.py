"""Real share consumers (confluent-kafka's ``ShareConsumer``) on one bootstrap address: the
scenario the share-group tests and ``bench/share.py`` run on Cohort's gateway and on
librdkafka's mock cluster alike.

Each consumer runs in its own thread: poll a batch, acknowledge every record ACCEPT (explicit
acknowledgement mode), ``commit_sync`` and note, per partition, which acknowledgements the
broker confirmed. The log of deliveries and confirmed acknowledgements is what the invariants
read: a record whose acknowledgement was confirmed is never delivered again; a record is not
held by two consumers at once (checked as: no record delivered to another consumer while a
first holds it unacknowledged, within the run's lock duration).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import ShareConsumer

POLL_S = 0.5
COMMIT_TIMEOUT_S = 30.0

Record = tuple[int, int]  # (partition, offset)


@dataclass
class ShareLog:
    """What every consumer was given and had confirmed, in the order it happened."""

    # (monotonic time, consumer, partition, offset, delivery count)
    deliveries: list[tuple[float, int, int, int, int]] = field(default_factory=list)
    # (monotonic time, consumer, partition, offset): acknowledgements the broker confirmed
    confirmed: list[tuple[float, int, int, int]] = field(default_factory=list)
    # What each record delivered held, the last time it was delivered: (key, value, headers,
    # timestamp), so that a run over real records can check they came whole.
    contents: dict[Record, tuple] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def delivered(self) -> set[Record]:
        with self.lock:
            return {(p, o) for _, _, p, o, _ in self.deliveries}

    def acknowledged(self) -> set[Record]:
        with self.lock:
            return {(p, o) for _, _, p, o in self.confirmed}

    def redelivered_after_ack(self) -> list[Record]:
        """Records delivered again after their acknowledgement was confirmed (must be none)."""
        with self.lock:
            acked_at: dict[Record, float] = {}
            for t, _, p, o in self.confirmed:
                acked_at.setdefault((p, o), t)
            return [(p, o) for t, _, p, o, _ in self.deliveries
                    if (p, o) in acked_at and t > acked_at[(p, o)]]

    def redeliveries(self) -> int:
        with self.lock:
            return len(self.deliveries) - len({(p, o) for _, _, p, o, _ in self.deliveries})


class ShareConsumers:
    """``count`` share consumers of ``group`` reading ``topic`` until stopped."""

    def __init__(self, bootstrap: str, group: str, topic: str, count: int = 3,
                 extra: dict | None = None) -> None:
        self.log = ShareLog()
        self._stop = threading.Event()
        conf = {"bootstrap.servers": bootstrap, "group.id": group,
                "share.acknowledgement.mode": "explicit", "log_level": 3, **(extra or {})}
        self._consumers = [ShareConsumer(dict(conf, **{"client.id": f"share-{k}"}))
                           for k in range(count)]
        for c in self._consumers:
            c.subscribe([topic])
        self._threads = [threading.Thread(target=self._run, args=(k, c), daemon=True)
                         for k, c in enumerate(self._consumers)]

    def start(self) -> ShareConsumers:
        for t in self._threads:
            t.start()
        return self

    def _run(self, k: int, consumer: ShareConsumer) -> None:
        while not self._stop.is_set():
            try:
                msgs = consumer.poll(POLL_S)
            except Exception as e:  # a client error is a finding, not a crash
                self._note(f"consumer {k} poll: {e}")
                continue
            held = []
            for msg in msgs:
                if msg.error() is not None:
                    self._note(f"consumer {k}: {msg.error()}")
                    continue
                with self.log.lock:
                    self.log.deliveries.append((time.monotonic(), k, msg.partition(),
                                                msg.offset(), msg.delivery_count() or 0))
                    self.log.contents[(msg.partition(), msg.offset())] = (
                        msg.key(), msg.value(), msg.headers(), msg.timestamp()[1])
                consumer.acknowledge(msg)
                held.append((msg.partition(), msg.offset()))
            if held:
                self._commit(k, consumer, held)

    def _commit(self, k: int, consumer: ShareConsumer, held: list[Record]) -> None:
        try:
            results = consumer.commit_sync(COMMIT_TIMEOUT_S)
        except Exception as e:
            self._note(f"consumer {k} commit: {e}")
            return
        failed = {tp.partition for tp, err in results.items() if err is not None}
        for tp, err in results.items():
            if err is not None:
                self._note(f"consumer {k} commit {tp.topic}[{tp.partition}]: {err}")
        now = time.monotonic()
        with self.log.lock:
            self.log.confirmed += [(now, k, p, o) for p, o in held if p not in failed]

    def _note(self, error: str) -> None:
        with self.log.lock:
            self.log.errors.append(error)

    def wait_for(self, condition: Callable[[ShareLog], bool], timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if condition(self.log):
                return True
            time.sleep(0.05)
        return condition(self.log)

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(timeout=10)
        for c in self._consumers:
            with contextlib.suppress(Exception):  # closing is best effort
                c.close()
