"""Static membership (KIP-345) and join reasons (KIP-800, seed 001) in classic groups, and the
rebalance history that remembers why each rebalance happened.

KIP-800: a known member (by member id, or a static member by instance id) that rejoins a
Stable group with reason ``restart`` causes no rebalance; ``upgrade`` always does;
``topic_metadata_change`` does from the leader only. The reason ranks below the older checks:
changed protocol metadata and unknown members always rebalance. Without a reason Kafka's rule
holds: the leader rejoining rebalances, a follower with unchanged metadata does not.
"""

from __future__ import annotations

import pytest

from protocol import messages as m
from protocol.classic import group as cg
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from protocol.records import GroupRebalanceHistoryKey
from protocol.shard import GroupCoordinatorShard
from tests.protocol.classic.test_classic_group import (
    CONFIG,
    DELAY_MS,
    FOO,
    SESSION_MS,
    Bench,
    Consumer,
    assignment_of,
    complete_sync,
    end_join_phase,
    form,
    keep_alive,
    rejoin,
    subscription,
)

FOO_BAR = subscription("foo", "bar")


def restarted(old: Consumer, protocols=None) -> Consumer:
    """The same static member as a new process: it knows its instance id, not its member id."""
    return Consumer(
        old.bench,
        old.name,
        instance_id=old.instance_id,
        protocols=protocols if protocols is not None else list(old.protocols),
    )


def static_group(bench: Bench) -> tuple[Consumer, Consumer, Consumer]:
    """A Stable group at generation 1: leader a, followers b; all static but c."""
    a = bench.consumer("a", instance_id="a-1")
    b = bench.consumer("b", instance_id="b-1")
    c = bench.consumer("c")
    a.join()
    b.join()
    c.join()
    end_join_phase(bench)
    assert a.is_leader
    complete_sync(a, b, c)
    return a, b, c


def history(bench: Bench) -> list[m.RebalanceCause]:
    return bench.describe().rebalance_history


# ============================================================ restart: no rebalance


def test_static_member_restarting_with_reason_restart_keeps_its_place_without_a_rebalance():
    bench = Bench()
    a, b, c = static_group(bench)
    b2 = restarted(b)
    causes = len(history(bench))
    resp = b2.join("restart")
    assert resp is not None and resp.error_code == Errors.NONE
    assert resp.member_id != b.member_id and resp.member_id.startswith("b-1-")
    assert resp.generation_id == 1 and bench.state() == cg.STABLE
    assert len(history(bench)) == causes
    assert b2.sync().assignment == assignment_of(b)
    assert a.heartbeat().error_code == c.heartbeat().error_code == Errors.NONE


def test_a_static_restart_persists_the_new_member_id():
    bench = Bench()
    _a, b, _c = static_group(bench)
    b2 = restarted(b)
    res = b2.send_join("restart")
    (value,) = bench.group_records(res)
    assert value.generation == 1 and value.state == cg.STABLE
    held = {mem.member_id: mem.assignment for mem in value.members}
    assert held[b2.member_id] == assignment_of(b) and b.member_id not in held


def test_the_member_id_a_static_member_replaced_is_fenced():
    bench = Bench()
    _a, b, _c = static_group(bench)
    restarted(b).join("restart")
    assert b.heartbeat().error_code == Errors.FENCED_INSTANCE_ID
    assert b.sync().error_code == Errors.FENCED_INSTANCE_ID
    assert b.join().error_code == Errors.FENCED_INSTANCE_ID
    leave = bench.send(m.LeaveGroupRequest("g", [m.MemberIdentity(b.member_id, "b-1")]))
    assert [x.error_code for x in leave.response.members] == [Errors.FENCED_INSTANCE_ID]
    assert bench.state() == cg.STABLE and len(bench.describe().members) == 3


def test_a_restarting_static_leader_keeps_leading_and_is_told_to_skip_the_assignment():
    bench = Bench()
    a, b, c = static_group(bench)
    a2 = restarted(a)
    resp = a2.join("restart")
    assert resp.leader == a2.member_id and resp.skip_assignment
    assert {x.member_id for x in resp.members} == {a2.member_id, b.member_id, c.member_id}
    assert bench.state() == cg.STABLE
    assert a2.sync().assignment == assignment_of(a)
    assert b.heartbeat().error_code == Errors.NONE


def test_a_static_restart_without_a_reason_does_not_rebalance_a_stable_group_either():
    """KIP-345: a static member coming back with unchanged metadata keeps its place."""
    bench = Bench()
    _a, b, _c = static_group(bench)
    b2 = restarted(b)
    assert b2.join().generation_id == 1 and bench.state() == cg.STABLE


def test_a_known_member_rejoining_with_restart_does_not_rebalance():
    bench = Bench()
    a, b, c = static_group(bench)
    for x in (a, b, c):
        resp = x.join("restart")
        assert resp is not None and resp.generation_id == 1, x.name
    assert bench.state() == cg.STABLE
    assert a.join_reply.skip_assignment and not c.join_reply.skip_assignment


# ================================================================ reasons that rebalance


def test_static_restart_with_reason_upgrade_rebalances():
    bench = Bench()
    a, b, c = static_group(bench)
    b2 = restarted(b)
    assert b2.join("upgrade") is None
    assert bench.state() == cg.PREPARING_REBALANCE
    rejoin(a, c)
    assert b2.join_reply.generation_id == 2
    assert b.heartbeat().error_code == Errors.FENCED_INSTANCE_ID


@pytest.mark.parametrize("who", ["a", "b", "c"])
def test_a_known_member_rejoining_with_upgrade_rebalances(who):
    bench = Bench()
    members = dict(zip("abc", static_group(bench), strict=True))
    assert members[who].join("upgrade") is None
    assert bench.state() == cg.PREPARING_REBALANCE


def test_topic_metadata_change_from_the_leader_rebalances():
    bench = Bench()
    a, _b, _c = static_group(bench)
    assert a.join("topic_metadata_change") is None
    assert bench.state() == cg.PREPARING_REBALANCE
    (cause,) = history(bench)[-1:]
    assert cause.member_id == a.member_id and "topic metadata" in cause.reason


def test_topic_metadata_change_from_a_restarting_static_leader_rebalances():
    bench = Bench()
    a, _b, _c = static_group(bench)
    assert restarted(a).join("topic_metadata_change") is None
    assert bench.state() == cg.PREPARING_REBALANCE


@pytest.mark.parametrize("who", ["b", "c"])
def test_topic_metadata_change_from_a_follower_does_not_rebalance(who):
    bench = Bench()
    members = dict(zip("abc", static_group(bench), strict=True))
    resp = members[who].join("topic_metadata_change")
    assert resp is not None and resp.generation_id == 1 and bench.state() == cg.STABLE


def test_topic_metadata_change_from_a_restarting_static_follower_does_not_rebalance():
    bench = Bench()
    _a, b, _c = static_group(bench)
    resp = restarted(b).join("topic_metadata_change")
    assert resp is not None and resp.generation_id == 1 and bench.state() == cg.STABLE


@pytest.mark.parametrize("who", ["a", "b", "c"])
def test_a_known_member_with_changed_metadata_rebalances_even_with_restart(who):
    bench = Bench()
    members = dict(zip("abc", static_group(bench), strict=True))
    x = members[who]
    x.protocols = [("range", FOO_BAR)]
    assert x.join("restart") is None
    assert bench.state() == cg.PREPARING_REBALANCE
    assert "metadata" in history(bench)[-1].reason


def test_a_restarting_static_member_with_changed_metadata_rebalances_even_with_restart():
    bench = Bench()
    a, b, c = static_group(bench)
    b2 = restarted(b, protocols=[("range", FOO_BAR)])
    assert b2.join("restart") is None
    assert bench.state() == cg.PREPARING_REBALANCE
    rejoin(a, c)
    assert {x.metadata for x in a.join_reply.members} == {FOO, FOO_BAR}


@pytest.mark.parametrize("static", [True, False])
def test_an_unknown_member_always_rebalances_even_with_restart(static):
    bench = Bench()
    static_group(bench)
    d = bench.consumer("d", instance_id="d-1" if static else None)
    assert d.join("restart") is None
    assert bench.state() == cg.PREPARING_REBALANCE
    cause = history(bench)[-1]
    assert cause.group_instance_id == d.instance_id
    assert cause.member_id in {x.member_id for x in bench.describe().members}
    assert cause.member_id.startswith("d-")


def test_a_dynamic_leader_rejoining_without_a_reason_rebalances():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    leader = form(bench, a, b)
    assert leader.join() is None
    assert bench.state() == cg.PREPARING_REBALANCE


def test_a_dynamic_follower_rejoining_with_the_same_metadata_gets_the_current_generation():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    leader = form(bench, a, b)
    follower = b if leader is a else a
    resp = follower.join()
    assert resp.generation_id == 1 and resp.leader == leader.member_id and resp.members == []
    assert bench.state() == cg.STABLE
    assert follower.sync().assignment == assignment_of(follower)


# ========================================================= restarts during a rebalance


def test_a_static_member_restarting_during_the_join_phase_takes_its_old_place_in_it():
    bench = Bench()
    a, b, c = static_group(bench)
    c.join("upgrade")
    b.join()
    b2 = restarted(b)
    res = b2.send_join("restart")
    assert res.response is None
    replies = {id(q): r for q, r in res.replies}
    assert replies[id(b.last_join)].error_code == Errors.FENCED_INSTANCE_ID
    a.join()
    assert b2.join_reply.generation_id == 2
    assert {x.member_id for x in a.join_reply.members} == {a.member_id, b2.member_id, c.member_id}


def test_a_static_member_restarting_during_the_sync_phase_still_gets_an_assignment():
    """The leader may already be assigning to the old member id (Kafka rebalances here, in
    ``updateStaticMemberThenRebalanceOrCompleteJoin``): the new id must not end up with
    nothing while the group calls itself Stable."""
    bench = Bench()
    a, b, c = static_group(bench)
    rejoin(a, b, c, reason="upgrade")
    assert bench.state() == cg.COMPLETING_REBALANCE
    b2 = restarted(b)
    b2.join("restart")
    # The leader assigns to the members its JoinGroup reply named.
    assignments = {x.member_id: f"for-{x.member_id}".encode() for x in a.join_reply.members}
    c.sync()
    a.sync(assignments)
    if bench.state() == cg.STABLE:
        resp = b2.sync()
        assert resp.error_code == Errors.NONE
        assert resp.assignment == assignments[b.member_id], "b's partitions went to nobody"
    else:
        assert bench.state() == cg.PREPARING_REBALANCE


def test_a_static_leader_restarting_during_the_sync_phase_is_not_told_to_skip_the_assignment():
    """Nobody has assigned this generation yet: a leader told to skip would leave everyone
    without partitions (unless the group rebalances instead, as Kafka does)."""
    bench = Bench()
    a, b, c = static_group(bench)
    rejoin(a, b, c, reason="upgrade")
    assert bench.state() == cg.COMPLETING_REBALANCE
    a2 = restarted(a)
    resp = a2.join("restart")
    if resp is not None:
        assert resp.leader == a2.member_id and not resp.skip_assignment
    else:
        assert bench.state() == cg.PREPARING_REBALANCE


def test_a_static_member_restarting_while_its_old_self_waits_for_sync_fences_that_sync():
    bench = Bench()
    a, b, c = static_group(bench)
    rejoin(a, b, c, reason="upgrade")
    b.sync()
    res = restarted(b).send_join("restart")
    replies = {id(q): r for q, r in res.replies}
    assert replies[id(b.last_sync)].error_code == Errors.FENCED_INSTANCE_ID


def test_a_static_member_that_never_returns_is_removed_by_its_session_timeout():
    bench = Bench()
    a, b, c = static_group(bench)
    keep_alive(bench, SESSION_MS - 1, a, c)
    assert bench.state() == cg.STABLE
    keep_alive(bench, 1, a, c)
    assert bench.state() == cg.PREPARING_REBALANCE  # b's session ended
    assert b.instance_id not in {x.group_instance_id for x in bench.describe().members}


# ================================================================ the rebalance history


def test_every_transition_to_preparing_rebalance_is_remembered_with_its_cause():
    bench = Bench()
    a = bench.consumer("a", instance_id="a-1")
    b = bench.consumer("b")
    a.join()  # t=0: the group's first rebalance
    b.join()
    end_join_phase(bench)
    complete_sync(a, b)
    bench.advance(1_000)
    t_upgrade = bench.now_ms
    a.join("upgrade")  # generation 1 -> rebalance
    b.join()
    complete_sync(a, b)
    bench.advance(1_000)
    t_leave = bench.now_ms
    b.leave("shutting down")
    a.join()
    complete_sync(a)

    causes = history(bench)
    assert [(x.time_ms, x.generation_id, x.member_id, x.group_instance_id) for x in causes] == [
        (0, 0, a.member_id, "a-1"),
        (t_upgrade, 1, a.member_id, "a-1"),
        (t_leave, 2, b.member_id, None),
    ]
    assert "new member" in causes[0].reason
    assert "upgrade" in causes[1].reason
    assert "left" in causes[2].reason and "shutting down" in causes[2].reason


def test_session_expiry_and_sync_timeout_are_remembered_as_causes():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    keep_alive(bench, 10_000, a)  # b's session ends
    cause = history(bench)[-1]
    assert cause.member_id == b.member_id and "session" in cause.reason
    a.join()
    assert bench.state() == cg.COMPLETING_REBALANCE
    keep_alive(bench, 30_000, a)  # a never syncs: it is removed, the group rebalances
    cause = history(bench)[-1]
    assert "SyncGroup" in cause.reason and cause.generation_id == 2


def test_the_rebalance_history_is_bounded():
    config = CoordinatorConfig(
        group_initial_rebalance_delay_ms=DELAY_MS, group_rebalance_history_max=3
    )
    bench = Bench(config)
    a = bench.consumer("a")
    form(bench, a)
    for _ in range(5):
        a.join("upgrade")
        complete_sync(a)
    causes = history(bench)
    assert len(causes) == 3
    assert [x.generation_id for x in causes] == [3, 4, 5]


def test_the_rebalance_history_is_persisted_with_the_transition():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    res = bench.send(a.join_request("upgrade"))
    (value,) = [r.value for r in res.records if isinstance(r.key, GroupRebalanceHistoryKey)]
    assert [x.reason for x in value.causes] == [x.reason for x in history(bench)]
    fresh = GroupCoordinatorShard(CONFIG, bench.image)
    for r in bench.records + res.records:
        fresh.replay(r)
    replayed = fresh.handle(m.DescribeGroupsRequest(["g"])).response.groups[0]
    assert replayed.rebalance_history == history(bench)


def test_a_rejoin_without_a_rebalance_adds_nothing_to_the_history():
    bench = Bench()
    a, b, c = static_group(bench)
    before = history(bench)
    restarted(b).join("restart")
    c.join()
    a.join("restart")
    assert history(bench) == before
