"""confluent-kafka's ``ShareConsumer`` (KIP-932, explicit acknowledgement, ``commit_sync``)
through the gateway: three consumers share a 3-partition topic, the group's partition actor is
killed mid-run, and nothing whose acknowledgement was confirmed is delivered again."""

from __future__ import annotations

import pytest
from kio.schema.errors import ErrorCode as E

from actors.tools.share_scenario import ShareConsumers, ShareLog
from protocol import messages as m
from tests.gateway import kip932
from tests.gateway.conftest import unique
from tests.gateway.wire_client import WireClient

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

    # On the wire, after the run: the share-partitions' start offsets moved past what was
    # acknowledged (DescribeShareGroupOffsets), and a fetch in no session is refused.
    first_acked = {p: min(o for q, o in log.acknowledged() if q == p) for p in range(3)}
    client = WireClient(gateway)
    try:
        req = kip932.DescribeShareGroupOffsetsRequest
        reply = client.call(req(groups=[req.DescribeShareGroupOffsetsRequestGroup(
            group_id=group, topics=None)]), kip932.DescribeShareGroupOffsetsResponse, 1)
        (described,) = reply.groups
        assert described.error_code == 0
        (topic_entry,) = described.topics
        assert topic_entry.topic_name == topic
        starts = {p.partition_index: p.start_offset for p in topic_entry.partitions}
        assert sorted(starts) == [0, 1, 2]
        assert all(starts[p] > first_acked[p] for p in starts)
        fetch = client.call(kip932.ShareFetchRequest(
            group_id=group, member_id="nobody", share_session_epoch=5, max_wait_ms=0,
            min_bytes=0, max_records=10, batch_size=10, topics=[], forgotten_topics_data=[]),
            kip932.ShareFetchResponse, 1)
        assert fetch.error_code == E.share_session_not_found.value
    finally:
        client.close()
