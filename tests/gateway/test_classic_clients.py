"""Classic groups through the gateway with three clients nobody here wrote: librdkafka
(``group.protocol=classic``: range, cooperative-sticky, static), kafka-python (classic, static
with ``group_instance_id``) and aiokafka (old request versions)."""

from __future__ import annotations

import asyncio
import contextlib
import threading

import pytest
import ray

from actors.gateway.launch import running_gateway
from protocol import messages as m
from tests.gateway.conftest import CLASSIC, unique, wait_for, whole

pytestmark = pytest.mark.ray


def _parts(topic: str, n: int) -> list[tuple[str, int]]:
    return [(topic, p) for p in range(n)]


def _described(cluster, group: str) -> m.DescribeGroupsResponseGroup:
    return cluster.call(m.DescribeGroupsRequest(groups=[group])).groups[0]


def _stable(cluster, group: str, n: int):
    g = _described(cluster, group)
    return g if g.group_state == "stable" and len(g.members) == n else None


def _committed(cluster, group: str) -> list:
    """The group's partitions with a committed offset past 0 (none yet: an empty list)."""
    fetched = cluster.call(m.OffsetFetchRequest(group_id=group))
    return [p for t in fetched.topics for p in t.partitions if p.committed_offset > 0]


# --------------------------------------------------------------------------- librdkafka


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_librdkafka_classic_members_converge(cluster, gateway, members, strategy):
    topic, group = unique(f"cl-{strategy}"), unique("g")
    cluster.create_topic(topic, 6)
    conf = {**CLASSIC, "partition.assignment.strategy": strategy}
    group_members = [members.add(gateway, group, [topic], protocol="classic", config=conf)
                     for _ in range(3)]
    wait_for(lambda: whole(group_members, _parts(topic, 6)))
    described = wait_for(lambda: _stable(cluster, group, 3))
    assert described.protocol_data == strategy and described.protocol_type == "consumer"
    wait_for(lambda: all(sum(x.processed().values()) > 0 for x in group_members))


def test_a_static_librdkafka_member_restarts_without_a_rebalance(cluster, gateway, members):
    topic, group = unique("cl-static"), unique("g")
    cluster.create_topic(topic, 4)

    def static(i: int):
        conf = {**CLASSIC, "group.instance.id": f"{group}-host-{i}"}
        return members.add(gateway, group, [topic], protocol="classic", config=conf)

    group_members = [static(0), static(1)]
    wait_for(lambda: whole(group_members, _parts(topic, 4)))
    before = wait_for(lambda: _stable(cluster, group, 2))
    assert {x.group_instance_id for x in before.members} == {f"{group}-host-0",
                                                              f"{group}-host-1"}
    kept = group_members[0].assignment()
    group_members[1].stop(leave=True)  # a static member's close does not leave the group
    group_members[1] = static(1)
    wait_for(lambda: whole(group_members, _parts(topic, 4)))
    after = wait_for(lambda: _stable(cluster, group, 2))
    assert after.generation_id == before.generation_id  # taken back, no rebalance
    assert [e["event"] for e in group_members[0].timeline()
            if e["event"] in ("assigned", "revoked")] == ["assigned"]
    assert group_members[0].assignment() == kept


# ------------------------------------------------------------------------- kafka-python


class _Threaded:
    """A poll-driven client in a thread of its own, its assignment readable from outside."""

    def __init__(self, poll, assignment, close) -> None:
        self._poll, self._assignment, self._close = poll, assignment, close
        self._stop = threading.Event()
        self.owned: list[tuple[str, int]] = []
        self.records = 0
        self.errors: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self.records += self._poll()
                self.owned = sorted(self._assignment())
        except Exception as e:
            self.errors.append(repr(e))
        finally:
            self._close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)


def _kafka_python(gateway: str, group: str, topic: str, instance: str | None) -> _Threaded:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(topic, bootstrap_servers=gateway, group_id=group,
                             group_instance_id=instance, session_timeout_ms=6000,
                             heartbeat_interval_ms=300, auto_offset_reset="earliest",
                             enable_auto_commit=False, max_poll_records=50)

    def poll() -> int:
        batch = consumer.poll(timeout_ms=100)
        if batch:
            consumer.commit()
        return sum(len(v) for v in batch.values())

    return _Threaded(poll, lambda: [(tp.topic, tp.partition) for tp in consumer.assignment()],
                     consumer.close)


@pytest.mark.parametrize("static", [False, True])
def test_kafka_python_members_converge_and_commit(cluster, gateway, static):
    topic, group = unique("kp"), unique("g")
    cluster.create_topic(topic, 4)
    clients = [_kafka_python(gateway, group, topic, f"{group}-{i}" if static else None)
               for i in range(2)]
    try:
        wait_for(lambda: sorted(tp for c in clients for tp in c.owned) == _parts(topic, 4)
                 and all(c.owned for c in clients))
        described = wait_for(lambda: _stable(cluster, group, 2))
        ids = {x.group_instance_id for x in described.members}
        assert ids == ({f"{group}-0", f"{group}-1"} if static else {None})
        assert wait_for(lambda: _committed(cluster, group))
        assert all(not c.errors for c in clients)
    finally:
        for c in clients:
            c.stop()


# ------------------------------------------------------------------------------ aiokafka


def test_aiokafka_speaks_old_request_versions_and_converges(cluster, gateway):
    topic, group = unique("aio"), unique("g")
    cluster.create_topic(topic, 4)
    owned: dict[int, list] = {}
    done = threading.Event()
    failures: list[str] = []

    async def consume(i: int) -> None:
        from aiokafka import AIOKafkaConsumer
        from aiokafka.errors import CommitFailedError, RebalanceInProgressError

        consumer = AIOKafkaConsumer(topic, bootstrap_servers=gateway, group_id=group,
                                    session_timeout_ms=6000, heartbeat_interval_ms=300,
                                    auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        try:
            while not done.is_set():
                batch = await consumer.getmany(timeout_ms=100, max_records=50)
                if batch:
                    # a rebalance that began meanwhile (a slow machine) fails the commit: as
                    # applications do, go on; the next batch commits again
                    with contextlib.suppress(CommitFailedError, RebalanceInProgressError):
                        await consumer.commit()
                owned[i] = sorted((tp.topic, tp.partition) for tp in consumer.assignment())
        finally:
            await consumer.stop()

    def run() -> None:
        async def both() -> None:
            await asyncio.gather(consume(0), consume(1))
        try:
            asyncio.run(both())
        except Exception as e:
            failures.append(repr(e))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        wait_for(lambda: sorted(tp for o in owned.values() for tp in o) == _parts(topic, 4)
                 and len(owned) == 2 and all(owned.values()))
        wait_for(lambda: _stable(cluster, group, 2))
        # On a loaded machine every commit may so far have met a rebalance (and been dropped,
        # as applications do): wait for one to land, so OffsetCommit's version was served.
        wait_for(lambda: _committed(cluster, group))
    finally:
        done.set()
        thread.join(30)
    assert failures == []
    stats = ray.get(running_gateway().stats.remote())
    served = {**stats["served"], **stats["served_by_coordinators"]}
    old = {(11, 5), (14, 3), (8, 3), (9, 3)}  # JoinGroup v5, SyncGroup v3, OffsetCommit v3, ...
    assert old <= set(served)
