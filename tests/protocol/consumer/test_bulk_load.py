"""Consumer groups built in bulk from compacted records equal the ones replay builds.

Random compacted logs: per member any of its three records (metadata with or without an
instance id, a shared instance id, classic metadata with its own session timeout; a target;
a current assignment in any state, revoking or not), per group any of its three records, all
in any order. Built in bulk, the groups, their members (in the same order), the owners of
partitions (a map only ever looked up, so in any order), the static members and every timer
deadline equal replaying the records one by one into a fresh shard.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.classic.records import GroupMetadataKey, GroupMetadataValue
from protocol.codec import encode_record, split_records
from protocol.config import CoordinatorConfig
from protocol.consumer.bulk_load import BulkGroups, eligible_groups
from protocol.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.records import ClassicMemberMetadata, Record, TopicMetadataEntry
from protocol.shard import GroupCoordinatorShard

GROUPS = ["a", "b"]
MEMBERS = ["m0", "m1", "m2"]
CONFIG = CoordinatorConfig()
IMAGE = MetadataImage([TopicMetadata("t-id", "t", 12), TopicMetadata("u-id", "u", 3)])


def split(partitions: list[int], cut: int) -> tuple[dict, dict]:
    """A member's disjoint slice of topic t, cut into assigned and pending revocation."""
    assigned, pending = tuple(sorted(partitions[:cut])), tuple(sorted(partitions[cut:]))
    return ({"t": assigned} if assigned else {}), ({"t": pending} if pending else {})


@st.composite
def member_records(draw, gid: str, index: int) -> list[Record]:
    mid = MEMBERS[index]
    out = []
    if draw(st.booleans()):
        classic = draw(st.none() | st.builds(ClassicMemberMetadata, st.integers(1, 90_000)))
        value = ConsumerGroupMemberMetadataValue(
            instance_id=draw(st.sampled_from([None, "i1", "i2"])),
            subscribed_topic_names=draw(st.sampled_from([(), ("t",), ("t", "u")])),
            subscribed_topic_regex=draw(st.sampled_from([None, "t.*"])),
            rebalance_timeout_ms=draw(st.integers(-1, 50_000)),
            classic_member_metadata=classic,
        )
        out.append(Record(ConsumerGroupMemberMetadataKey(gid, mid), value))
    mine = list(range(index * 4, index * 4 + draw(st.integers(0, 4))))
    if draw(st.booleans()):
        target = ConsumerGroupTargetAssignmentMemberValue(split(mine, len(mine))[0])
        out.append(Record(ConsumerGroupTargetAssignmentMemberKey(gid, mid), target))
    if draw(st.booleans()):
        assigned, pending = split(mine, draw(st.integers(0, len(mine))))
        value = ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=draw(st.integers(0, 5)),
            previous_member_epoch=draw(st.integers(-1, 5)),
            state=draw(st.integers(0, 3)),
            assigned_partitions=assigned,
            partitions_pending_revocation=pending,
        )
        out.append(Record(ConsumerGroupCurrentMemberAssignmentKey(gid, mid), value))
    return out


@st.composite
def compacted_logs(draw) -> list[Record]:
    records: list[Record] = []
    for gid in GROUPS:
        if draw(st.booleans()):
            records.append(Record(ConsumerGroupMetadataKey(gid), ConsumerGroupMetadataValue(3)))
        if draw(st.booleans()):
            topics = (TopicMetadataEntry("t", "t", 12),)
            records.append(Record(ConsumerGroupPartitionMetadataKey(gid),
                                  ConsumerGroupPartitionMetadataValue(3, topics)))
        if draw(st.booleans()):
            records.append(Record(ConsumerGroupTargetAssignmentMetadataKey(gid),
                                  ConsumerGroupTargetAssignmentMetadataValue(2)))
        for index in range(draw(st.integers(0, len(MEMBERS)))):
            records += draw(member_records(gid, index))
    return draw(st.permutations(records))


def loaded_in_bulk(records: list[Record]) -> GroupCoordinatorShard:
    shard = GroupCoordinatorShard(CONFIG, now_ms=1_000)
    keys, blobs, _ = split_records([encode_record(r) for r in records])
    ids = eligible_groups(keys, blobs, shard.groups)
    bulk = BulkGroups(
        shard.groups, shard.timers, shard.consumer.sessions.session_timeout_ms, shard.now_ms
    )
    for key, blob, record in zip(keys, blobs, records, strict=True):
        if key[1] in ids:
            bulk.add(key, blob)
        else:
            shard.replay(record)
    bulk.finish()
    return shard


def replayed(records: list[Record]) -> GroupCoordinatorShard:
    shard = GroupCoordinatorShard(CONFIG, now_ms=1_000)
    for record in records:
        shard.replay(record)
    return shard


@settings(max_examples=300, deadline=None)
@given(compacted_logs())
def test_groups_built_in_bulk_equal_the_records_replayed_one_by_one(records):
    bulk, reference = loaded_in_bulk(records), replayed(records)
    assert list(bulk.groups) == list(reference.groups)
    for gid, group in reference.groups.items():
        built = bulk.groups[gid]
        assert built == group
        assert list(built.members) == list(group.members)
        # (the subscriptions' counts are a cache of which topics the group subscribes to)
        assert built.subscribed_topic_names(IMAGE) == group.subscribed_topic_names(IMAGE)
    assert bulk.timers._deadline == reference.timers._deadline


@settings(max_examples=50, deadline=None)
@given(compacted_logs())
def test_a_group_id_that_a_classic_record_also_names_is_replayed_one_by_one(records):
    classic = Record(GroupMetadataKey("a"), GroupMetadataValue("consumer", 1, "range", None, 0))
    records = [classic, *records]
    keys, blobs, _ = split_records([encode_record(r) for r in records])
    assert "a" not in eligible_groups(keys, blobs, [])
    bulk, reference = loaded_in_bulk(records), replayed(records)
    assert bulk.groups == reference.groups
    assert bulk.timers._deadline == reference.timers._deadline


def test_a_key_written_twice_or_a_tombstone_keeps_the_group_out_of_the_bulk_load():
    meta = Record(ConsumerGroupMetadataKey("a"), ConsumerGroupMetadataValue(1))
    again = Record(ConsumerGroupMetadataKey("b"), ConsumerGroupMetadataValue(2))
    tomb = Record(ConsumerGroupTargetAssignmentMemberKey("c", "m"), None)
    keys, blobs, _ = split_records(
        [encode_record(r) for r in (meta, again, again, tomb)]
    )
    assert eligible_groups(keys, blobs, []) == {"a"}
    assert eligible_groups(keys, blobs, ["a"]) == set()
