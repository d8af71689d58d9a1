"""Share heartbeats in one turn share one epoch bump per group, as consumer heartbeats do: the
shard admits each, settles the bumps they caused once, then answers each with the target that
settlement computed (the share row's ``heartbeat``). A new share group starts at epoch 1, as
Kafka 4.3's (KAFKA-20268): its first bump is to 2."""

from __future__ import annotations

from protocol import messages as m
from protocol.errors import Errors
from protocol.share.records import ShareGroupMetadataKey, ShareGroupTargetAssignmentMetadataKey
from tests.protocol.share.helpers import GROUP, assigned, join, new_shard, tid


def hb(member: str, epoch: int, topics=None) -> m.ShareGroupHeartbeatRequest:
    return m.ShareGroupHeartbeatRequest(GROUP, member, epoch, subscribed_topic_names=topics)


def bumps(records) -> list[int]:
    return [r.value.epoch for r in records if type(r.key) is ShareGroupMetadataKey and r.value]


def test_members_joining_in_one_turn_cost_one_epoch_bump_and_one_target():
    shard = new_shard()
    result = shard.handle_batch([hb("s1", 0, ["orders"]), hb("s2", 0, ["orders"])])
    assert bumps(result.records) == [2]  # not 2 then 3: one bump for the turn
    targets = [r for r in result.records if type(r.key) is ShareGroupTargetAssignmentMetadataKey]
    assert len(targets) == 1
    (q1, r1), (q2, r2) = result.replies
    assert (q1.member_id, q2.member_id) == ("s1", "s2")
    assert r1.error_code == r2.error_code == 0 and r1.member_epoch == r2.member_epoch == 2
    orders = {(tid("orders"), p) for p in range(3)}
    assert assigned(r1) | assigned(r2) == orders  # both answered with the settled target
    assert shard.groups[GROUP].group_epoch == shard.groups[GROUP].assignment_epoch == 2


def test_a_leave_and_a_join_in_one_turn_cost_one_bump_and_the_joiner_takes_all():
    shard = new_shard()
    join(shard, "s1")
    result = shard.handle_batch([hb("s1", -1), hb("s2", 0, ["orders"])])
    assert bumps(result.records) == [3]
    (_, left), (_, joined) = result.replies
    assert left.member_epoch == -1 and joined.member_epoch == 3
    assert assigned(joined) == {(tid("orders"), p) for p in range(3)}
    assert set(shard.groups[GROUP].members) == {"s2"}


def test_the_same_member_twice_in_one_turn_is_answered_in_order():
    shard = new_shard()
    result = shard.handle_batch([hb("s1", 0, ["orders"]), hb("s1", 2)])
    (_, first), (_, second) = result.replies
    assert first.error_code == second.error_code == 0
    assert first.member_epoch == second.member_epoch == 2
    assert assigned(first) == {(tid("orders"), p) for p in range(3)}
    assert second.assignment is None  # nothing changed since the first reply


def test_a_refused_heartbeat_in_a_batch_leaves_the_others_whole():
    shard = new_shard()
    result = shard.handle_batch([hb("s1", 0, ["orders"]), hb("s2", 5), hb("s3", 0, ["orders"])])
    (_, r1), (_, r2), (_, r3) = result.replies
    assert r2.error_code == Errors.UNKNOWN_MEMBER_ID
    assert r1.error_code == r3.error_code == 0 and r1.member_epoch == r3.member_epoch == 2
    assert bumps(result.records) == [2]
