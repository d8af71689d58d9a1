"""Revoke before assign over connectors and tasks (seed 004), and when a reply carries the
Assignment."""

from __future__ import annotations

from protocol import messages as m
from protocol.connect import units as u
from protocol.connect.member import ConnectWorkerMember, WorkerState
from protocol.errors import Errors
from protocol.modern.reconciler import reconcile
from protocol.shard import GroupCoordinatorShard
from tests.protocol.connect.workers import GROUP, Worker, connectors, owners, settle

A4 = u.configured({"a": 4})


def two_workers_mid_rebalance() -> tuple[GroupCoordinatorShard, Worker, Worker]:
    shard = GroupCoordinatorShard(metadata=connectors(a=4))
    w1, w2 = Worker(shard, "w1"), Worker(shard, "w2")
    w1.join()
    w2.join()  # the target moves part of w1's work to w2
    return shard, w1, w2


def test_a_worker_is_never_given_work_another_has_not_released():
    shard, w1, w2 = two_workers_mid_rebalance()
    group = shard.groups[GROUP]
    moving = group.target_of("w2")
    # The newcomer moves to the new epoch at once, running nothing, told what is coming.
    assert moving and w2.runs == u.EMPTY and w2.epoch == group.group_epoch
    assert u.from_wire(w2.last.assignment.pending_connectors_and_tasks) == moving
    w1.heartbeat()  # told to stop what moves, at its old epoch
    assert w1.runs == A4 - moving and group.members["w1"].state is WorkerState.UNREVOKED
    assert group.members["w1"].pending_revocation == moving
    w2.heartbeat()  # at the new epoch, but w1 has not said it stopped
    assert w2.runs == u.EMPTY and w2.last.assignment is None  # nothing new to tell
    assert group.pending_of(group.members["w2"]) == moving
    assert group.members["w2"].state is WorkerState.UNRELEASED
    w1.heartbeat()  # acknowledges
    assert group.members["w1"].state is WorkerState.STABLE
    w2.heartbeat()
    assert w2.runs == moving and group.members["w2"].state is WorkerState.STABLE
    assert group.state == "stable"


def test_no_unit_is_ever_run_by_two_workers_while_they_reconcile():
    shard = GroupCoordinatorShard(metadata=connectors(a=6, b=3))
    ws = [Worker(shard, f"w{i}") for i in range(4)]
    for w in ws:
        w.join()
        for _ in range(3):
            for other in ws:
                if other.epoch or other is w:
                    other.heartbeat()
                assert all(len(v) == 1 for v in owners(ws).values())
    settle(ws)
    assert sorted(owners(ws)) == sorted(u.configured({"a": 6, "b": 3}))


def test_a_reply_never_both_revokes_and_assigns():
    shard = GroupCoordinatorShard(metadata=connectors(a=5, b=5))
    ws = [Worker(shard, f"w{i}") for i in range(3)]
    for w in ws:
        w.join()
    for _ in range(8):
        for w in ws:
            before = w.runs
            w.heartbeat()
            assert not (before - w.runs and w.runs - before), (before, w.runs)
        shard.tick(shard.now_ms + 100)


def test_the_assignment_is_sent_when_the_worker_is_behind_the_target_epoch_and_not_when_quiet():
    shard = GroupCoordinatorShard(metadata=connectors(a=2))
    w = Worker(shard, "w1")
    w.join()
    assert w.heartbeat().assignment is None  # stable, nothing new
    shard.update_metadata(connectors(a=3))
    resp = w.heartbeat()
    assert resp.assignment is not None and resp.member_epoch == 2
    assert w.runs == u.configured({"a": 3})
    assert w.heartbeat().assignment is None


def test_a_worker_reporting_other_work_than_it_was_given_is_told_again():
    shard = GroupCoordinatorShard(metadata=connectors(a=2))
    w = Worker(shard, "w1")
    w.join()
    req = m.ConnectGroupHeartbeatRequest(
        GROUP, "w1", w.epoch, connectors_and_tasks=m.ConnectorsAndTasks(["a"])
    )
    resp = shard.handle(req).response
    assert resp.error_code == Errors.NONE
    assert u.from_wire(resp.assignment.connectors_and_tasks) == u.configured({"a": 2})


def test_a_heartbeat_that_does_not_say_what_it_runs_never_acknowledges_a_revocation():
    shard, w1, _ = two_workers_mid_rebalance()
    w1.heartbeat()
    shard.handle(m.ConnectGroupHeartbeatRequest(GROUP, "w1", w1.epoch))  # owned: unchanged
    assert shard.groups[GROUP].members["w1"].state is WorkerState.UNREVOKED


def test_the_reconciler_moves_a_rejoined_worker_without_waiting_for_an_acknowledgement():
    member = ConnectWorkerMember("w").moved(
        state=WorkerState.STABLE, assigned=frozenset({("a", -1), ("a", 0)}),
        pending_revocation=u.EMPTY, member_epoch=3,
    )
    new = reconcile(member, 4, frozenset({("a", 0)}), u.EMPTY, lambda unit: None)
    assert new.member_epoch == 4 and new.assigned == {("a", 0)}
    assert new.state is WorkerState.STABLE


def test_a_worker_at_the_target_epoch_gets_released_work_as_it_comes():
    member = ConnectWorkerMember("w").moved(
        state=WorkerState.UNRELEASED, assigned=frozenset({("a", 0)}),
        pending_revocation=u.EMPTY, member_epoch=4,
    )
    target = frozenset({("a", 0), ("a", 1), ("a", 2)})
    held_by = {("a", 1): "other"}
    new = reconcile(member, 4, target, None, held_by.get)
    assert new.assigned == {("a", 0), ("a", 2)} and new.state is WorkerState.UNRELEASED
    done = reconcile(new, 4, target, None, lambda unit: None)
    assert done.assigned == target and done.state is WorkerState.STABLE
