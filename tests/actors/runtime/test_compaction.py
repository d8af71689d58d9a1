"""Compaction in bulk: a log batch added at once leaves exactly what adding its records one
by one leaves (the same keys and bytes; group records in the same order; offset commits,
whose order means nothing, in any), tombstones and the deletion of a whole consumer group
included."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from actors.runtime.compaction import CompactedState
from protocol.codec import encode_record, peek_key
from protocol.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
)
from protocol.records import OffsetCommitKey, OffsetCommitValue, Record
from tests.actors.runtime.reference import add_encoded

GROUPS = st.sampled_from(["g", "h"])
MEMBERS = st.sampled_from(["a", "b"])


def _record(kind: str, group: str, member: str, n: int, tombstone: bool) -> Record:
    key, value = {
        "offset": (OffsetCommitKey(group, "t", n % 3), OffsetCommitValue(n)),
        "group": (ConsumerGroupMetadataKey(group), ConsumerGroupMetadataValue(n)),
        "subscription": (
            ConsumerGroupPartitionMetadataKey(group), ConsumerGroupPartitionMetadataValue(n)
        ),
        "member": (
            ConsumerGroupMemberMetadataKey(group, member),
            ConsumerGroupMemberMetadataValue(client_id=str(n)),
        ),
        "assignment": (
            ConsumerGroupCurrentMemberAssignmentKey(group, member),
            ConsumerGroupCurrentMemberAssignmentValue(n, n - 1, 0),
        ),
    }[kind]
    return Record(key, None if tombstone else value)


records = st.builds(
    _record,
    st.sampled_from(["offset", "group", "subscription", "member", "assignment"]),
    GROUPS,
    MEMBERS,
    st.integers(0, 5),
    st.booleans(),
)


def in_order(state: CompactedState) -> tuple[set[bytes], list[bytes]]:
    """(the offset commits, the group records in order) that ``state`` holds."""
    records = state.records()
    offsets = [r for r in records if peek_key(r)[0][0] == OffsetCommitKey.TYPE]
    assert records[: len(offsets)] == offsets, "offset commits come first"
    assert len(set(offsets)) == len(offsets)
    return set(offsets), records[len(offsets) :]


def one_by_one(batches: list[list[bytes]]) -> CompactedState:
    state = CompactedState()
    for batch in batches:
        for data in batch:
            add_encoded(state, data)
    return state


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(records, max_size=12), max_size=8), st.data())
def test_a_batch_compacts_as_its_records_do_one_by_one(batches, data):
    encoded = [[encode_record(r) for r in batch] for batch in batches]
    bulk = CompactedState()
    for batch in encoded:
        if data.draw(st.booleans(), label="bulk"):
            bulk.add_batch(batch)
        else:
            for d in batch:
                add_encoded(bulk, d)
    expected = one_by_one(encoded)
    assert in_order(bulk) == in_order(expected)
    assert bulk.size_bytes == expected.size_bytes == sum(map(len, expected.records()))


def test_a_group_deleted_mid_batch_takes_only_what_came_before_it():
    before = _record("member", "g", "a", 1, False)
    gone = _record("group", "g", "a", 0, True)
    after = _record("assignment", "g", "b", 2, False)
    offset = _record("offset", "g", "a", 3, False)
    state = CompactedState()
    state.add_batch([encode_record(r) for r in (before, offset, gone, after)])
    assert state.records() == [encode_record(offset), encode_record(after)]
