"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups, retention.

One behaviour per test, for simple consumers (offsets without a group object) and KIP-848
consumer groups built with real heartbeats. Classic groups live in ``test_offsets_classic``;
random runs against a model in ``test_offsets_stateful``. The helpers here are shared by both.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol import messages as m
from protocol.codec import decode_record, encode_record
from protocol.config import CoordinatorConfig
from protocol.config import CoordinatorConfig as _Config
from protocol.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from protocol.errors import Errors
from protocol.offsets.rules import EXPIRE_TIMER
from protocol.records import (
    ClassicMemberMetadata,
    GroupRebalanceHistoryKey,
    GroupRebalanceHistoryValue,
    OffsetCommitKey,
    OffsetCommitValue,
    RebalanceCauseEntry,
    Record,
)
from protocol.shard import CoordinatorResult, GroupCoordinatorShard
from tests.protocol.driver import Member, TracedShard, image

RETENTION_MS = CoordinatorConfig().offsets_retention_minutes * 60_000
CHECK_MS = _Config().offsets_retention_check_interval_ms

TP = tuple[str, int]


def new_shard(now_ms: int = 0, config: CoordinatorConfig | None = None) -> GroupCoordinatorShard:
    """Topics ``foo`` (3 partitions, id ``foo-id``) and ``bar`` (2, ``bar-id``)."""
    return GroupCoordinatorShard(config=config, metadata=image(foo=3, bar=2), now_ms=now_ms)


def commit_request(
    offsets: dict[TP, int],
    group: str = "g",
    epoch: int = -1,
    member: str = "",
    instance: str | None = None,
    retention_ms: int = -1,
    metadata: str | None = None,
    leader_epoch: int = -1,
) -> m.OffsetCommitRequest:
    topics: dict[str, list[m.OffsetCommitRequestPartition]] = {}
    for (topic, p), offset in offsets.items():
        topics.setdefault(topic, []).append(
            m.OffsetCommitRequestPartition(p, offset, leader_epoch, metadata)
        )
    return m.OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=epoch,
        member_id=member,
        group_instance_id=instance,
        retention_time_ms=retention_ms,
        topics=[m.OffsetCommitRequestTopic(t, ps) for t, ps in topics.items()],
    )


def commit(shard: GroupCoordinatorShard, offsets: dict[TP, int], **kw) -> CoordinatorResult:
    return shard.handle(commit_request(offsets, **kw))


def partition_errors(resp) -> dict[TP, Errors]:
    return {(t.name, p.partition_index): p.error_code for t in resp.topics for p in t.partitions}


def fetch(
    shard: GroupCoordinatorShard,
    group: str = "g",
    topics: dict[str, list[int]] | None = None,
    member: str | None = None,
    epoch: int = -1,
) -> m.OffsetFetchResponse:
    wanted = (
        None if topics is None else [m.OffsetFetchRequestTopic(t, ps) for t, ps in topics.items()]
    )
    return shard.handle(m.OffsetFetchRequest(group, member, epoch, wanted)).response


def committed(shard: GroupCoordinatorShard, group: str = "g") -> dict[TP, int]:
    """Every committed offset of the group, as an admin's OffsetFetch sees it."""
    resp = fetch(shard, group)
    assert resp.error_code == Errors.NONE
    return {
        (t.name, p.partition_index): p.committed_offset for t in resp.topics for p in t.partitions
    }


def delete_offsets(
    shard: GroupCoordinatorShard, parts: dict[str, list[int]], group: str = "g"
) -> CoordinatorResult:
    req = m.OffsetDeleteRequest(
        group,
        [
            m.OffsetDeleteRequestTopic(t, [m.OffsetDeleteRequestPartition(p) for p in ps])
            for t, ps in parts.items()
        ],
    )
    return shard.handle(req)


def delete_groups(shard: GroupCoordinatorShard, *groups: str) -> CoordinatorResult:
    return shard.handle(m.DeleteGroupsRequest(list(groups)))


def group_errors(resp: m.DeleteGroupsResponse) -> dict[str, Errors]:
    return {r.group_id: r.error_code for r in resp.results}


def consumer_group(shard: GroupCoordinatorShard, *names: str, topics=("foo",)) -> list[Member]:
    """A KIP-848 group ``g`` whose members joined and reconciled (each owns its target)."""
    members = [Member(shard, name, topics=list(topics)) for name in names]
    for mem in members:
        mem.join()
    for _ in range(3):
        for mem in members:
            mem.heartbeat()
    return members


def offset_records(res: CoordinatorResult) -> list[Record]:
    return [r for r in res.records if isinstance(r.key, OffsetCommitKey)]


# ----------------------------------------------------------------- simple consumers


def test_a_simple_commit_to_an_unknown_group_stores_offsets_without_creating_a_group():
    shard = new_shard()
    res = commit(shard, {("foo", 0): 10, ("foo", 1): 11, ("bar", 0): 20})
    assert res.response.error_code == Errors.NONE
    assert set(partition_errors(res.response).values()) == {Errors.NONE}
    assert [r.key for r in res.records] == [
        OffsetCommitKey("g", "foo", 0),
        OffsetCommitKey("g", "foo", 1),
        OffsetCommitKey("g", "bar", 0),
    ]
    assert "g" not in shard.groups
    assert committed(shard) == {("bar", 0): 20, ("foo", 0): 10, ("foo", 1): 11}


def test_a_commit_with_a_generation_to_an_unknown_group_is_group_id_not_found_everywhere():
    """Kafka's answer from OffsetCommit v9; to older versions, ILLEGAL_GENERATION."""
    shard = new_shard()
    res = commit(shard, {("foo", 0): 10, ("bar", 1): 3}, epoch=4, member="m")
    assert res.response.error_code == Errors.GROUP_ID_NOT_FOUND
    assert partition_errors(res.response) == {
        ("foo", 0): Errors.GROUP_ID_NOT_FOUND,
        ("bar", 1): Errors.GROUP_ID_NOT_FOUND,
    }
    old = commit_request({("foo", 0): 10}, epoch=4, member="m")
    old.api_version = 8
    assert shard.handle(old).response.error_code == Errors.ILLEGAL_GENERATION
    assert res.records == [] and shard.offsets.offsets == {}


def test_a_commit_with_a_member_id_but_no_generation_to_an_unknown_group_is_a_simple_commit():
    shard = new_shard()
    res = commit(shard, {("foo", 0): 10}, member="someone")
    assert res.response.error_code == Errors.NONE
    assert committed(shard) == {("foo", 0): 10}


def test_a_group_known_only_by_its_offsets_refuses_commits_with_a_generation():
    shard = new_shard()
    commit(shard, {("foo", 0): 10})
    for kw in ({"epoch": 0}, {"epoch": 3, "member": "m"}, {"epoch": 1, "instance": "i"}):
        res = commit(shard, {("foo", 0): 99}, **kw)
        assert res.response.error_code == Errors.UNKNOWN_MEMBER_ID, kw
        assert res.records == []
    assert committed(shard) == {("foo", 0): 10}


def test_a_committed_value_carries_offset_leader_epoch_metadata_and_commit_time():
    shard = new_shard(now_ms=5_000)
    res = commit(shard, {("foo", 2): 42}, metadata="m1", leader_epoch=7)
    assert res.records == [
        Record(
            OffsetCommitKey("g", "foo", 2),
            OffsetCommitValue(
                offset=42,
                leader_epoch=7,
                metadata="m1",
                commit_timestamp=5_000,
                expire_timestamp=-1,
            ),
        )
    ]


def test_a_commit_with_a_retention_time_expires_at_commit_time_plus_retention():
    shard = new_shard(now_ms=5_000)
    res = commit(shard, {("foo", 0): 1}, retention_ms=60_000)
    assert res.records[0].value.expire_timestamp == 65_000
    res = commit(shard, {("foo", 0): 1}, retention_ms=0)
    assert res.records[0].value.expire_timestamp == -1  # 0 means the broker's retention


def test_commit_metadata_round_trips_through_fetch():
    shard = new_shard()
    commit(shard, {("foo", 0): 5}, metadata="héllo ✓", leader_epoch=3)
    commit(shard, {("foo", 1): 6}, metadata=None)
    resp = fetch(shard, topics={"foo": [0, 1]})
    (topic,) = resp.topics
    assert [
        (p.committed_offset, p.committed_leader_epoch, p.metadata) for p in topic.partitions
    ] == [
        (5, 3, "héllo ✓"),
        (6, -1, ""),
    ]


def test_a_later_commit_replaces_the_offset_even_a_smaller_one():
    shard = new_shard()
    commit(shard, {("foo", 0): 50})
    commit(shard, {("foo", 0): 10})  # an explicit reset
    assert committed(shard) == {("foo", 0): 10}


def test_unknown_topics_and_partitions_are_refused_while_the_valid_partitions_are_written():
    shard = new_shard()
    res = commit(shard, {("foo", 0): 1, ("foo", 3): 1, ("nope", 0): 1, ("bar", -1): 1})
    assert partition_errors(res.response) == {
        ("foo", 0): Errors.NONE,
        ("foo", 3): Errors.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION,
        ("bar", -1): Errors.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert res.response.error_code == Errors.NONE
    assert committed(shard) == {("foo", 0): 1}


def test_metadata_over_the_limit_in_utf8_bytes_is_refused_with_offset_metadata_too_large():
    limit = CoordinatorConfig().offset_metadata_max_bytes
    shard = new_shard()
    assert partition_errors(commit(shard, {("foo", 0): 1}, metadata="x" * limit).response) == {
        ("foo", 0): Errors.NONE
    }
    for too_big in ("x" * (limit + 1), "é" * (limit // 2 + 1)):
        res = commit(shard, {("foo", 1): 1}, metadata=too_big)
        assert partition_errors(res.response) == {("foo", 1): Errors.OFFSET_METADATA_TOO_LARGE}
        assert res.records == []


def test_a_negative_offset_is_refused_with_invalid_commit_offset_size():
    shard = new_shard()
    res = commit(shard, {("foo", 0): -1, ("foo", 1): 0})
    assert partition_errors(res.response) == {
        ("foo", 0): Errors.INVALID_COMMIT_OFFSET_SIZE,
        ("foo", 1): Errors.NONE,
    }
    assert committed(shard) == {("foo", 1): 0}


# ----------------------------------------------------------------- KIP-848 groups


def test_a_member_commits_the_partitions_it_owns_at_its_epoch():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    res = commit(shard, {("foo", 0): 1, ("foo", 2): 2}, epoch=a.epoch, member="A")
    assert res.response.error_code == Errors.NONE
    assert committed(shard) == {("foo", 0): 1, ("foo", 2): 2}


def test_a_commit_at_an_older_epoch_of_a_partition_kept_since_is_accepted():
    """KIP-1251: assignmentEpoch(partition) <= clientEpoch <= memberEpoch."""
    shard = new_shard()
    a = Member(shard, "A")
    a.join()
    got_at = a.epoch
    b = Member(shard, "B")
    b.join()
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    assert a.epoch > got_at and 0 in a.owned["foo-id"]
    res = commit(shard, {("foo", 0): 1}, epoch=got_at, member="A")
    assert partition_errors(res.response) == {("foo", 0): Errors.NONE}
    assert committed(shard) == {("foo", 0): 1}


def test_a_commit_below_a_partitions_assignment_epoch_or_of_one_not_held_is_refused():
    shard = new_shard()
    a = Member(shard, "A")
    a.join()
    b = Member(shard, "B")
    b.join()
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    (given_up,) = b.owned["foo-id"]  # A held it at its first epoch, B got it later
    assert a.epoch >= 2 and b.epoch == a.epoch
    res = commit(shard, {("foo", given_up): 1}, epoch=a.epoch - 1, member="A")
    assert partition_errors(res.response) == {("foo", given_up): Errors.STALE_MEMBER_EPOCH}
    res = commit(shard, {("foo", given_up): 1}, epoch=b.epoch - 1, member="B")
    assert partition_errors(res.response) == {("foo", given_up): Errors.STALE_MEMBER_EPOCH}
    assert res.records == [] and committed(shard) == {}


def test_one_partition_refused_by_its_assignment_epoch_refuses_the_whole_commit_as_kafka():
    shard = new_shard()
    a = Member(shard, "A")
    a.join()
    b = Member(shard, "B")
    b.join()
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    (kept, *_) = a.owned["foo-id"]
    (given_up,) = b.owned["foo-id"]
    res = commit(shard, {("foo", kept): 1, ("foo", given_up): 1, ("foo", 9): 1},
                 epoch=a.epoch - 1, member="A")
    assert partition_errors(res.response) == {("foo", kept): Errors.STALE_MEMBER_EPOCH,
                                              ("foo", given_up): Errors.STALE_MEMBER_EPOCH,
                                              ("foo", 9): Errors.UNKNOWN_TOPIC_OR_PARTITION}
    assert res.records == []


def test_a_commit_with_a_newer_member_epoch_is_refused_with_stale_member_epoch():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    res = commit(shard, {("foo", 0): 1}, epoch=a.epoch + 1, member="A")
    assert res.response.error_code == Errors.STALE_MEMBER_EPOCH


def test_a_commit_from_an_unknown_member_is_refused_with_unknown_member_id():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    res = commit(shard, {("foo", 0): 1}, epoch=a.epoch, member="ghost")
    assert res.response.error_code == Errors.UNKNOWN_MEMBER_ID
    assert res.records == []


def test_an_anonymous_commit_to_a_consumer_group_with_members_is_unknown_member_id():
    shard = new_shard()
    consumer_group(shard, "A")
    res = commit(shard, {("foo", 0): 1})
    assert res.response.error_code == Errors.UNKNOWN_MEMBER_ID


def test_an_anonymous_commit_to_an_empty_consumer_group_is_accepted():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    a.leave()
    assert shard.groups["g"].members == {}
    res = commit(shard, {("foo", 0): 1, ("bar", 1): 2})
    assert res.response.error_code == Errors.NONE
    assert committed(shard) == {("foo", 0): 1, ("bar", 1): 2}


def test_a_consumer_member_must_commit_with_offset_commit_v9_or_later():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    req = commit_request({("foo", 0): 1}, epoch=a.epoch, member="A")
    req.api_version = 8
    res = shard.handle(req)
    assert res.response.error_code == Errors.UNSUPPORTED_VERSION and res.records == []


def test_a_member_at_its_epoch_may_commit_partitions_it_does_not_own_as_kafka():
    """Kafka checks ownership only for a commit at an older epoch (KIP-1251)."""
    shard = new_shard()
    a, b = consumer_group(shard, "A", "B")
    mine = {("foo", p) for p in a.owned["foo-id"]}
    theirs = {("foo", p) for p in b.owned["foo-id"]}
    assert mine and theirs
    res = commit(shard, dict.fromkeys(mine | theirs | {("bar", 0)}, 7), epoch=a.epoch, member="A")
    assert set(partition_errors(res.response).values()) == {Errors.NONE}
    assert set(committed(shard)) == mine | theirs | {("bar", 0)}


def test_a_member_may_commit_partitions_it_is_revoking():
    shard = new_shard()
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    a.heartbeat()  # told to give up a partition: it still holds it until it acknowledges
    pending = shard.groups["g"].members["A"].partitions_pending_revocation
    assert pending == {"foo-id": (2,)}
    res = commit(shard, {("foo", 2): 9}, epoch=a.epoch, member="A")
    assert partition_errors(res.response) == {("foo", 2): Errors.NONE}


def test_a_classic_member_of_a_consumer_group_with_the_wrong_generation_is_illegal_generation():
    shard = new_shard()
    for r in classic_member_in_consumer_group("g", "C", epoch=3):
        shard.replay(r)
    res = commit(shard, {("foo", 0): 1}, epoch=2, member="C")
    assert res.response.error_code == Errors.ILLEGAL_GENERATION
    res = commit(shard, {("foo", 0): 1}, epoch=3, member="C")
    assert res.response.error_code == Errors.NONE


def classic_member_in_consumer_group(gid: str, member_id: str, epoch: int) -> list[Record]:
    """A consumer group with one member that speaks the classic protocol (online migration)."""
    return [
        Record(
            ConsumerGroupMemberMetadataKey(gid, member_id),
            ConsumerGroupMemberMetadataValue(
                subscribed_topic_names=("foo",),
                classic_member_metadata=ClassicMemberMetadata(session_timeout_ms=45_000),
            ),
        ),
        Record(
            ConsumerGroupCurrentMemberAssignmentKey(gid, member_id),
            ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=epoch,
                previous_member_epoch=epoch - 1,
                state=0,
                assigned_partitions={"foo-id": (0, 1, 2)},
            ),
        ),
        Record(ConsumerGroupMetadataKey(gid), ConsumerGroupMetadataValue(epoch)),
        Record(
            ConsumerGroupTargetAssignmentMetadataKey(gid),
            ConsumerGroupTargetAssignmentMetadataValue(epoch),
        ),
    ]


# ----------------------------------------------------------------- OffsetFetch


def test_fetching_all_offsets_lists_every_committed_partition_in_order():
    shard = new_shard()
    commit(shard, {("foo", 2): 3, ("bar", 1): 2, ("foo", 0): 1})
    resp = fetch(shard)
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in resp.topics] == [
        ("bar", [1]),
        ("foo", [0, 2]),
    ]


def test_fetching_uncommitted_partitions_answers_minus_one_without_error():
    shard = new_shard()
    commit(shard, {("foo", 0): 5})
    resp = fetch(shard, topics={"foo": [0, 1], "nope": [0]})
    assert [
        (
            t.name,
            p.partition_index,
            p.committed_offset,
            p.committed_leader_epoch,
            p.metadata,
            p.error_code,
        )
        for t in resp.topics
        for p in t.partitions
    ] == [
        ("foo", 0, 5, -1, "", Errors.NONE),
        ("foo", 1, -1, -1, "", Errors.NONE),
        ("nope", 0, -1, -1, "", Errors.NONE),
    ]


def test_fetching_from_an_unknown_group_answers_nothing_committed_without_error():
    shard = new_shard()
    assert fetch(shard, "nobody") == m.OffsetFetchResponse()
    resp = fetch(shard, "nobody", topics={"foo": [0]})
    assert resp.error_code == Errors.NONE
    assert resp.topics[0].partitions[0].committed_offset == -1


def test_a_member_fetching_with_its_epoch_sees_the_offsets():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    commit(shard, {("foo", 0): 4}, epoch=a.epoch, member="A")
    resp = fetch(shard, topics={"foo": [0]}, member="A", epoch=a.epoch)
    assert resp.error_code == Errors.NONE and resp.topics[0].partitions[0].committed_offset == 4


def test_a_member_fetching_with_a_stale_epoch_is_refused_with_stale_member_epoch():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    resp = fetch(shard, topics={"foo": [0]}, member="A", epoch=a.epoch - 1)
    assert resp.error_code == Errors.STALE_MEMBER_EPOCH and resp.topics == []


def test_an_unknown_member_fetching_from_a_consumer_group_is_refused_with_unknown_member_id():
    shard = new_shard()
    consumer_group(shard, "A")
    assert fetch(shard, member="ghost", epoch=1).error_code == Errors.UNKNOWN_MEMBER_ID


def test_an_admin_fetch_without_member_is_answered_whatever_the_group():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    commit(shard, {("foo", 1): 4}, epoch=a.epoch, member="A")
    assert committed(shard) == {("foo", 1): 4}
    assert fetch(shard, member="", epoch=-1).error_code == Errors.NONE


# ----------------------------------------------------------------- OffsetDelete


def test_deleting_offsets_of_an_unknown_group_is_group_id_not_found():
    shard = new_shard()
    res = delete_offsets(shard, {"foo": [0]})
    assert res.response.error_code == Errors.GROUP_ID_NOT_FOUND and res.records == []


def test_deleting_offsets_writes_tombstones_for_the_committed_ones_only():
    shard = new_shard()
    commit(shard, {("foo", 0): 1, ("foo", 1): 2, ("bar", 0): 3})
    res = delete_offsets(shard, {"foo": [0, 2], "bar": [0]})
    assert partition_errors(res.response) == {
        ("foo", 0): Errors.NONE,
        ("foo", 2): Errors.NONE,
        ("bar", 0): Errors.NONE,
    }
    assert res.records == [
        Record(OffsetCommitKey("g", "foo", 0), None),
        Record(OffsetCommitKey("g", "bar", 0), None),
    ]
    assert committed(shard) == {("foo", 1): 2}


def test_deleting_the_last_offset_of_a_simple_group_forgets_the_group():
    shard = new_shard()
    commit(shard, {("foo", 0): 1})
    delete_offsets(shard, {"foo": [0]})
    assert "g" not in shard.offsets.offsets
    assert delete_offsets(shard, {"foo": [0]}).response.error_code == Errors.GROUP_ID_NOT_FOUND


def test_offsets_of_a_topic_the_members_subscribe_to_cannot_be_deleted():
    shard = new_shard()
    commit(shard, {("foo", 0): 1, ("bar", 0): 2})  # as a simple consumer, before the group
    consumer_group(shard, "A", topics=("foo",))
    res = delete_offsets(shard, {"foo": [0, 1], "bar": [0]})
    assert partition_errors(res.response) == {
        ("foo", 0): Errors.GROUP_SUBSCRIBED_TO_TOPIC,
        ("foo", 1): Errors.GROUP_SUBSCRIBED_TO_TOPIC,
        ("bar", 0): Errors.NONE,
    }
    assert committed(shard) == {("foo", 0): 1}


def test_a_regex_subscription_protects_the_topics_it_matches():
    shard = new_shard()
    commit(shard, {("foo", 0): 1, ("bar", 0): 2})
    join = m.ConsumerGroupHeartbeatRequest(
        "g", "A", 0, rebalance_timeout_ms=60_000, subscribed_topic_regex="b.*", topic_partitions=[]
    )
    assert shard.handle(join).response.error_code == Errors.NONE
    res = delete_offsets(shard, {"foo": [0], "bar": [0]})
    assert partition_errors(res.response) == {
        ("foo", 0): Errors.NONE,
        ("bar", 0): Errors.GROUP_SUBSCRIBED_TO_TOPIC,
    }


def test_offsets_of_an_empty_consumer_group_can_be_deleted():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    commit(shard, {("foo", 0): 1}, epoch=a.epoch, member="A")
    a.leave()
    res = delete_offsets(shard, {"foo": [0]})
    assert partition_errors(res.response) == {("foo", 0): Errors.NONE}
    assert committed(shard) == {}


# ----------------------------------------------------------------- DeleteGroups


def test_deleting_an_unknown_group_is_group_id_not_found():
    shard = new_shard()
    res = delete_groups(shard, "nobody")
    assert group_errors(res.response) == {"nobody": Errors.GROUP_ID_NOT_FOUND}
    assert res.records == []


def test_a_consumer_group_with_members_cannot_be_deleted():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    commit(shard, {("foo", 0): 1}, epoch=a.epoch, member="A")
    res = delete_groups(shard, "g")
    assert group_errors(res.response) == {"g": Errors.NON_EMPTY_GROUP}
    assert res.records == [] and "g" in shard.groups and committed(shard) == {("foo", 0): 1}


def test_deleting_an_empty_consumer_group_deletes_its_offsets_and_records_group_last():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    commit(shard, {("foo", 0): 1, ("foo", 1): 2}, epoch=a.epoch, member="A")
    a.leave()
    res = delete_groups(shard, "g")
    assert group_errors(res.response) == {"g": Errors.NONE}
    assert res.records[:2] == [
        Record(OffsetCommitKey("g", "foo", 0), None),
        Record(OffsetCommitKey("g", "foo", 1), None),
    ]
    assert res.records[-1] == Record(ConsumerGroupMetadataKey("g"), None)
    assert {type(r.key) for r in res.records[2:]} >= {
        ConsumerGroupTargetAssignmentMetadataKey,
        ConsumerGroupPartitionMetadataKey,
    }
    assert all(r.value is None for r in res.records)
    assert "g" not in shard.groups and committed(shard) == {}
    described = shard.handle(m.ConsumerGroupDescribeRequest(["g"])).response
    assert described.groups[0].error_code == Errors.GROUP_ID_NOT_FOUND


def test_a_deleted_consumer_group_stays_deleted_after_a_restart():
    shard = TracedShard(metadata=image(foo=3, bar=2))
    (a,) = consumer_group(shard, "A")
    commit(shard, {("foo", 0): 1}, epoch=a.epoch, member="A")
    a.leave()
    shard.journal.extend(delete_groups(shard, "g").records)
    fresh = replayed(shard.journal, shard)
    assert "g" not in fresh.groups and fresh.offsets.offsets == {}


def test_a_simple_group_is_deletable():
    shard = new_shard()
    commit(shard, {("foo", 0): 1, ("bar", 1): 1})
    res = delete_groups(shard, "g")
    assert group_errors(res.response) == {"g": Errors.NONE}
    assert sorted(r.key.topic for r in res.records) == ["bar", "foo"]
    assert all(isinstance(r.key, OffsetCommitKey) and r.value is None for r in res.records)
    assert committed(shard) == {}


def test_delete_groups_answers_one_result_per_name_in_order():
    shard = new_shard()
    commit(shard, {("foo", 0): 1}, group="simple")
    consumer_group(shard, "A")
    res = delete_groups(shard, "g", "simple", "nobody", "", "simple")
    assert [(r.group_id, r.error_code) for r in res.response.results] == [
        ("g", Errors.NON_EMPTY_GROUP),
        ("simple", Errors.NONE),
        ("nobody", Errors.GROUP_ID_NOT_FOUND),
        ("", Errors.INVALID_GROUP_ID),
        ("simple", Errors.GROUP_ID_NOT_FOUND),  # the first one deleted it
    ]


def test_deleting_a_group_deletes_its_rebalance_history():
    shard = new_shard()
    commit(shard, {("foo", 0): 1})
    history = GroupRebalanceHistoryValue((RebalanceCauseEntry(0, 1, "test"),))
    shard.replay(Record(GroupRebalanceHistoryKey("g"), history))
    res = delete_groups(shard, "g")
    assert Record(GroupRebalanceHistoryKey("g"), None) in res.records
    assert "g" not in shard.history


def test_deleting_a_group_without_rebalance_history_writes_no_history_tombstone():
    shard = new_shard()
    commit(shard, {("foo", 0): 1})
    res = delete_groups(shard, "g")
    assert not any(isinstance(r.key, GroupRebalanceHistoryKey) for r in res.records)


# ----------------------------------------------------------------- retention


def test_a_simple_groups_offset_expires_once_the_retention_has_passed_since_its_commit():
    shard = new_shard(now_ms=1_000)
    commit(shard, {("foo", 0): 1})
    assert offset_records(shard.tick(1_000 + RETENTION_MS - 1)) == []
    assert committed(shard) == {("foo", 0): 1}
    res = shard.tick(1_000 + RETENTION_MS + CHECK_MS)
    assert res.records == [Record(OffsetCommitKey("g", "foo", 0), None)]
    assert committed(shard) == {}


def test_expiry_runs_on_the_check_interval_not_at_the_exact_expiry_time():
    shard = new_shard()
    commit(shard, {("foo", 0): 1}, retention_ms=1)
    assert shard.tick(CHECK_MS - 1).records == []
    assert shard.tick(CHECK_MS).records == [Record(OffsetCommitKey("g", "foo", 0), None)]


def test_an_explicit_retention_time_overrides_the_brokers_retention():
    shard = new_shard()
    commit(shard, {("foo", 0): 1}, retention_ms=3 * CHECK_MS)
    commit(shard, {("foo", 1): 1})
    shard.tick(2 * CHECK_MS)
    assert committed(shard) == {("foo", 0): 1, ("foo", 1): 1}
    shard.tick(3 * CHECK_MS)
    assert committed(shard) == {("foo", 1): 1}


def test_a_recommitted_offset_starts_its_retention_again():
    shard = new_shard()
    commit(shard, {("foo", 0): 1})
    shard.tick(RETENTION_MS - CHECK_MS)
    commit(shard, {("foo", 0): 2})
    shard.tick(RETENTION_MS + CHECK_MS)
    assert committed(shard) == {("foo", 0): 2}


def test_offsets_of_subscribed_topics_never_expire_while_the_group_has_members():
    # A short retention and a long session, so a member outlives many expiry checks.
    config = CoordinatorConfig(
        offsets_retention_minutes=30, group_consumer_session_timeout_ms=2 * CHECK_MS
    )
    shard = new_shard(config=config)
    commit(shard, {("bar", 0): 1})  # bar: nobody subscribes to it
    (a,) = consumer_group(shard, "A", topics=("foo",))
    commit(shard, {("foo", 0): 1}, epoch=a.epoch, member="A")
    for t in range(CHECK_MS, 10 * 30 * 60_000, CHECK_MS):
        shard.tick(t)
        assert a.heartbeat().error_code == Errors.NONE  # stays a member
    assert committed(shard) == {("foo", 0): 1}  # bar's offset expired (Kafka 4), foo's stays


def test_an_emptied_consumer_group_is_deleted_by_the_check_that_expires_its_offsets():
    # Kafka 4.4's cleanupGroupMetadata: offsets expired, then an empty group without offsets
    # goes (Group.shouldExpire).
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    commit(shard, {("foo", 0): 1}, epoch=a.epoch, member="A")
    a.leave()
    res = shard.tick(RETENTION_MS + CHECK_MS)
    assert committed(shard) == {} and "g" not in shard.groups
    assert Record(OffsetCommitKey("g", "foo", 0), None) in res.records
    assert any(r.key == ConsumerGroupMetadataKey("g") and r.value is None for r in res.records)


def test_an_empty_group_that_never_committed_goes_at_the_next_check_a_live_one_stays():
    shard = new_shard()
    (a,) = consumer_group(shard, "A")
    a.leave()
    assert "g" in shard.groups and shard.timers.deadline(EXPIRE_TIMER) is not None
    shard.tick(shard.timers.deadline(EXPIRE_TIMER) - 1)
    assert "g" in shard.groups  # not before the check
    live = new_shard(config=CoordinatorConfig(group_consumer_session_timeout_ms=3 * CHECK_MS))
    (b,) = consumer_group(live, "B")  # a session that outlives the checks
    for t in (CHECK_MS, 2 * CHECK_MS):
        shard.tick(t)
        live.tick(t)
        assert b.heartbeat().error_code == Errors.NONE
    assert "g" not in shard.groups and "g" in live.groups


def test_the_expiry_check_is_armed_by_the_first_offset_and_stops_when_none_remain():
    shard = new_shard()
    assert EXPIRE_TIMER not in shard.timers
    commit(shard, {("foo", 0): 1})
    assert shard.timers.deadline(EXPIRE_TIMER) == CHECK_MS
    shard.tick(CHECK_MS)
    assert shard.timers.deadline(EXPIRE_TIMER) == 2 * CHECK_MS
    delete_offsets(shard, {"foo": [0]})
    shard.tick(2 * CHECK_MS)
    assert EXPIRE_TIMER not in shard.timers


def test_a_restarted_shard_arms_the_expiry_check_and_expires_what_is_due():
    shard = TracedShard(metadata=image(foo=3, bar=2))
    commit(shard, {("foo", 0): 1})
    fresh = replayed(shard.journal, shard, now_ms=RETENTION_MS)
    assert EXPIRE_TIMER in fresh.timers
    res = fresh.tick(fresh.next_deadline_ms())
    assert res.records == [Record(OffsetCommitKey("g", "foo", 0), None)]


# ----------------------------------------------------------------- replay


def replayed(
    records: list[Record], like: GroupCoordinatorShard, now_ms: int | None = None
) -> GroupCoordinatorShard:
    """A fresh shard loaded from ``records`` after they went through the codec."""
    fresh = GroupCoordinatorShard(
        config=like.config, metadata=like.image, now_ms=like.now_ms if now_ms is None else now_ms
    )
    for r in records:
        fresh.replay(decode_record(encode_record(r)))
    return fresh


def test_a_restarted_shard_answers_the_same_fetches():
    shard = TracedShard(metadata=image(foo=3, bar=2))
    commit(shard, {("foo", 0): 1, ("foo", 1): 2}, metadata="meta", leader_epoch=4)
    commit(shard, {("bar", 0): 3}, group="other", retention_ms=10)
    commit(shard, {("foo", 0): 7})
    delete_offsets(shard, {"foo": [1]})
    fresh = replayed(shard.journal, shard)
    assert fresh.offsets.offsets == shard.offsets.offsets
    for gid in ("g", "other", "nobody"):
        assert fetch(fresh, gid) == fetch(shard, gid)
        asked = {"foo": [0, 1, 2], "bar": [0]}
        assert fetch(fresh, gid, topics=asked) == fetch(shard, gid, topics=asked)


def test_replaying_offset_records_twice_changes_nothing():
    shard = TracedShard(metadata=image(foo=3, bar=2))
    commit(shard, {("foo", 0): 1, ("bar", 1): 2})
    delete_offsets(shard, {"foo": [0]})
    fresh = replayed(shard.journal + shard.journal, shard)
    assert fresh.offsets.offsets == shard.offsets.offsets


# ----------------------------------------------------------------- bad input


MALFORMED = [
    m.OffsetCommitRequest("g", "1"),
    m.OffsetCommitRequest("g", topics=[m.OffsetCommitRequestTopic("foo", [None])]),
    m.OffsetCommitRequest(
        "g", topics=[m.OffsetCommitRequestTopic("foo", [m.OffsetCommitRequestPartition(0, 2**63)])]
    ),
    m.OffsetCommitRequest(
        "g",
        topics=[m.OffsetCommitRequestTopic("foo", [m.OffsetCommitRequestPartition(0, 1, 0, 5)])],
    ),
    m.OffsetCommitRequest(None),
    m.OffsetFetchRequest("g", topics=[m.OffsetFetchRequestTopic("foo", ["0"])]),
    m.OffsetFetchRequest("g", member_epoch=True),
    m.OffsetDeleteRequest("g", topics="foo"),
    m.OffsetDeleteRequest(b"g"),
    m.DeleteGroupsRequest(["g", 3]),
    m.DeleteGroupsRequest("g"),
]


@pytest.mark.parametrize("req", MALFORMED, ids=lambda r: type(r).__name__)
def test_a_malformed_request_is_invalid_request_and_changes_nothing(req):
    shard = new_shard()
    commit(shard, {("foo", 0): 1})
    before = {g: dict(o) for g, o in shard.offsets.offsets.items()}
    res = shard.handle(req)
    errors = (
        [r.error_code for r in res.response.results]
        if isinstance(res.response, m.DeleteGroupsResponse)
        else [res.response.error_code]
    )
    assert errors and set(errors) == {Errors.INVALID_REQUEST}
    assert res.records == [] and shard.offsets.offsets == before


@pytest.mark.parametrize(
    "req",
    [
        commit_request({("foo", 0): 1}, group=""),
        m.OffsetFetchRequest(""),
        m.OffsetDeleteRequest("", [m.OffsetDeleteRequestTopic("foo", [])]),
    ],
    ids=lambda r: type(r).__name__,
)
def test_an_empty_group_id_is_invalid_group_id(req):
    shard = new_shard()
    res = shard.handle(req)
    assert res.response.error_code == Errors.INVALID_GROUP_ID and res.records == []


def test_a_commit_with_an_empty_group_id_marks_every_partition():
    res = commit(new_shard(), {("foo", 0): 1, ("bar", 0): 1}, group="")
    assert set(partition_errors(res.response).values()) == {Errors.INVALID_GROUP_ID}


ANY = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.text(max_size=5),
    st.binary(max_size=3),
    st.lists(st.integers(), max_size=2),
)


@given(
    group=st.one_of(st.sampled_from(["g", ""]), ANY),
    epoch=st.one_of(st.integers(-3, 3), ANY),
    member=st.one_of(st.sampled_from(["", "A"]), ANY),
    topic=st.one_of(st.sampled_from(["foo", "bar", "nope"]), ANY),
    partition=st.one_of(st.integers(-1, 4), ANY),
    offset=st.one_of(st.integers(-2, 10), ANY),
    metadata=st.one_of(st.none(), st.text(max_size=3), ANY),
)
def test_any_offset_commit_is_answered_and_a_refusal_writes_nothing(
    group, epoch, member, topic, partition, offset, metadata
):
    shard = new_shard()
    part = m.OffsetCommitRequestPartition(partition, offset, -1, metadata)
    req = m.OffsetCommitRequest(
        group, epoch, member, None, -1, [m.OffsetCommitRequestTopic(topic, [part])]
    )
    res = shard.handle(req)
    resp = res.response
    assert isinstance(resp, m.OffsetCommitResponse)
    assert resp.error_code != Errors.UNKNOWN_SERVER_ERROR
    errors = set(partition_errors(resp).values())
    if resp.error_code != Errors.NONE or errors != {Errors.NONE}:
        assert res.records == []
    else:
        assert len(res.records) == 1
    fresh = GroupCoordinatorShard(metadata=shard.image)
    for r in res.records:
        fresh.replay(r)
    assert fresh.offsets.offsets == shard.offsets.offsets


# ----------------------------------------------------------------- repeated entries


def test_one_commit_naming_a_partition_460_000_times_writes_one_record_and_answers_every_entry():
    shard = new_shard()
    group = "g" * 600
    entries = [m.OffsetCommitRequestPartition(0, offset) for offset in range(460_000)]
    req = m.OffsetCommitRequest(group_id=group, topics=[m.OffsetCommitRequestTopic("foo", entries)])

    res = shard.handle(req)

    assert [r.key for r in res.records] == [OffsetCommitKey(group, "foo", 0)]
    assert res.records[0].value.offset == 459_999, "the last entry wins, as on Kafka's replay"
    answers = res.response.topics[0].partitions
    assert len(answers) == 460_000
    assert {p.error_code for p in answers} == {Errors.NONE}
    assert committed(shard, group) == {("foo", 0): 459_999}


def test_a_refused_repeat_of_a_partition_leaves_the_valid_entry_before_it_written():
    shard = new_shard()
    parts = [m.OffsetCommitRequestPartition(0, 5), m.OffsetCommitRequestPartition(0, -1),
             m.OffsetCommitRequestPartition(1, 7)]
    res = shard.handle(m.OffsetCommitRequest(
        group_id="g", topics=[m.OffsetCommitRequestTopic("foo", parts[:2]),
                              m.OffsetCommitRequestTopic("foo", parts[2:])]))

    assert [p.error_code for t in res.response.topics for p in t.partitions] == [
        Errors.NONE, Errors.INVALID_COMMIT_OFFSET_SIZE, Errors.NONE]
    assert [(r.key.partition, r.value.offset) for r in res.records] == [(0, 5), (1, 7)]


def test_an_offset_delete_naming_a_partition_many_times_writes_one_tombstone():
    shard = new_shard()
    commit(shard, {("foo", 0): 10})

    res = delete_offsets(shard, {"foo": [0] * 10_000})

    assert [(r.key, r.value) for r in res.records] == [(OffsetCommitKey("g", "foo", 0), None)]
    assert len(res.response.topics[0].partitions) == 10_000
    assert committed(shard) == {}
