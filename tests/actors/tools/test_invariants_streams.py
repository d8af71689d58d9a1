"""Invariant 8's checker (``actors/tools/invariants_streams.py``) on crafted timelines: it
catches a task active on two members at once, a standby beside its active, an epoch going
down, a task left without an owner or with two at the end; and passes a clean handover."""

from __future__ import annotations

from actors.tools.invariants_streams import STREAMS_INVARIANT, check_streams

TASKS = {("0", 0), ("0", 1)}


def ev(t, mid, epoch, active=(), standby=(), process=None, why="assigned"):
    return {"t": t, "member_id": mid, "process_id": process or f"p-{mid}", "epoch": epoch,
            "why": why, "active": [list(x) for x in active],
            "standby": [list(x) for x in standby], "warmup": []}


def messages(violations):
    assert all(v.invariant == STREAMS_INVARIANT for v in violations)
    return [v.message for v in violations]


def test_a_handover_after_the_release_passes():
    events = [ev(1.0, "a", 1, TASKS),
              ev(2.0, "a", 1, [("0", 0)], why="assigned"),  # revoked 0_1 at 2.0
              ev(2.0, "b", 2, [("0", 1)]),  # granted at the same instant: no overlap
              ev(3.0, "a", 2, [("0", 0)], why="epoch")]
    assert check_streams(events, {}, ["a", "b"], TASKS) == []


def test_a_task_active_on_two_members_at_once_is_a_violation():
    events = [ev(1.0, "a", 1, TASKS),
              ev(2.0, "b", 2, [("0", 1)]),  # granted before a let it go
              ev(2.5, "a", 2, [("0", 0)])]
    found = messages(check_streams(events, {}, ["a", "b"], TASKS))
    assert len(found) == 1 and found[0].startswith("8a: task 0_1 active on a [1.000, 2.500)")
    assert "on b [2.000, end)" in found[0]


def test_a_killed_member_holds_its_tasks_until_it_was_seen_dead():
    events = [ev(1.0, "a", 1, TASKS), ev(5.0, "b", 3, TASKS)]
    assert check_streams(events, {"a": 4.0}, ["b"], TASKS) == []
    found = messages(check_streams(events, {"a": 6.0}, ["b"], TASKS))
    assert [m[:14] for m in found] == ["8a: task 0_0 a", "8a: task 0_1 a"]


def test_a_member_holding_a_task_active_and_standby_is_a_violation():
    events = [ev(1.0, "a", 1, TASKS, standby=[("0", 1)])]
    assert messages(check_streams(events, {}, ["a"], TASKS))[0].startswith(
        "8b: a holds [('0', 1)] both active and standby")


def test_an_epoch_going_down_is_a_violation_but_a_rejoin_at_zero_is_not():
    rejoin = [ev(1.0, "a", 4, TASKS), ev(2.0, "a", 0, why="fenced"), ev(3.0, "a", 6, TASKS)]
    assert check_streams(rejoin, {}, ["a"], TASKS) == []
    down = [ev(1.0, "a", 4, TASKS), ev(2.0, "a", 3, TASKS)]
    assert messages(check_streams(down, {}, ["a"], TASKS)) == [
        "8c: a's epoch went down from 4 to 3 at 2.000"]


def test_at_the_end_every_task_has_exactly_one_live_active_owner():
    orphan = [ev(1.0, "a", 1, [("0", 0)])]
    assert messages(check_streams(orphan, {}, ["a"], TASKS)) == [
        "8d: task 0_1 ends active on 0 live members [], not exactly one"]
    dead_owner = [ev(1.0, "a", 1, [("0", 0)]), ev(1.0, "b", 1, [("0", 1)])]
    assert len(check_streams(dead_owner, {"b": 2.0}, ["a"], TASKS)) == 1


def test_a_standby_on_the_process_of_its_active_is_a_violation():
    same = [ev(1.0, "a", 1, TASKS, process="p0"),
            ev(1.0, "b", 1, standby=[("0", 1)], process="p0")]
    assert messages(check_streams(same, {}, ["a", "b"], TASKS)) == [
        "8d: standby of task 0_1 on b sits on process p0, which holds it active"]
    other = [ev(1.0, "a", 1, TASKS, process="p0"),
             ev(1.0, "b", 1, standby=[("0", 1)], process="p1")]
    assert check_streams(other, {}, ["a", "b"], TASKS) == []
