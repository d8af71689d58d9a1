"""Apache Kafka's Java clients (4.4.0) as black boxes against Cohort's gateway: the
``KafkaConsumer`` on the consumer protocol (KIP-848) and on the classic one, and the
``KafkaShareConsumer`` (KIP-932), all from the session's one JVM (``java``).

Topics are the gateway's synthetic stream (README, "Kafka clients: the wire gateway"): a topic
made with ``cluster.create_topic`` already holds records, offset n's value is "n", and its end
grows by 50 records a second per partition; nothing is produced. Every wait polls with a
deadline.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

import pytest

from actors.tools.java_clients import Event
from protocol import messages as m
from protocol.errors import Errors
from tests.java_clients.conftest import unique

pytestmark = pytest.mark.ray

PARTITIONS, INSTANCES = 4, 3
# The classic protocol's member settings, short enough for a test's patience (the consumer
# protocol's come from the coordinator: RAY_TEST_CONFIG).
CLASSIC = {"session.timeout.ms": 6000, "heartbeat.interval.ms": 300}


def owners(events: Iterable[Event]) -> dict[int, list[str]]:
    """Each running instance's assignment, as it last reported it."""
    owned: dict[int, list[str]] = {}
    for e in events:
        if e["event"] == "assignment":
            owned[e["instance"]] = e["partitions"]
        elif e["event"] == "closed":
            owned.pop(e["instance"], None)
    return owned


def converged(events: list[Event], instances: int, partitions: list[str]) -> bool:
    """Every partition owned by exactly one instance, and every instance owns some."""
    owned = owners(events)
    return (len(owned) == instances and all(owned.values())
            and sorted(p for ps in owned.values() for p in ps) == sorted(partitions))


def commits(events: Iterable[Event]) -> dict[str, list[int]]:
    """Per partition, the offsets the consumers committed, in the order they reported them."""
    out: dict[str, list[int]] = {}
    for e in events:
        if e["event"] == "committed":
            for partition, offset in e["offsets"].items():
                out.setdefault(partition, []).append(offset)
    return out


def unseen(events: Iterable[Event], upto: dict[str, int]) -> dict[str, list[tuple[int, int]]]:
    """Per partition, the offsets below ``upto`` no ``records`` event covered, as ranges."""
    ranges: dict[str, list[tuple[int, int]]] = {}
    for e in events:
        if e["event"] == "records":
            ranges.setdefault(e["partition"], []).append((e["first"], e["last"]))
    gaps: dict[str, list[tuple[int, int]]] = {}
    for partition, end in upto.items():
        covered = 0  # every offset below this was seen
        for first, last in sorted(ranges.get(partition, [])):
            if first > covered:
                gaps.setdefault(partition, []).append((covered, first - 1))
            covered = max(covered, last + 1)
        if covered < end:
            gaps.setdefault(partition, []).append((covered, end - 1))
    return gaps


class CommittedWatch:
    """The group's committed offsets as its coordinator answers OffsetFetch, polled from a
    thread while the test runs (through the kill: ``cluster.call`` retries a failover)."""

    def __init__(self, cluster, group: str, every_s: float = 0.1) -> None:
        self.cluster, self.group, self.every_s = cluster, group, every_s
        self.seen: dict[str, list[int]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> CommittedWatch:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def now(self) -> dict[str, int]:
        reply = self.cluster.call(m.OffsetFetchRequest(group_id=self.group))
        if reply.error_code != Errors.NONE:
            return {}
        return {f"{t.name}-{p.partition_index}": p.committed_offset
                for t in reply.topics for p in t.partitions
                if p.error_code == Errors.NONE and p.committed_offset >= 0}

    def went_back(self) -> dict[str, list[int]]:
        return {p: seq for p, seq in self.seen.items() if seq != sorted(seq)}

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            for partition, offset in self.now().items():
                seq = self.seen.setdefault(partition, [])
                if not seq or seq[-1] != offset:
                    seq.append(offset)


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_java_consumers_converge_and_commit_through_a_coordinator_kill(
        cluster, gateway, java, protocol):
    topic, group = unique(f"java-{protocol}"), unique(f"java-{protocol}-g")
    cluster.create_topic(topic, PARTITIONS)
    partitions = [f"{topic}-{p}" for p in range(PARTITIONS)]
    watch = CommittedWatch(cluster, group).start()
    run = java.consume(gateway, topic, group, protocol=protocol, instances=INSTANCES,
                       config=CLASSIC if protocol == "classic" else None)
    try:
        run.wait(lambda events: converged(events, INSTANCES, partitions))
        at_kill = run.wait(lambda events: (c := commits(events)).keys() == set(partitions)
                           and {p: max(seq) for p, seq in c.items()})
        before = len(run.events())
        cluster.kill_partition(cluster.partition_for(group))
        # Every partition's commits go on past where they were at the kill.
        run.wait(lambda events: all(
            max(seq) > at_kill[p] for p, seq in commits(events[before:]).items())
            and commits(events[before:]).keys() == set(partitions))
        run.wait(lambda events: converged(events, INSTANCES, partitions))
    finally:
        run.stop()
        watch.stop()
    events = run.events()
    reported = commits(events)
    final = watch.now()
    # Committed offsets never go back: as each consumer saw its commits succeed, and as the
    # coordinator answered, polled through the kill; what was acknowledged survived it.
    assert {p: seq for p, seq in reported.items() if seq != sorted(seq)} == {}
    assert watch.went_back() == {}
    assert final == {p: max(seq) for p, seq in reported.items()}
    # Every record below the committed offsets was seen at least once, and is the stream's.
    assert unseen(events, final) == {}
    assert all(e["values_are_offsets"] for e in events if e["event"] == "records")
    assert [e for e in events if e["event"] == "error"] == []


def deliveries(events: Iterable[Event], kind: str) -> dict[tuple[str, int], int]:
    """How often each (partition, offset) was in a ``records`` event (delivered), or in an
    ``acknowledged`` one without error (its acknowledgement confirmed)."""
    out: dict[tuple[str, int], int] = {}
    for e in events:
        if e["event"] == kind and (kind == "records" or e["error"] is None):
            for offset in e["offsets"]:
                key = (e["partition"], offset)
                out[key] = out.get(key, 0) + 1
    return out


def test_java_share_consumers_acknowledge_every_record_once_through_a_coordinator_kill(
        cluster, gateway, java):
    topic, group = unique("java-share"), unique("java-share-g")
    cluster.create_topic(topic, 2)
    partitions = {f"{topic}-{p}" for p in range(2)}
    run = java.share(gateway, topic, group, instances=2)

    def acked(events: list[Event]) -> int:
        return len(deliveries(events, "acknowledged"))

    try:
        # share.auto.offset.reset is latest: the records come as the stream grows (50/s).
        at_kill = run.wait(lambda events: acked(events) >= 40 and {
            e["partition"] for e in events if e["event"] == "acknowledged"} == partitions
            and acked(events))
        cluster.kill_partition(cluster.partition_for(group))
        run.wait(lambda events: acked(events) >= at_kill + 60, 90)
    finally:
        run.stop()
    events = run.events()
    delivered, confirmed = deliveries(events, "records"), deliveries(events, "acknowledged")
    # No record's acknowledgement is confirmed twice: none comes again once accepted.
    assert {k: n for k, n in confirmed.items() if n > 1} == {}
    # Records are acquired in offset order: none skipped between the first and the last.
    for partition in partitions:
        offsets = {o for p, o in delivered if p == partition}
        assert offsets and offsets == set(range(min(offsets), max(offsets) + 1)), partition
    assert all(e["values_are_offsets"] for e in events if e["event"] == "records")
    assert [e for e in events if e["event"] == "error"] == []


def test_a_java_share_consumer_reading_a_backlog_gets_records_of_every_partition(
        cluster, gateway, java):
    # From the earliest record, every partition holds more than one fetch's max_records: a
    # fetch filled from the first partition alone would leave the others waiting for ever.
    topic, group = unique("java-backlog"), unique("java-backlog-g")
    cluster.create_topic(topic, 3)
    cluster.set_group_config(group, share_auto_offset_reset="earliest")
    run = java.share(gateway, topic, group)
    try:
        run.wait(lambda events: {e["partition"] for e in events if e["event"] == "acknowledged"
                                 and e["error"] is None} == {f"{topic}-{p}" for p in range(3)})
    finally:
        run.stop()
    firsts = {}
    for e in run.events("records"):
        firsts.setdefault(e["partition"], e["offsets"][0])
    assert set(firsts.values()) == {0}  # each partition read from its first record
