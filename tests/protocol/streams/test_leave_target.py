"""A streams member's leave or fence bumps the group epoch and computes no target, as Kafka
4.4's ``streamsGroupFenceMember``: the next heartbeat of any member computes it. A member
back before then finds its tasks free and gets them back (a rolling restart moves nothing).
The last member leaving also writes the target epoch at the bump."""

from __future__ import annotations

from protocol.shard import GroupCoordinatorShard
from protocol.streams import messages as sm
from protocol.streams.records import (
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMetadataKey,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMetadataKey,
)
from tests.protocol.streams.driver import StreamsMember
from tests.protocol.streams.test_heartbeat import GID, ready, shard


def three(s) -> list[StreamsMember]:
    members = [StreamsMember(s, x) for x in "abc"]
    ready(s, *members)
    return members


def kinds(records) -> list[tuple[type, bool]]:
    """Each streams record's key type, and whether it is a tombstone (Cohort's own rebalance
    history records left out: Kafka has none)."""
    return [(type(r.key), r.value is None) for r in records
            if type(r.key).__module__ == "protocol.streams.records"]


LEAVE_RECORDS = [
    (StreamsGroupCurrentMemberAssignmentKey, True),
    (StreamsGroupTargetAssignmentMemberKey, True),
    (StreamsGroupMemberMetadataKey, True),
    (StreamsGroupMetadataKey, False),
]


def test_a_leave_bumps_the_epoch_and_keeps_the_target_until_the_next_heartbeat():
    s = shard(input=6)
    a, b, c = three(s)
    group = s.groups[GID]
    epoch, before = group.group_epoch, dict(group.target)
    assert group.assignment_epoch == epoch
    start = len(s.log)
    assert a.leave().member_epoch == -1
    assert kinds(s.log[start:]) == LEAVE_RECORDS
    assert group.group_epoch == epoch + 1
    assert group.assignment_epoch == epoch
    assert group.target == {m: before[m] for m in "bc"}
    b.heartbeat()
    assert group.assignment_epoch == epoch + 1
    assert StreamsGroupTargetAssignmentMetadataKey in {type(r.key) for r in s.log[start:]}
    for _ in range(3):
        b.heartbeat()
        c.heartbeat()
    held = sorted(b.active["0"] + c.active["0"])
    assert held == list(range(6))  # a's tasks went to the others


def test_a_member_back_before_anyone_heartbeats_gets_its_tasks_back():
    s = shard(input=6)
    a, b, c = three(s)
    old = {m.member_id: list(m.active["0"]) for m in (a, b, c)}
    assert all(len(t) == 2 for t in old.values())
    a.leave()
    back = StreamsMember(s, "a2", process_id=a.process_id)
    back.join()
    for _ in range(3):
        for m in (back, b, c):
            m.heartbeat()
    assert back.active == {"0": old["a"]}
    assert b.active == {"0": old["b"]} and c.active == {"0": old["c"]}


def test_a_session_timeout_bumps_the_epoch_and_keeps_the_target_until_the_next_heartbeat():
    s = shard(input=6)
    _a, b, c = three(s)
    group = s.groups[GID]
    epoch = group.group_epoch
    s.tick(s.now_ms + 30_000)
    b.heartbeat()
    c.heartbeat()
    start = len(s.log)
    s.tick(s.now_ms + 15_001)  # a's session (45 s) expires; b's and c's do not
    assert set(group.members) == {"b", "c"}
    assert kinds(s.log[start:]) == LEAVE_RECORDS
    assert (group.group_epoch, group.assignment_epoch) == (epoch + 1, epoch)
    c.heartbeat()
    assert group.assignment_epoch == epoch + 1
    assert sorted(group.target["b"].active_tasks["0"] + group.target["c"].active_tasks["0"]) \
        == list(range(6))


def test_the_last_member_leaving_writes_the_target_epoch_at_the_bump():
    s = shard()
    (a,) = [StreamsMember(s, "a")]
    ready(s, a)
    group = s.groups[GID]
    epoch = group.group_epoch
    start = len(s.log)
    a.leave()
    target_epoch = (StreamsGroupTargetAssignmentMetadataKey, False)
    assert kinds(s.log[start:]) == [*LEAVE_RECORDS, target_epoch]
    assert s.log[-1].value.assignment_epoch == epoch + 1
    assert (group.group_epoch, group.assignment_epoch) == (epoch + 1, epoch + 1)
    assert group.state == "empty"


def test_a_heartbeat_in_the_leaves_turn_computes_the_target_without_the_leaver():
    s = shard(input=6)
    a, b, _c = three(s)
    epoch = s.groups[GID].group_epoch
    s.handle_batch([
        sm.StreamsGroupHeartbeatRequest(GID, "b", b.epoch, b.endpoint_epoch),
        sm.StreamsGroupHeartbeatRequest(GID, "a", -1, a.endpoint_epoch),
    ])
    group = s.groups[GID]
    assert (group.group_epoch, group.assignment_epoch) == (epoch + 1, epoch + 1)
    assert set(group.target) == {"b", "c"}
    assert sorted(t for m in "bc" for t in group.target[m].active_tasks["0"]) == list(range(6))


def test_replaying_the_log_after_a_leave_gives_the_same_state_and_the_same_next_target():
    s = shard(input=6)
    a, b, _c = three(s)
    a.leave()
    fresh = GroupCoordinatorShard(config=s.config, metadata=s.image, now_ms=s.now_ms)
    for r in s.log:
        fresh.replay(r)
    assert fresh.groups == s.groups
    group = fresh.groups[GID]
    assert group.group_epoch == group.assignment_epoch + 1
    request = sm.StreamsGroupHeartbeatRequest(GID, "b", b.epoch, b.endpoint_epoch,
                                              active_tasks=sm.task_ids(b.active),
                                              standby_tasks=[], warmup_tasks=[])
    assert s.handle(request).response == fresh.handle(request).response
    assert fresh.groups == s.groups
    assert group.assignment_epoch == group.group_epoch
