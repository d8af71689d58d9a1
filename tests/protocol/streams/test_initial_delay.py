"""The initial rebalance delay of a streams group, as Kafka 4.4 runs it (pure).

A heartbeat to an empty group schedules the delay's timer. While it runs no target is
computed and none written: the group epoch moves on, the assignment epoch stays, each member
is at the assignment epoch (at least 1) with no tasks and is told ASSIGNMENT_DELAYED. When the
timer fires the target is computed at the group epoch then, with no bump, and the members
reconcile toward it. The timer is not a record: a reloaded shard has none, and the next
heartbeat computes the target.
"""

from __future__ import annotations

from protocol.config import GroupConfig
from protocol.errors import Errors
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard
from protocol.streams.records import (
    StreamsGroupMetadataKey,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMetadataKey,
)
from protocol.streams.sessions import StreamsInitialDelay
from protocol.streams.topology import Status
from tests.protocol.streams.driver import StreamsMember, topology
from tests.protocol.streams.test_heartbeat import GID, image, shard, statuses

DELAY_MS = 3_000  # CoordinatorConfig's group.streams.initial.rebalance.delay.ms


def kinds(records: list[Record]) -> list[type]:
    return [type(r.key) for r in records]


def target_written(records: list[Record]) -> bool:
    """Whether ``records`` install a target (a leaving member's tombstones do not)."""
    return any(type(r.key) in (StreamsGroupTargetAssignmentMemberKey,
                               StreamsGroupTargetAssignmentMetadataKey)
               and r.value is not None for r in records)


def epochs(s) -> tuple[int, int]:
    g = s.groups[GID]
    return g.group_epoch, g.assignment_epoch


def test_a_join_during_the_delay_waits_at_the_assignment_epoch_with_no_tasks():
    s = shard()
    a = StreamsMember(s, "a")
    resp = a.join()
    assert resp.error_code == Errors.NONE
    assert resp.member_epoch == 1 and resp.active_tasks == [] and resp.standby_tasks == []
    assert statuses(resp) == {
        Status.ASSIGNMENT_DELAYED:
            "Assignment delayed due to the configured initial rebalance delay."}
    assert epochs(s) == (2, 1)  # a new group is at 1 (Kafka 4.4); the join bumped it
    assert not target_written(s.log)
    assert s.groups[GID].state == "assigning"
    assert StreamsInitialDelay(GID) in s.timers


def test_heartbeats_during_the_delay_stay_put_and_are_told_it_runs():
    s = shard()
    a = StreamsMember(s, "a")
    a.join()
    s.tick(DELAY_MS - 1)
    resp = a.heartbeat()
    assert resp.member_epoch == 1 and resp.active_tasks is None  # nothing changed
    assert Status.ASSIGNMENT_DELAYED in statuses(resp)
    assert epochs(s) == (2, 1) and not target_written(s.log)


def test_a_second_member_during_the_delay_bumps_the_group_but_waits_with_the_first():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    a.join()
    resp = b.join()
    assert resp.member_epoch == 1 and resp.active_tasks == []
    assert Status.ASSIGNMENT_DELAYED in statuses(resp)
    assert epochs(s) == (3, 1)
    resp = a.heartbeat()
    assert resp.member_epoch == 1 and Status.ASSIGNMENT_DELAYED in statuses(resp)
    assert not target_written(s.log)


def test_the_timer_computes_the_target_at_the_group_epoch_and_the_members_reconcile():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    a.join()
    b.join()
    fired = s.tick(DELAY_MS).records
    assert StreamsGroupMetadataKey not in kinds(fired)  # no bump: the target at epoch 3
    assert kinds(fired)[-1] is StreamsGroupTargetAssignmentMetadataKey
    assert fired[-1].value.assignment_epoch == 3
    assert epochs(s) == (3, 3)
    assert StreamsInitialDelay(GID) not in s.timers
    for _ in range(3):
        for mm in (a, b):
            resp = mm.heartbeat()
            assert Status.ASSIGNMENT_DELAYED not in statuses(resp)
    assert (a.epoch, b.epoch) == (3, 3)
    assert sorted(a.active["0"] + b.active["0"]) == [0, 1, 2, 3]
    assert s.groups[GID].state == "stable"


def test_the_delay_starts_when_the_first_member_joins_and_a_later_join_does_not_extend_it():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    a.join()
    s.tick(DELAY_MS - 1)
    b.join()
    assert s.timers.deadline(StreamsInitialDelay(GID)) == DELAY_MS
    s.tick(DELAY_MS)
    assert epochs(s) == (3, 3)


def test_a_member_leaving_during_the_delay_computes_no_target():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    a.join()
    b.join()
    assert b.leave().error_code == Errors.NONE
    assert epochs(s) == (4, 1) and not target_written(s.log)
    s.tick(DELAY_MS)
    a.heartbeat()
    assert a.epoch == 4 and a.active == {"0": [0, 1, 2, 3]}


def test_the_last_member_leaving_during_the_delay_moves_the_assignment_epoch_to_the_group():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    a.join()
    a.leave()  # Kafka's fence of a last member writes the target epoch at the bump
    assert epochs(s) == (3, 3)
    assert s.tick(DELAY_MS).records == []  # the timer of an empty group writes nothing
    resp = b.join()
    assert resp.member_epoch == 3 and Status.ASSIGNMENT_DELAYED in statuses(resp)
    assert epochs(s) == (4, 3)


def test_a_group_emptied_during_the_delay_keeps_its_deadline_for_the_next_join():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    a.join()
    a.leave()
    s.tick(DELAY_MS - 1)
    b.join()  # the delay is still scheduled: Kafka's scheduleIfAbsent keeps it
    assert s.timers.deadline(StreamsInitialDelay(GID)) == DELAY_MS
    s.tick(DELAY_MS)
    b.heartbeat()
    assert b.epoch == 4 and b.active == {"0": [0, 1, 2, 3]}


def test_a_join_to_an_emptied_group_waits_at_its_last_assignment_epoch():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    a.join()
    s.tick(DELAY_MS)
    a.heartbeat()
    assert a.epoch == 2
    a.leave()  # the group computes its (empty) target at the leave's bump
    assert epochs(s) == (3, 3)
    resp = b.join()
    assert resp.member_epoch == 3 and resp.active_tasks == []
    assert Status.ASSIGNMENT_DELAYED in statuses(resp)
    assert epochs(s) == (4, 3)
    s.tick(s.now_ms + DELAY_MS)
    b.heartbeat()
    assert b.epoch == 4 and b.active == {"0": [0, 1, 2, 3]}


def test_new_topics_during_the_delay_bump_the_epoch_and_the_timer_assigns_them():
    s = shard(input=4)
    a = StreamsMember(s, "a")
    a.join()
    grown = s.update_metadata(image(input=6)).records
    assert StreamsGroupMetadataKey in kinds(grown) and not target_written(grown)
    assert epochs(s) == (3, 1)
    assert Status.ASSIGNMENT_DELAYED in statuses(a.heartbeat())
    s.tick(DELAY_MS)
    assert epochs(s) == (3, 3)
    a.heartbeat()
    assert a.epoch == 3 and a.active == {"0": [0, 1, 2, 3, 4, 5]}


def test_a_topology_made_ready_during_the_delay_is_assigned_when_the_timer_fires():
    s = shard(input=2)
    a = StreamsMember(s, "a", topology=topology(stateful=True))
    resp = a.join()
    assert {Status.ASSIGNMENT_DELAYED, Status.MISSING_INTERNAL_TOPICS} <= set(statuses(resp))
    assert s.groups[GID].state == "not_ready"
    made = s.update_metadata(image(input=2, **{"app-store-changelog": 2})).records
    assert StreamsGroupMetadataKey in kinds(made) and not target_written(made)
    assert epochs(s) == (3, 1) and s.groups[GID].state == "assigning"
    assert set(statuses(a.heartbeat())) == {Status.ASSIGNMENT_DELAYED}
    s.tick(DELAY_MS)
    resp = a.heartbeat()
    assert resp.status is None and a.epoch == 3 and a.active == {"0": [0, 1]}


def test_a_reload_during_the_delay_has_no_timer_and_the_next_heartbeat_assigns():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    a.join()
    b.join()
    fresh = GroupCoordinatorShard(config=s.config, metadata=s.image, now_ms=s.now_ms)
    for r in s.log:
        fresh.replay(r)
    assert fresh.groups == s.groups
    assert epochs(fresh) == (3, 1) and StreamsInitialDelay(GID) not in fresh.timers
    a.shard = b.shard = fresh
    resp = a.heartbeat()
    assert Status.ASSIGNMENT_DELAYED not in statuses(resp)
    assert resp.member_epoch == 3 and epochs(fresh) == (3, 3)  # no bump: the target at 3
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    assert sorted(a.active["0"] + b.active["0"]) == [0, 1, 2, 3]


def test_with_no_delay_the_first_member_gets_its_tasks_at_once():
    s = shard()
    s.set_group_config(GID, GroupConfig(streams_initial_rebalance_delay_ms=0))
    a = StreamsMember(s, "a")
    resp = a.join()
    assert resp.member_epoch == 2 and resp.status is None
    assert epochs(s) == (2, 2) and StreamsInitialDelay(GID) not in s.timers
    a.heartbeat()
    assert a.active == {"0": [0, 1, 2, 3]}
