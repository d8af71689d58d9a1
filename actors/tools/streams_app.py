"""A real Kafka Streams 4.4 application in a streams group (KIP-1071), driven from Python: what
the streams tests (against Apache Kafka 4.4 itself, and Cohort in front of an upstream) and
``bench/streams.py`` run.

The app is ``StreamsApp`` (Java, ``java/src/.../StreamsApp.java``): a word count whose input
key is a record id and value a word, re-keyed by word (repartition topic
``APP-words-repartition``), counted in a store (changelog ``APP-counts-changelog``) that keeps
the ids seen, writing ``"DISTINCT RAW"`` per word to the output topic. At least once, a replay
after a crash may raise RAW but never DISTINCT, so the final DISTINCT per word is exact even
across kills: the tests assert it without transactions (which Cohort in front of an upstream
does not offer: TxnOffsetCommit is refused there).

    with StreamsProcess(bootstrap, app, "words", "counts", state_dir, instances=2) as p:
        p.wait(lambda events: running(events) == {0, 1})
    expected = produce_words(bootstrap, "words", 300)
    assert wait_for_counts(bootstrap, "counts", expected)

A ``StreamsProcess`` is one JVM (one ``JavaClients``) holding ``instances`` KafkaStreams, each
its own Streams process (own state directory); ``kill()`` crashes the JVM (SIGKILL).
Pure subprocess and client code, no Ray.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from actors.tools.java_clients import Command, Event, JavaClients

# Streams' KafkaStreams clients are threads of the JVM; C1 alone starts it fastest.
STREAMS_JVM_OPTIONS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                       "-Djava.awt.headless=true")
WORDS = ("apple", "birch", "cedar", "daisy", "elder", "fern", "gorse", "heath", "iris", "juniper",
         "kelp")
TIMEOUT_S = 90.0
QUIET = {"log_level": 0}
# A KafkaStreams state in which its tasks are not processing (closing, closed or failed).
# The loggers that show a streams member's side of the group protocol: each heartbeat's reply
# (its status list, tasks and epoch) and the membership's state changes (DEBUG).
HEARTBEAT_LOGGERS = {
    "org.apache.kafka.clients.consumer.internals.StreamsGroupHeartbeatRequestManager": "DEBUG",
    "org.apache.kafka.clients.consumer.internals.StreamsMembershipManager": "DEBUG",
}
NOT_PROCESSING = frozenset({"PENDING_SHUTDOWN", "NOT_RUNNING", "PENDING_ERROR", "ERROR"})


def repartition_topic(app: str) -> str:
    return f"{app}-words-repartition"


def changelog_topic(app: str) -> str:
    return f"{app}-counts-changelog"


def tasks_of(partitions: int) -> set[str]:
    """The app's tasks for an input of ``partitions`` partitions: subtopology 0 reads the
    input, 1 the repartition topic (sized like the input), ``"S_P"`` as Streams names them."""
    return {f"{s}_{p}" for s in (0, 1) for p in range(partitions)}


def stateful_tasks_of(partitions: int) -> set[str]:
    """The tasks with a store (subtopology 1, the count): the only ones given standbys."""
    return {f"1_{p}" for p in range(partitions)}


class StreamsProcess:
    """One JVM running ``instances`` KafkaStreams clients of the app (numbered from ``first``
    so that several processes' instances have distinct numbers and state directories)."""

    def __init__(self, bootstrap: str, app: str, input_topic: str, output_topic: str,
                 state_dir: str | Path, *, instances: int = 1, first: int = 0,
                 config: dict[str, object] | None = None,
                 loggers: dict[str, str] | None = None) -> None:
        self.instances = list(range(first, first + instances))
        self._args = (bootstrap, app, input_topic, output_topic, str(state_dir))
        self._config = config
        self._java = JavaClients(jvm_options=STREAMS_JVM_OPTIONS, loggers=loggers)
        self._command: Command | None = None
        self.killed_ms: int | None = None

    def start(self) -> StreamsProcess:
        self._java.start()
        self._command = self._java.streams(*self._args, instances=len(self.instances),
                                           first=self.instances[0], config=self._config)
        return self

    def stop(self) -> None:
        """Close the clients (they leave the group) and the JVM. Safe to call twice, and
        after ``kill()``."""
        if self._command is not None and self._java.pid is not None:
            self._command.stop()
        self._java.stop()

    def kill(self) -> None:
        """Crash the JVM (SIGKILL): its members stay in the group until their session ends."""
        self.killed_ms = int(time.time() * 1000)
        self._java.kill()

    def __enter__(self) -> StreamsProcess:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def events(self, kind: str | None = None) -> list[Event]:
        assert self._command is not None
        return self._command.events(kind)

    def wait(self, predicate: Callable[[list[Event]], Any], timeout_s: float = TIMEOUT_S) -> Any:
        """Wait until ``predicate(events)`` holds (see ``Command.wait``)."""
        assert self._command is not None
        return self._command.wait(predicate, timeout_s)

    def stderr_tail(self, lines: int = 30) -> str:
        return self._java.stderr_tail(lines)

    @property
    def log_path(self) -> Path | None:
        """The JVM's log (its clients' log4j output), once started."""
        return self._java.stderr_path


# ---------------------------------------------------------------------------- following

def states(events: Iterable[Event]) -> dict[int, str]:
    """Each instance's last KafkaStreams state."""
    return {e["instance"]: e["state"] for e in events if e["event"] == "state"}


def running(events: Iterable[Event]) -> set[int]:
    """The instances whose last state is RUNNING."""
    return {i for i, s in states(events).items() if s == "RUNNING"}


def tasks_now(events: Iterable[Event]) -> dict[int, tuple[set[str], set[str]]]:
    """Each instance's last reported ``(active, standby)`` tasks."""
    out: dict[int, tuple[set[str], set[str]]] = {}
    for e in events:
        if e["event"] == "tasks":
            out[e["instance"]] = (set(e["active"]), set(e["standby"]))
    return out


def settled(processes: Iterable[StreamsProcess], tasks: set[str],
            standbys: int = 0) -> bool:
    """The live processes' instances are all RUNNING and hold every task active exactly once,
    and each stateful task (subtopology 1) has ``standbys`` standbys on other instances, the
    stateless ones none: the group is stable as its members see it."""
    live_processes = [p for p in processes if p.killed_ms is None]
    events = [e for p in live_processes for e in p.events()]
    live = {i for p in live_processes for i in p.instances}
    if running(events) != live:
        return False
    nothing: tuple[set[str], set[str]] = (set(), set())
    held = {i: tasks_now(events).get(i, nothing) for i in live}
    actives = Counter(t for active, _ in held.values() for t in active)
    if set(actives) != tasks or any(n != 1 for n in actives.values()):
        return False
    for task in tasks:
        owner = next(i for i, (active, _) in held.items() if task in active)
        on = {i for i, (_, standby) in held.items() if task in standby}
        wanted = standbys if task.startswith("1_") else 0
        if len(on) != wanted or owner in on:
            return False
    return True


def ownership_timeline(processes: Iterable[StreamsProcess]) -> list[tuple[int, int, set[str]]]:
    """``(ms, instance, active tasks)`` changes of every instance, in time order: a ``tasks``
    event sets them, a state in which it does not process (shutting down, failed) or a kill
    of its process empties them."""
    changes: list[tuple[int, int, set[str]]] = []
    for p in processes:
        for e in p.events():
            if e["event"] == "tasks":
                changes.append((e["ms"], e["instance"], set(e["active"])))
            elif (e["event"] == "state" and e["state"] in NOT_PROCESSING) or e["event"] == "closed":
                changes.append((e["ms"], e["instance"], set()))
        if p.killed_ms is not None:
            changes.extend((p.killed_ms, i, set()) for i in p.instances)
    changes.sort(key=lambda c: c[0])
    return changes


def unowned_task_seconds(timeline: list[tuple[int, int, set[str]]], tasks: set[str],
                         start_ms: int, end_ms: int) -> float:
    """Task-seconds in ``[start_ms, end_ms]`` during which a task had no active owner (summed
    over the tasks), from an ``ownership_timeline``."""
    owned: dict[int, set[str]] = {}
    total_ms = 0
    last = start_ms
    for ms, instance, active in [*timeline, (end_ms, -1, None)]:
        if ms > start_ms:
            now = min(ms, end_ms)
            covered = set().union(*owned.values()) if owned else set()
            total_ms += (now - last) * len(tasks - covered)
            last = now
        if ms >= end_ms:
            break
        if active is not None:
            owned[instance] = active
    return total_ms / 1000.0


# ---------------------------------------------------------------------------- records

def create_topic(bootstrap: str, topic: str, partitions: int, timeout_s: float = 30.0) -> None:
    """Create ``topic`` (replication 1) and wait until its metadata shows every partition."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(timeout_s)
    deadline = time.monotonic() + timeout_s
    while True:
        meta = admin.list_topics(topic, timeout=5)
        found = meta.topics.get(topic)
        if found is not None and found.error is None and len(found.partitions) == partitions:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(f"topic {topic} has no {partitions} partitions in metadata")
        time.sleep(0.1)


def topic_partitions(bootstrap: str) -> dict[str, int]:
    """Every topic the cluster lists, with its partition count."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    return {name: len(t.partitions) for name, t in admin.list_topics(timeout=10).topics.items()}


def set_group_configs(bootstrap: str, group: str, configs: dict[str, object]) -> None:
    """Set group configs (``streams.num.standby.replicas``, ``streams.session.timeout.ms``,
    ...) with IncrementalAlterConfigs on the GROUP resource: a streams group's assignment
    settings are the group's, not the client's."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    entries = [ConfigEntry(k, str(v), incremental_operation=AlterConfigOpType.SET)
               for k, v in configs.items()]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def produce_words(bootstrap: str, topic: str, records: int, start: int = 0) -> Counter[str]:
    """Produce ``records`` records (key ``r<n>``, value a word, n from ``start``) and return
    how many of each word they hold: the app's expected DISTINCT per word for them."""
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "linger.ms": 5, **QUIET})
    counts: Counter[str] = Counter()
    for n in range(start, start + records):
        word = WORDS[(n * 7 + n // len(WORDS)) % len(WORDS)]
        producer.produce(topic, key=f"r{n}".encode(), value=word.encode())
        counts[word] += 1
        producer.poll(0)
    if producer.flush(30) != 0:
        raise TimeoutError(f"records to {topic} not acknowledged in 30 s")
    return counts


class CountsReader:
    """Reads the app's output topic from its start, keeping the last ``(DISTINCT, RAW)`` per
    word: the app's current counts."""

    def __init__(self, bootstrap: str, topic: str, partitions: int) -> None:
        self._consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                                   "enable.auto.commit": False, **QUIET})
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                               for p in range(partitions)])
        self.counts: dict[str, tuple[int, int]] = {}
        self.updates = 0

    def poll(self, timeout_s: float = 0.5) -> None:
        for message in self._consumer.consume(500, timeout_s):
            if message.error() is not None:
                continue
            distinct, raw = message.value().decode().split(" ")
            self.counts[message.key().decode()] = (int(distinct), int(raw))
            self.updates += 1

    def distinct(self) -> dict[str, int]:
        return {word: d for word, (d, _) in self.counts.items()}

    def close(self) -> None:
        self._consumer.close()


def wait_for_counts(bootstrap: str, topic: str, partitions: int, expected: Counter[str],
                    timeout_s: float = TIMEOUT_S,
                    alive: Callable[[], None] | None = None) -> dict[str, tuple[int, int]]:
    """Read the output until its DISTINCT counts equal ``expected``; return the
    ``(DISTINCT, RAW)`` per word. Raises ``TimeoutError`` with what was read (``alive``,
    called each round, may raise first: an app that died)."""
    reader = CountsReader(bootstrap, topic, partitions)
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            with contextlib.suppress(KafkaException):
                reader.poll()  # a fetch may fail while a gateway restarts: read again
            if reader.distinct() == dict(expected):
                return dict(reader.counts)
            if alive is not None:
                alive()
            if time.monotonic() > deadline:
                raise TimeoutError(f"output {topic} after {timeout_s:.0f} s: {reader.counts} "
                                   f"({reader.updates} updates), expected {dict(expected)}")
    finally:
        reader.close()
