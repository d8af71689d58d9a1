"""Committed offsets of classic groups: Kafka's ``ClassicGroup.validateOffsetCommit``,
OffsetDelete and DeleteGroups on classic groups, and their retention rules.

Groups are built the way a coordinator loads them: by replaying their ``GroupMetadataValue``.
"""

from __future__ import annotations

from protocol.classic import group as cg
from protocol.classic.consumer_protocol import Subscription, encode_subscription
from protocol.classic.records import GroupMemberMetadata, GroupMetadataKey, GroupMetadataValue
from protocol.errors import Errors
from protocol.records import (
    GroupRebalanceHistoryKey,
    GroupRebalanceHistoryValue,
    OffsetCommitKey,
    RebalanceCauseEntry,
    Record,
)
from tests.protocol.driver import TracedShard, image
from tests.protocol.offsets.test_offsets import (
    CHECK_MS,
    RETENTION_MS,
    commit,
    committed,
    delete_groups,
    delete_offsets,
    fetch,
    group_errors,
    new_shard,
    partition_errors,
    replayed,
)

GENERATION = 3
# Long enough that no member's session ends during a retention test.
SESSION_MS = 10**12


def subscription(*topics: str) -> bytes:
    return encode_subscription(Subscription(list(topics)))


def classic(
    shard,
    gid: str = "g",
    state: str = cg.STABLE,
    members: dict[str, bytes] | None = None,
    instances: dict[str, str] | None = None,
    protocol_type: str = "consumer",
    state_timestamp_ms: int = 0,
) -> cg.ClassicGroup:
    """Load a classic group at generation 3: ``members`` maps member id -> subscription bytes,
    ``instances`` member id -> instance id. Default: m1 and m2 subscribed to foo."""
    if members is None:
        members = {"m1": subscription("foo"), "m2": subscription("foo")}
    instances = instances or {}
    value = GroupMetadataValue(
        protocol_type=protocol_type,
        generation=GENERATION,
        protocol_name="range" if members else None,
        leader=next(iter(members), None),
        current_state_timestamp=state_timestamp_ms,
        members=tuple(
            GroupMemberMetadata(
                member_id=mid,
                group_instance_id=instances.get(mid),
                client_id="client",
                client_host="host",
                rebalance_timeout_ms=60_000,
                session_timeout_ms=SESSION_MS,
                subscription=sub,
                assignment=b"",
            )
            for mid, sub in members.items()
        ),
        state=state,
    )
    record = Record(GroupMetadataKey(gid), value)
    shard.replay(record)
    if isinstance(shard, TracedShard):
        shard.journal.append(record)
    group = shard.groups[gid]
    assert isinstance(group, cg.ClassicGroup) and group.state == state
    return group


def refusal(res) -> Errors:
    assert res.records == []
    assert set(partition_errors(res.response).values()) == {res.response.error_code}
    return res.response.error_code


# ----------------------------------------------------------------- OffsetCommit


def test_a_member_commits_at_the_groups_generation():
    shard = new_shard()
    classic(shard)
    res = commit(shard, {("foo", 0): 5}, epoch=GENERATION, member="m1")
    assert res.response.error_code == Errors.NONE
    assert committed(shard) == {("foo", 0): 5}


def test_a_commit_at_another_generation_is_illegal_generation():
    shard = new_shard()
    classic(shard)
    res = commit(shard, {("foo", 0): 5}, epoch=GENERATION - 1, member="m1")
    assert refusal(res) == Errors.ILLEGAL_GENERATION


def test_a_commit_from_an_unknown_member_is_unknown_member_id():
    shard = new_shard()
    classic(shard)
    assert refusal(commit(shard, {("foo", 0): 5}, epoch=GENERATION, member="x")) == (
        Errors.UNKNOWN_MEMBER_ID
    )


def test_a_commit_with_another_members_instance_id_is_fenced_instance_id():
    shard = new_shard()
    classic(shard, instances={"m1": "i1"})
    res = commit(shard, {("foo", 0): 5}, epoch=GENERATION, member="m2", instance="i1")
    assert refusal(res) == Errors.FENCED_INSTANCE_ID
    res = commit(shard, {("foo", 0): 5}, epoch=GENERATION, member="m1", instance="i1")
    assert res.response.error_code == Errors.NONE


def test_a_commit_with_an_unknown_instance_id_is_unknown_member_id():
    shard = new_shard()
    classic(shard, instances={"m1": "i1"})
    res = commit(shard, {("foo", 0): 5}, epoch=GENERATION, member="m1", instance="nope")
    assert refusal(res) == Errors.UNKNOWN_MEMBER_ID


def test_an_anonymous_commit_to_a_non_empty_group_is_unknown_member_id():
    shard = new_shard()
    classic(shard)
    assert refusal(commit(shard, {("foo", 0): 5})) == Errors.UNKNOWN_MEMBER_ID


def test_an_anonymous_commit_to_an_empty_group_is_accepted():
    shard = new_shard()
    classic(shard, state=cg.EMPTY, members={})
    assert commit(shard, {("foo", 0): 5}).response.error_code == Errors.NONE
    assert committed(shard) == {("foo", 0): 5}


def test_a_commit_to_a_dead_group_is_coordinator_not_available():
    shard = new_shard()
    classic(shard, state=cg.DEAD, members={})
    assert refusal(commit(shard, {("foo", 0): 5})) == Errors.COORDINATOR_NOT_AVAILABLE


def test_a_commit_while_the_group_completes_a_rebalance_is_rebalance_in_progress():
    shard = new_shard()
    classic(shard, state=cg.COMPLETING_REBALANCE)
    res = commit(shard, {("foo", 0): 5}, epoch=GENERATION, member="m1")
    assert refusal(res) == Errors.REBALANCE_IN_PROGRESS


def test_a_commit_of_the_current_generation_while_preparing_a_rebalance_is_accepted():
    shard = new_shard()
    group = classic(shard)
    group.state = cg.PREPARING_REBALANCE  # a rebalance began (never persisted in this state)
    res = commit(shard, {("foo", 0): 5}, epoch=GENERATION, member="m2")
    assert res.response.error_code == Errors.NONE


# ----------------------------------------------------------------- OffsetFetch


def test_fetching_from_a_dead_group_answers_nothing_committed():
    shard = new_shard()
    commit(shard, {("foo", 0): 5})
    classic(shard, state=cg.DEAD, members={})
    assert fetch(shard).topics == []
    resp = fetch(shard, topics={"foo": [0]})
    assert resp.error_code == Errors.NONE and resp.topics[0].partitions[0].committed_offset == -1


# ----------------------------------------------------------------- OffsetDelete


def test_offsets_of_a_non_empty_group_outside_the_consumer_protocol_cannot_be_deleted():
    shard = new_shard()
    classic(shard, state=cg.EMPTY, members={})
    commit(shard, {("foo", 0): 5})
    classic(shard, protocol_type="connect", members={"w1": b"opaque"})
    res = delete_offsets(shard, {"foo": [0]})
    assert res.response.error_code == Errors.NON_EMPTY_GROUP and res.records == []


def test_offsets_of_topics_the_classic_consumers_subscribe_to_cannot_be_deleted():
    shard = new_shard()
    classic(shard)
    commit(shard, {("foo", 0): 5}, epoch=GENERATION, member="m1")
    classic(shard, state=cg.EMPTY, members={})
    commit(shard, {("bar", 0): 6})
    classic(shard, members={"m1": subscription("foo"), "m2": b"\xc1garbage"})
    res = delete_offsets(shard, {"foo": [0], "bar": [0]})
    assert partition_errors(res.response) == {
        ("foo", 0): Errors.GROUP_SUBSCRIBED_TO_TOPIC,
        ("bar", 0): Errors.NONE,  # m2's subscription does not decode: it protects nothing
    }
    assert committed(shard) == {("foo", 0): 5}


def test_offsets_of_an_empty_classic_group_can_be_deleted():
    shard = new_shard()
    classic(shard, state=cg.EMPTY, members={})
    commit(shard, {("foo", 0): 5})
    res = delete_offsets(shard, {"foo": [0]})
    assert partition_errors(res.response) == {("foo", 0): Errors.NONE}
    assert committed(shard) == {}


def test_deleting_offsets_of_a_dead_group_is_group_id_not_found():
    shard = new_shard()
    classic(shard, state=cg.DEAD, members={})
    res = delete_offsets(shard, {"foo": [0]})
    assert res.response.error_code == Errors.GROUP_ID_NOT_FOUND


# ----------------------------------------------------------------- DeleteGroups


def test_a_classic_group_that_is_not_empty_cannot_be_deleted():
    shard = new_shard()
    for state in (cg.STABLE, cg.COMPLETING_REBALANCE):
        classic(shard, state=state)
        res = delete_groups(shard, "g")
        assert group_errors(res.response) == {"g": Errors.NON_EMPTY_GROUP} and res.records == []


def test_a_dead_classic_group_is_group_id_not_found():
    shard = new_shard()
    classic(shard, state=cg.DEAD, members={})
    assert group_errors(delete_groups(shard, "g").response) == {"g": Errors.GROUP_ID_NOT_FOUND}


def test_deleting_an_empty_classic_group_deletes_offsets_history_and_the_group():
    shard = TracedShard(metadata=image(foo=3, bar=2))
    classic(shard, state=cg.EMPTY, members={})
    history = Record(
        GroupRebalanceHistoryKey("g"),
        GroupRebalanceHistoryValue((RebalanceCauseEntry(0, 1, "member joined"),)),
    )
    shard.load([history])
    commit(shard, {("foo", 0): 5, ("bar", 1): 6})
    res = delete_groups(shard, "g")
    shard.journal.extend(res.records)
    assert group_errors(res.response) == {"g": Errors.NONE}
    assert res.records == [
        Record(OffsetCommitKey("g", "bar", 1), None),
        Record(OffsetCommitKey("g", "foo", 0), None),
        Record(GroupRebalanceHistoryKey("g"), None),
        Record(GroupMetadataKey("g"), None),
    ]
    assert "g" not in shard.groups and "g" not in shard.history
    fresh = replayed(shard.journal, shard)
    assert "g" not in fresh.groups and fresh.offsets.offsets == {}
    assert "g" not in fresh.history


# ----------------------------------------------------------------- retention


def test_an_empty_classic_groups_offsets_expire_retention_after_it_became_empty():
    shard = new_shard()
    commit(shard, {("foo", 0): 5})  # at 0, as a simple consumer
    became_empty = 5 * CHECK_MS
    classic(shard, state=cg.EMPTY, members={}, state_timestamp_ms=became_empty)
    shard.tick(RETENTION_MS + CHECK_MS)
    assert committed(shard) == {("foo", 0): 5}
    shard.tick(became_empty + RETENTION_MS + CHECK_MS)
    assert committed(shard) == {}


def test_an_offset_committed_after_the_group_became_empty_expires_retention_after_its_commit():
    shard = new_shard()
    classic(shard, state=cg.EMPTY, members={}, state_timestamp_ms=0)
    shard.tick(3 * CHECK_MS)
    commit(shard, {("foo", 0): 5})
    shard.tick(RETENTION_MS + CHECK_MS)
    assert committed(shard) == {("foo", 0): 5}
    shard.tick(3 * CHECK_MS + RETENTION_MS + CHECK_MS)
    assert committed(shard) == {}


def test_a_stable_classic_consumer_group_keeps_subscribed_offsets_and_expires_the_rest():
    shard = new_shard()
    classic(shard, state=cg.EMPTY, members={})
    commit(shard, {("foo", 0): 5, ("bar", 0): 6})
    classic(shard)  # m1, m2 subscribe to foo
    shard.tick(2 * RETENTION_MS)
    assert committed(shard) == {("foo", 0): 5}


def test_a_stable_group_whose_subscriptions_cannot_be_read_expires_nothing():
    shard = new_shard()
    classic(shard, state=cg.EMPTY, members={})
    commit(shard, {("foo", 0): 5, ("bar", 0): 6})
    classic(shard, members={"m1": subscription("foo"), "m2": b"not msgpack"})
    shard.tick(2 * RETENTION_MS)
    assert committed(shard) == {("foo", 0): 5, ("bar", 0): 6}


def test_a_non_empty_group_outside_the_consumer_protocol_expires_nothing():
    shard = new_shard()
    classic(shard, state=cg.EMPTY, members={})
    commit(shard, {("foo", 0): 5})
    classic(shard, protocol_type="connect", members={"w1": b"opaque"})
    shard.tick(2 * RETENTION_MS)
    assert committed(shard) == {("foo", 0): 5}


def test_a_group_completing_a_rebalance_expires_nothing():
    shard = new_shard()
    classic(shard, state=cg.EMPTY, members={})
    commit(shard, {("bar", 0): 6})
    classic(shard, state=cg.COMPLETING_REBALANCE)
    shard.tick(2 * RETENTION_MS)
    assert committed(shard) == {("bar", 0): 6}
