"""A real Kafka consumer (confluent-kafka, i.e. librdkafka) in a Cohort run, with a timeline.

Cohort's own consumer actors record what they owned when; to hold an unmodified Kafka client
to the same invariants, ``KafkaMember`` drives a ``confluent_kafka.Consumer`` from a thread
of its own and records the same events from its rebalance callbacks: ``assigned``,
``revoked``, ``lost`` (with the member epoch the gateway last sent it), ``processed`` ranges
of the synthetic stream (each record's value is its offset, which it checks) and
``committed`` offsets. Like the Ray consumers it processes at most ``records_per_s`` per
partition, commits every ``commit_interval_s``, commits what it processed before a revocation
completes (inside ``on_revoke``), and commits nothing for partitions it lost. Events go to
``timeline_path`` as they happen (JSON lines), so a killed consumer's timeline survives it.
``KafkaConsumerActor`` is the same as a ``num_cpus=0`` Ray actor, for chaos runs.

confluent-kafka is a test dependency of Cohort: importing this module does not need it,
starting a consumer does.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import ray

from actors.clients.member_ids import MemberIds

TopicPartition = tuple[str, int]
POLL_S = 0.05
MAX_BATCH = 100
MAX_TIMELINE_EVENTS = 100_000
STOP_TIMEOUT_S = 30.0


PACED_PARTITION_FETCH_BYTES = 16 << 10
PACED_QUEUED_RECORDS = 1_000


class KafkaMember:
    """One confluent-kafka consumer and its timeline (see the module docstring)."""

    def __init__(self, bootstrap: str, group_id: str, topics: list[str],
                 protocol: str = "consumer", config: dict | None = None,
                 records_per_s: float = 50.0, commit_interval_s: float = 0.5,
                 epoch_of: Callable[[str, str], int] | None = None,
                 timeline_path: str | None = None) -> None:
        from confluent_kafka import Consumer

        # A paced consumer fetches little ahead (16 KiB, ~1,000 records a partition a fetch), as
        # a slow Kafka application should: librdkafka hands out what it fetched in the order it
        # arrived, so with its defaults (1 MiB a partition a fetch, 100,000 records queued a
        # partition) one partition's backlog would hold the others' records back for minutes
        # at 50 records/s, against Kafka as against Cohort.
        conf = {"bootstrap.servers": bootstrap, "group.id": group_id,
                "group.protocol": protocol, "enable.auto.commit": False,
                "auto.offset.reset": "earliest", "client.id": f"cohort-{group_id}",
                "max.partition.fetch.bytes": PACED_PARTITION_FETCH_BYTES,
                "queued.min.messages": PACED_QUEUED_RECORDS}
        conf.update(config or {})
        conf["on_commit"] = self._on_commit
        self.group_id = group_id
        self.topics = topics
        self.records_per_s = records_per_s
        self.commit_interval_s = commit_interval_s
        self._epoch_of = epoch_of
        self._path = timeline_path
        self._lock = threading.Lock()
        self._owned: set[TopicPartition] = set()
        self._start: dict[TopicPartition, int] = {}   # first offset of the unlogged range
        self._next: dict[TopicPartition, int] = {}    # next offset to process
        self._committed: dict[TopicPartition, int] = {}
        # The member id each owned partition was assigned under: librdkafka may have dropped
        # or replaced its member id (fenced, left) by the time it revokes them.
        self._assigned_as: dict[TopicPartition, str] = {}
        self._events: list[dict] = []
        self._epoch = -1
        self._taken = 0  # records taken since _pace_since (pacing)
        self._pace_since = time.monotonic()
        self.bad_records = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._leave = True
        self._closing = False
        self.consumer = Consumer(conf)
        self._ids = MemberIds(self.consumer, conf["client.id"])
        self._thread = threading.Thread(target=self._run, name=f"kafka-{group_id}", daemon=True)

    def start(self, subscribe: bool = True) -> KafkaMember:
        if subscribe:
            self.consumer.subscribe(self.topics, on_assign=self._on_assign,
                                    on_revoke=self._on_revoke, on_lost=self._on_lost)
        self._thread.start()
        return self

    # ----------------------------------------------------------------------- reading

    def assignment(self) -> list[TopicPartition]:
        with self._lock:
            return sorted(self._owned)

    def timeline(self) -> list[dict]:
        with self._lock:
            return list(self._events)

    def member_id(self) -> str:
        """librdkafka's member id; while the consumer closes, the last one seen.

        Asked with a deadline and without the GIL (``member_ids``): librdkafka's group thread
        may never answer. During ``close()`` it is not asked at all (seen once: a revoke
        callback's failed commit asked for the id), since the handle is destroyed there.
        """
        return self._ids.last if self._closing else self._ids.ask()

    def processed(self) -> dict[TopicPartition, int]:
        with self._lock:
            return dict(self._next)

    def stop(self, leave: bool = True) -> None:
        """Stop polling; ``leave``: close (commit, leave the group) rather than vanish."""
        self._leave = leave
        self._stop.set()
        self._thread.join(STOP_TIMEOUT_S)

    # ----------------------------------------------------------------------- the loop

    def _run(self) -> None:
        last_commit = time.monotonic()
        try:
            while not self._stop.is_set():
                for msg in self.consumer.consume(num_messages=self._batch(), timeout=POLL_S):
                    self._take(msg)
                if time.monotonic() - last_commit >= self.commit_interval_s:
                    last_commit = time.monotonic()
                    # Synchronous, as Kafka's Java client advises: librdkafka retries a failed
                    # async commit (say, COORDINATOR_LOAD_IN_PROGRESS while a partition
                    # reloads), and the retry can land after a newer commit, taking the
                    # committed offset back below one already acknowledged.
                    self._commit(self.assignment())
                self._pace()
            if self._leave:
                self._commit(self.assignment())
                self.member_id()  # the id the close's callbacks will record under
                self._closing = True
                self.consumer.close()  # revokes (callback) and leaves the group
        except Exception as e:  # a dead client: its timeline says what it did until then
            self.errors.append(repr(e))

    def _take(self, msg: Any) -> None:
        if msg.error() is not None:
            self.errors.append(str(msg.error()))
            return
        tp, offset = (msg.topic(), msg.partition()), msg.offset()
        with self._lock:
            if tp not in self._owned:
                return  # fetched before a revocation: not ours to process any more
            if msg.value() != str(offset).encode():
                self.bad_records += 1
            if tp not in self._next or offset != self._next[tp]:
                self._log_processed(tp)
                self._start[tp] = offset
            self._next[tp] = offset + 1
            self._taken += 1

    def _batch(self) -> int:
        """Records to take in one turn of the loop: one poll interval's worth at the pace.
        (A fixed 100 per turn, with naps capped at one interval, ran at ~2,000 records/s.)"""
        with self._lock:
            rate = self.records_per_s * max(len(self._owned), 1)
        return max(1, min(MAX_BATCH, int(rate * POLL_S)))

    def _pace(self) -> None:
        """At most ``records_per_s`` per owned partition: the Ray consumers' pace."""
        now = time.monotonic()
        with self._lock:
            rate = self.records_per_s * max(len(self._owned), 1)
            ahead = self._taken - rate * (now - self._pace_since)
            if now - self._pace_since >= 1.0:
                self._taken, self._pace_since = max(0, int(ahead)), now
        if ahead > 0:  # short naps: the loop also serves the rebalance callbacks
            time.sleep(min(ahead / rate, POLL_S))

    def _commit(self, parts: list[TopicPartition], wait: bool = True) -> None:
        """Commit what was processed of ``parts``, synchronously unless ``wait`` is False
        (then ``on_commit`` records the outcome); a refusal goes in the timeline too."""
        from confluent_kafka import KafkaException
        from confluent_kafka import TopicPartition as KTP

        with self._lock:
            todo = {tp: self._next[tp] for tp in parts
                    if tp in self._next and self._next[tp] > self._committed.get(tp, -1)}
            for tp in todo:
                self._log_processed(tp)
        if not todo:
            return
        offsets = [KTP(t, p, o) for (t, p), o in todo.items()]
        try:
            if wait:
                result = self.consumer.commit(offsets=offsets, asynchronous=False) or []
                refused = [k for k in result if k.error is not None]
                if refused:
                    self._commit_failed({(k.topic, k.partition): todo[(k.topic, k.partition)]
                                         for k in refused}, str(refused[0].error))
                self._on_commit(None, result)
            else:
                self.consumer.commit(offsets=offsets, asynchronous=True)
        except KafkaException as e:
            self.errors.append(str(e))
            self._commit_failed(todo, str(e))

    def _commit_failed(self, offsets: dict[TopicPartition, int], error: str) -> None:
        """Put a failed commit in the timeline: a commit the client gave up on may still be
        applied later (in flight on a connection the client dropped), and a run that finds an
        acknowledged commit lost needs to see that it happened, where and when."""
        now = time.monotonic()
        with self._lock:
            for tp, offset in sorted(offsets.items()):
                self._record({"t": now, "event": "commit_failed", "partitions": [tp],
                              "offset": offset, "error": error})

    def _on_commit(self, error: Any, partitions: list | None) -> None:
        if error is not None:
            self.errors.append(str(error))
            return
        now = time.monotonic()
        with self._lock:
            for ktp in partitions or []:
                if ktp.error is None and ktp.offset >= 0:
                    tp = (ktp.topic, ktp.partition)
                    if ktp.offset > self._committed.get(tp, -1):
                        self._committed[tp] = ktp.offset
                        self._record({"t": now, "event": "committed", "partitions": [tp],
                                      "offset": ktp.offset})

    # ------------------------------------------------------------------ the callbacks

    def _on_assign(self, consumer: Any, partitions: list) -> None:
        tps = [(p.topic, p.partition) for p in partitions]
        with self._lock:
            self._owned.update(tps)
        self._ownership("assigned", tps)

    def _on_revoke(self, consumer: Any, partitions: list) -> None:
        tps = [(p.topic, p.partition) for p in partitions]
        # Processing stopped when the callback began (it runs on the consuming thread), so
        # that is when ownership ends; the commit that follows only hands the position on
        # (the next owner resumes there) and may wait on a coordinator that is reloading.
        self._ownership("revoked", tps)
        self._commit(tps)
        with self._lock:
            self._drop(tps)

    def _on_lost(self, consumer: Any, partitions: list) -> None:
        tps = [(p.topic, p.partition) for p in partitions]
        self._ownership("lost", tps)
        with self._lock:
            self._drop(tps)

    def _drop(self, tps: list[TopicPartition]) -> None:
        for tp in tps:
            self._log_processed(tp)
            self._owned.discard(tp)
            self._start.pop(tp, None)
            self._next.pop(tp, None)
            self._committed.pop(tp, None)

    def _ownership(self, kind: str, tps: list[TopicPartition]) -> None:
        if not tps:
            return
        # A revocation ends ownership when its callback begins (processing runs on this
        # thread, so it has stopped); the epoch lookup below is a call to the coordinator,
        # slow while a partition reloads, and must not push that moment later.
        began = time.monotonic()
        epoch = self._epoch
        if self._epoch_of is not None:
            try:
                epoch = max(epoch, self._epoch_of(self.group_id, self.member_id()))
            except Exception as e:
                self.errors.append(f"epoch lookup failed: {e!r}")
        self._epoch = epoch
        now = time.monotonic() if kind == "assigned" else began
        current = self.member_id()
        by_member: dict[str, list[TopicPartition]] = {}
        with self._lock:
            if kind == "assigned":
                self._assigned_as.update(dict.fromkeys(tps, current))
                by_member = {current: tps}
            else:
                for tp in tps:
                    by_member.setdefault(self._assigned_as.pop(tp, current), []).append(tp)
            for member_id, of_member in by_member.items():
                self._record({"t": now, "event": kind, "partitions": sorted(of_member),
                              "epoch": epoch}, member_id)

    # --------------------------------------------------------------------- timeline

    def _log_processed(self, tp: TopicPartition) -> None:
        """Close the open processed range of ``tp`` (lock held)."""
        start, end = self._start.get(tp), self._next.get(tp)
        if start is not None and end is not None and end > start:
            self._record({"t": time.monotonic(), "event": "processed", "partitions": [tp],
                          "from": start, "to": end})
            self._start[tp] = end

    def _record(self, event: dict, member_id: str | None = None) -> None:
        member_id = self.member_id() if member_id is None else member_id
        # "fencing": this member is judged as a Kafka client (invariants: commits fenced).
        event = {**event, "group_id": self.group_id, "member_id": member_id,
                 "fencing": "commit"}
        if len(self._events) < MAX_TIMELINE_EVENTS:
            self._events.append(event)
        if self._path is not None:
            with open(self._path, "a") as f:
                f.write(json.dumps(event) + "\n")


@ray.remote(num_cpus=0, max_restarts=0)
class KafkaConsumerActor:
    """``KafkaMember`` as a Ray actor: chaos spawns, kills and reads it like its own."""

    def __init__(self, bootstrap: str, group_id: str, topics: list[str],
                 gateway_name: str = "gateway", **options: Any) -> None:
        gateway = ray.get_actor(gateway_name, namespace="cohort")

        def epoch_of(group: str, member: str) -> int:
            return ray.get(gateway.member_epoch.remote(group, member), timeout=10)

        self.member = KafkaMember(bootstrap, group_id, topics, epoch_of=epoch_of,
                                  **options).start()

    def assignment(self) -> list[TopicPartition]:
        return self.member.assignment()

    def timeline(self) -> list[dict]:
        return self.member.timeline()

    def members(self) -> list[dict]:
        return [{"member_id": self.member.member_id(), "assignment": self.member.assignment()}]

    def stop(self, leave: bool = True) -> None:
        self.member.stop(leave)
