"""A Connect group seen from the other requests: ConnectGroupDescribe, ListGroups,
DescribeGroups, DeleteGroups, offsets, and compaction of its records."""

from __future__ import annotations

from actors.runtime.compaction import CompactedState
from protocol import messages as m
from protocol.codec import decode_record, encode_record
from protocol.connect import units as u
from protocol.connect.records import ConnectGroupMetadataKey
from protocol.errors import Errors
from protocol.records import GroupRebalanceHistoryKey, Record
from protocol.shard import GroupCoordinatorShard
from tests.protocol.connect.workers import GROUP, Worker, connectors, settle


def stable_group() -> tuple[GroupCoordinatorShard, list[Worker]]:
    shard = GroupCoordinatorShard(metadata=connectors(a=3, b=1))
    ws = [Worker(shard, "w1", instance_id="i1"), Worker(shard, "w2")]
    for w in ws:
        w.join()
    settle(ws)
    return shard, ws


def test_describe_shows_each_workers_connectors_and_tasks_and_the_groups_connectors():
    shard, ws = stable_group()
    resp = shard.handle(m.ConnectGroupDescribeRequest([GROUP, "nope"])).response
    group, missing = resp.groups
    assert (group.error_code, group.group_state, group.assignor_name) == (
        Errors.NONE, "stable", "incremental-cooperative"
    )
    assert group.group_epoch == group.assignment_epoch == shard.groups[GROUP].group_epoch
    assert group.connectors == [m.ConnectorTasks("a", 3), m.ConnectorTasks("b", 1)]
    by_id = {mem.member_id: mem for mem in group.members}
    assert by_id["w1"].instance_id == "i1"
    for w in ws:
        described = by_id[w.member_id]
        assert u.from_wire(described.assignment) == w.runs
        assert u.from_wire(described.target_assignment) == w.runs
        assert described.member_state == "stable" and described.member_epoch == w.epoch
    assert missing.error_code == Errors.GROUP_ID_NOT_FOUND and missing.group_id == "nope"


def test_describe_of_a_consumer_group_id_says_it_is_not_a_connect_group():
    shard, _ = stable_group()
    shard.handle(
        m.ConsumerGroupHeartbeatRequest(
            "cons", "c", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
            topic_partitions=[],
        )
    )
    (entry,) = shard.handle(m.ConnectGroupDescribeRequest(["cons"])).response.groups
    assert entry.error_code == Errors.GROUP_ID_NOT_FOUND
    assert "not a connect group" in entry.error_message
    (entry,) = shard.handle(m.ConsumerGroupDescribeRequest([GROUP])).response.groups
    assert entry.error_code == Errors.GROUP_ID_NOT_FOUND


def test_list_groups_shows_the_connect_type_and_filters_by_it():
    shard, _ = stable_group()
    (listed,) = shard.handle(m.ListGroupsRequest()).response.groups
    assert (listed.group_type, listed.protocol_type, listed.group_state) == (
        "connect", "connect", "stable"
    )
    assert shard.handle(m.ListGroupsRequest(types_filter=["connect"])).response.groups
    assert not shard.handle(m.ListGroupsRequest(types_filter=["consumer"])).response.groups


def test_describe_groups_shows_a_connect_group_in_the_classic_shape():
    shard, _ = stable_group()
    (g,) = shard.handle(m.DescribeGroupsRequest([GROUP])).response.groups
    assert (g.error_code, g.protocol_type, g.protocol_data, g.group_state) == (
        Errors.NONE, "connect", "incremental-cooperative", "stable"
    )
    assert [mem.member_id for mem in g.members] == ["w1", "w2"]
    assert g.rebalance_history[-1].reason == "new worker joined"


def test_a_non_empty_connect_group_cannot_be_deleted_an_empty_one_can():
    shard, ws = stable_group()
    (r,) = shard.handle(m.DeleteGroupsRequest([GROUP])).response.results
    assert r.error_code == Errors.NON_EMPTY_GROUP
    for w in ws:
        w.leave()
    result = shard.handle(m.DeleteGroupsRequest([GROUP]))
    assert result.response.results[0].error_code == Errors.NONE
    assert GROUP not in shard.groups and GROUP not in shard.history
    assert shard.next_deadline_ms() is None  # no timer of the group is left behind


def test_offsets_cannot_be_committed_to_a_connect_group_and_fetch_finds_none():
    shard, _ = stable_group()
    commit = m.OffsetCommitRequest(
        GROUP,
        topics=[m.OffsetCommitRequestTopic("t", [m.OffsetCommitRequestPartition(0, 5)])],
    )
    result = shard.handle(commit)
    assert result.response.error_code == Errors.GROUP_ID_NOT_FOUND and result.records == []
    fetched = shard.handle(m.OffsetFetchRequest(GROUP, topics=None)).response
    assert fetched.error_code == Errors.NONE and fetched.topics == []


def test_a_group_tombstone_takes_every_connect_record_with_it_in_compaction():
    log = []
    fresh = GroupCoordinatorShard(metadata=connectors(a=3, b=1))
    for w in (Worker(fresh, "x"), Worker(fresh, "y")):
        log += fresh.handle(w.join_request()).records
    compacted = CompactedState()
    for rec in log:
        compacted.add(rec, encode_record(rec))
    # Only the group's metadata tombstone: it deletes the whole group, as for consumers.
    tomb = Record(ConnectGroupMetadataKey(GROUP), None)
    compacted.add(tomb, encode_record(tomb))
    left = [decode_record(b).key for b in compacted.records()]
    assert left and all(isinstance(k, GroupRebalanceHistoryKey) for k in left)
