"""confluent-kafka's ``ShareConsumer`` (KIP-932, explicit acknowledgement, ``commit_sync``)
through the gateway: three consumers share a 3-partition topic, the group's partition actor is
killed mid-run, and nothing whose acknowledgement was confirmed is delivered again."""

from __future__ import annotations

import pytest

from actors.tools.share_scenario import ShareConsumers, ShareLog
from protocol import messages as m
from tests.gateway.conftest import unique

pytestmark = pytest.mark.ray

BEFORE_KILL, AFTER_KILL = 150, 150


def _by_consumer(log: ShareLog) -> set[int]:
    with log.lock:
        return {k for _, k, _, _, _ in log.deliveries}


def _gaps(log: ShareLog) -> dict[int, list[int]]:
    """Per partition, offsets between the first and last delivered that were never delivered
    (records are acquired in offset order, so none may be skipped)."""
    by_partition: dict[int, set[int]] = {}
    for p, o in log.delivered():
        by_partition.setdefault(p, set()).add(o)
    return {p: sorted(set(range(min(os), max(os) + 1)) - os)
            for p, os in by_partition.items() if len(os) < max(os) - min(os) + 1}


def test_three_share_consumers_split_a_topic_and_a_partition_kill_redelivers_nothing_acked(
        cluster, gateway):
    topic, group = unique("share-t"), unique("share-g")
    cluster.create_topic(topic, 3)
    consumers = ShareConsumers(gateway, group, topic, count=3).start()
    try:
        assert consumers.wait_for(lambda log: len(log.acknowledged()) >= BEFORE_KILL
                                  and len(_by_consumer(log)) == 3, 120), consumers.log.errors[-5:]
        described = cluster.call(m.ShareGroupDescribeRequest(group_ids=[group])).groups[0]
        assert len(described.members) == 3 and described.assignor_name == "simple"
        acked_at_kill = len(consumers.log.acknowledged())
        cluster.kill_partition(cluster.partition_for(group))
        assert consumers.wait_for(
            lambda log: len(log.acknowledged()) >= acked_at_kill + AFTER_KILL, 120), (
            consumers.log.errors[-5:])
    finally:
        consumers.close()
    log = consumers.log
    assert log.redelivered_after_ack() == []
    assert _gaps(log) == {}
    with log.lock:
        counts: dict[tuple[int, int], list[int]] = {}
        for _, _, p, o, n in log.deliveries:
            counts.setdefault((p, o), []).append(n)
    # A record comes again only as a new delivery (its lock expired or it was released).
    assert all(ns == sorted(set(ns)) for ns in counts.values())
