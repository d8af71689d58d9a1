"""Whom a turn wakes (``protocol/consumer/wake_ups.py``): members told nothing of their new
target, and members waiting for partitions the turn released; never a stable member."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import partitions as pm
from protocol.config import CoordinatorConfig
from protocol.consumer.member import MemberState
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import Member, heartbeat_rounds, image, together


def shard_with(**topics: int) -> GroupCoordinatorShard:
    # No KIP-1263 interval: a leave's turn computes the target and wakes whom it concerns.
    config = CoordinatorConfig(group_consumer_assignment_interval_ms=0)
    return GroupCoordinatorShard(config=config, metadata=image(**topics))


def test_a_joining_member_is_woken_when_the_holder_acknowledges_the_revocation():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    shard.take_wake_ups()
    b.join()  # B's target takes two of A's partitions; B waits for them
    assert shard.take_wake_ups() == [("g", "A")]  # A's target shrank; B's own reply told B
    a.heartbeat()  # A is asked to revoke two
    assert shard.take_wake_ups() == []  # nothing released yet; A's reply told A
    a.heartbeat()  # A acknowledges: the two become free, B's target did not change
    assert shard.take_wake_ups() == [("g", "B")]
    b.heartbeat()
    assert len(pm.pairs(b.owned)) == 2
    assert shard.take_wake_ups() == []


def test_a_waiting_member_answered_before_the_release_in_the_same_turn_is_woken():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    a.heartbeat()  # asked to revoke
    shard.take_wake_ups()
    together(shard, [(b, b.heartbeat_request()), (a, a.heartbeat_request())])
    assert pm.pairs(b.owned) == set()  # B's reply was made before A's acknowledgement
    assert shard.take_wake_ups() == [("g", "B")]


def test_a_waiting_member_answered_after_the_release_in_the_same_turn_is_not_woken():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    a.heartbeat()
    shard.take_wake_ups()
    together(shard, [(a, a.heartbeat_request()), (b, b.heartbeat_request())])
    assert len(pm.pairs(b.owned)) == 2  # its reply already gave it the released partitions
    assert shard.take_wake_ups() == []


def test_a_member_that_leaves_wakes_the_members_it_hands_its_partitions_to():
    shard = shard_with(foo=6)
    a, b, c = Member(shard, "A"), Member(shard, "B"), Member(shard, "C")
    for mem in (a, b, c):
        mem.join()
    heartbeat_rounds(a, b, c)
    shard.take_wake_ups()
    a.leave()
    assert shard.take_wake_ups() == [("g", "B"), ("g", "C")]


def test_a_leaver_that_never_acknowledged_releases_to_the_waiting_member():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    a.heartbeat()  # asked to revoke; it never acknowledges
    shard.take_wake_ups()
    a.leave()
    assert ("g", "B") in shard.take_wake_ups()
    b.heartbeat()
    assert len(pm.pairs(b.owned)) == 4


def test_a_stable_group_wakes_nobody():
    shard = shard_with(foo=8)
    members = [Member(shard, f"M{i}") for i in range(4)]
    for mem in members:
        mem.join()
    heartbeat_rounds(*members)
    assert shard.groups["g"].state == "stable"
    shard.take_wake_ups()
    for _ in range(3):
        for mem in members:
            mem.heartbeat()
        assert shard.take_wake_ups() == []


def test_a_load_notes_changes_that_a_runtime_can_drop_without_deciding():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    assert shard.take_wake_ups(decide=False) == []
    assert shard.take_wake_ups() == []  # dropped, not kept for later


OPS = st.lists(
    st.tuples(st.sampled_from(["join", "heartbeat", "leave"]), st.integers(0, 3)),
    min_size=1,
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_every_woken_member_has_a_reason_to_heartbeat_now(ops):
    """Soundness over random histories: a named member has a target newer than its epoch, or
    waits for a partition that is free now; a member at the target epoch that holds all of
    its target is never named."""
    shard = shard_with(foo=6)
    members = [Member(shard, f"M{i}") for i in range(4)]
    joined = [False] * 4
    for op, i in ops:
        mem = members[i]
        if op == "join" and not joined[i]:
            mem.join()
            joined[i] = True
        elif op == "heartbeat" and joined[i]:
            mem.heartbeat()
        elif op == "leave" and joined[i]:
            mem.leave()
            members[i] = Member(shard, f"M{i}")
            joined[i] = False
        group = shard.groups.get("g")
        woken = shard.take_wake_ups()
        if group is None:
            assert woken == []
            continue
        for _, mid in woken:
            member = group.members[mid]
            target = pm.pairs(group.target_of(mid))
            free_wanted = {tp for tp in target if group.owner_of(*tp) is None}
            behind = member.member_epoch < group.assignment_epoch
            waiting = member.state is MemberState.UNRELEASED_PARTITIONS and free_wanted
            assert behind or waiting, (mid, member, target)
