"""The share-offset admin APIs and the simple share assignor."""

from __future__ import annotations

from assignors.share import assign_simple
from protocol import messages as m
from protocol.errors import Errors
from protocol.share.messages import ACK_ACCEPT, AcknowledgementBatch
from protocol.share.records import SharePartitionStateKey
from tests.protocol.share.helpers import (
    GROUP,
    acknowledge,
    acquired,
    fetch,
    heartbeat,
    join,
    new_shard,
    tid,
)


def read_and_leave(shard, end: int = 10) -> None:
    join(shard, "a")
    fetch(shard, "a", ("orders", 0), end=end, max_records=4)
    acknowledge(shard, "a", "orders", 0, AcknowledgementBatch(0, 2, [ACK_ACCEPT]))
    heartbeat(shard, "a", -1)


def test_describe_offsets_shows_start_offset_and_lag():
    shard = new_shard()
    read_and_leave(shard)
    resp = shard.handle(m.DescribeShareGroupOffsetsRequest(GROUP, log_end_offset=10)).response
    [topic] = resp.topics
    assert (topic.topic_name, topic.topic_id) == ("orders", tid("orders"))
    [p] = topic.partitions
    assert (p.partition, p.start_offset, p.lag, p.error_code) == (0, 3, 7, 0)


def test_describe_offsets_counts_each_partitions_lag_to_its_own_end_in_front_of_an_upstream():
    shard = new_shard()
    read_and_leave(shard, end=40)
    ends = [m.ShareOffsetsEnd("orders", 0, 25)]
    resp = shard.handle(m.DescribeShareGroupOffsetsRequest(
        GROUP, log_end_offset=10, log_end_offsets=ends)).response
    assert [(p.start_offset, p.lag) for p in resp.topics[0].partitions] == [(3, 22)]
    unknown = shard.handle(m.DescribeShareGroupOffsetsRequest(
        GROUP, log_end_offsets=[m.ShareOffsetsEnd("orders", 1, 25)])).response
    assert [p.lag for p in unknown.topics[0].partitions] == [-1]  # its end not known


def test_describe_offsets_of_named_partitions_marks_unknown_and_unread_ones():
    shard = new_shard()
    read_and_leave(shard)
    req = m.DescribeShareGroupOffsetsRequest(GROUP, [m.ShareOffsetsTopic("orders", [0, 1, 5]),
                                                     m.ShareOffsetsTopic("nope", [0])])
    topics = shard.handle(req).response.topics
    assert [(p.start_offset, p.error_code) for p in topics[0].partitions] == [
        (3, 0), (-1, 0), (-1, Errors.UNKNOWN_TOPIC_OR_PARTITION)]
    assert topics[1].partitions[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_offsets_of_a_group_that_is_not_a_share_group_are_group_id_not_found():
    shard = new_shard()
    for req in (m.DescribeShareGroupOffsetsRequest("none"),
                m.AlterShareGroupOffsetsRequest("none"),
                m.DeleteShareGroupOffsetsRequest("none", ["orders"])):
        result = shard.handle(req)
        assert result.response.error_code == Errors.GROUP_ID_NOT_FOUND and result.records == []


def test_alter_resets_the_start_offset_only_while_the_group_is_empty():
    shard = new_shard()
    join(shard, "a")
    alter = m.AlterShareGroupOffsetsRequest(GROUP, [m.AlterShareGroupOffsetsTopic(
        "orders", [m.AlterShareGroupOffsetsPartition(0, 42),
                   m.AlterShareGroupOffsetsPartition(9, 1),
                   m.AlterShareGroupOffsetsPartition(1, -3)])])
    result = shard.handle(alter)
    assert result.response.error_code == Errors.NON_EMPTY_GROUP and result.records == []
    heartbeat(shard, "a", -1)
    resp = shard.handle(alter).response
    assert [p.error_code for p in resp.topics[0].partitions] == [
        0, Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.INVALID_REQUEST]
    assert shard.groups[GROUP].partitions[(tid("orders"), 0)].start_offset == 42
    join(shard, "b")
    assert acquired(fetch(shard, "b", ("orders", 0), end=45)) == [(42, 44, 1)]


def test_delete_drops_a_topics_share_partitions_while_the_group_is_empty():
    shard = new_shard()
    read_and_leave(shard)
    result = shard.handle(m.DeleteShareGroupOffsetsRequest(GROUP, ["orders", "nope"]))
    assert [t.error_code for t in result.response.topics] == [
        0, Errors.UNKNOWN_TOPIC_OR_PARTITION]
    assert [r.key for r in result.records] == [SharePartitionStateKey(GROUP, tid("orders"), 0)]
    assert shard.groups[GROUP].partitions == {}


def test_the_simple_assignor_gives_every_partition_to_at_least_one_member():
    subs = {m_: frozenset({"t"}) for m_ in ("a", "b")}
    assert assign_simple(subs, {"t": 5}) == {"a": {"t": (0, 2, 4)}, "b": {"t": (1, 3)}}
    many = {f"m{i}": frozenset({"t"}) for i in range(5)}
    out = assign_simple(many, {"t": 2})
    assert {p for a in out.values() for p in a["t"]} == {0, 1}
    assert sorted(len(a["t"]) for a in out.values()) == [1] * 5
    assert assign_simple({"a": frozenset({"gone"})}, {}) == {"a": {}}
    assert assign_simple(many, {"t": 2}) == out  # deterministic
