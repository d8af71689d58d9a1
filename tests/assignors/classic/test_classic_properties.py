"""Properties of the classic client assignors over random groups (hypothesis).

Random groups mix valid and stale input: subscriptions to topics that vanished or have no
partitions, owned partitions beyond a topic's size, of unsubscribed topics, claimed by
several members at the same or different generations, static and dynamic members.
"""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from assignors.classic import (
    CLASSIC_ASSIGNORS,
    ClassicSubscription,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    sticky_assignment,
)

TOPICS = ["t0", "t1", "t2", "t3"]
KNOWN = [*TOPICS, "gone"]  # topics may also be missing from partitions_per_topic
MEMBER_IDS = [f"m{i}" for i in range(8)]
PROPERTY = settings(max_examples=100)

Assignment = dict[str, list[tuple[str, int]]]
Group = tuple[dict[str, int], dict[str, ClassicSubscription]]

range_assignor = RangeAssignor()
roundrobin = RoundRobinAssignor()
cooperative = CooperativeStickyAssignor()
ALL = pytest.mark.parametrize("assignor", CLASSIC_ASSIGNORS.values(), ids=lambda a: a.name)


def subset(mask: int, items: list[str]) -> list[str]:
    return [item for bit, item in enumerate(items) if mask >> bit & 1]


@st.composite
def groups(draw, homogeneous: bool | None = None, owning: bool = True) -> Group:
    """A random group; bit masks and flat claim numbers keep generation cheap."""
    topic_mask = st.integers(0, 2 ** len(KNOWN) - 1)
    sizes = {t: draw(st.integers(0, 9)) for t in subset(draw(topic_mask), TOPICS)}
    member_ids = subset(draw(st.integers(1, 2 ** len(MEMBER_IDS) - 1)), MEMBER_IDS)
    if homogeneous is None:
        homogeneous = draw(st.booleans())
    shared = draw(topic_mask)
    claims = st.lists(st.integers(0, len(KNOWN) * 12 - 1), max_size=6)
    subscriptions = {}
    for i, member_id in enumerate(member_ids):
        topics = subset(shared if homogeneous else draw(topic_mask), KNOWN)
        owned = [(KNOWN[c // 12], c % 12 - 1) for c in draw(claims)] if owning else []
        static = draw(st.booleans())
        subscriptions[member_id] = ClassicSubscription(
            topics,
            owned,
            draw(st.integers(-1, 3)),
            group_instance_id=f"static-{9 - i}" if static else None,
        )
    return sizes, subscriptions


# -- checks --------------------------------------------------------------------------------


def topics_of(sizes: dict[str, int], subscription: ClassicSubscription) -> set[str]:
    return {t for t in subscription.topics if sizes.get(t, 0) > 0}


def subscribed_partitions(sizes: dict[str, int], subscriptions) -> set[tuple[str, int]]:
    topics = set().union(*(topics_of(sizes, s) for s in subscriptions.values()))
    return {(t, p) for t in topics for p in range(sizes[t])}


def check_well_formed(sizes, subscriptions, result: Assignment) -> None:
    """Every member, sorted, no partition twice, only partitions of its own topics."""
    assert set(result) == set(subscriptions)
    given_out = Counter(tp for assigned in result.values() for tp in assigned)
    assert all(n == 1 for n in given_out.values()), given_out
    for member_id, assigned in result.items():
        assert assigned == sorted(assigned)
        for topic, partition in assigned:
            assert topic in topics_of(sizes, subscriptions[member_id])
            assert 0 <= partition < sizes[topic]


def check_complete(sizes, subscriptions, result: Assignment) -> None:
    check_well_formed(sizes, subscriptions, result)
    given_out = {tp for assigned in result.values() for tp in assigned}
    assert given_out == subscribed_partitions(sizes, subscriptions)


def check_optimally_balanced(sizes, subscriptions, result: Assignment) -> None:
    """Nobody can hand a partition, even along a chain, to a member holding 2+ fewer."""
    load = {m: len(a) for m, a in result.items()}
    holds = {m: {t for t, _ in a} for m, a in result.items()}
    eligible = {m: topics_of(sizes, s) for m, s in subscriptions.items()}
    for start in result:
        reached, stack = {start}, [start]
        while stack:
            giver = stack.pop()
            for taker in result:
                if taker not in reached and holds[giver] & eligible[taker]:
                    reached.add(taker)
                    stack.append(taker)
        assert all(load[m] >= load[start] - 1 for m in reached), (start, load)


def claimants_at_top_generation(subscriptions, tp: tuple[str, int]) -> set[str]:
    claims = {m: s.generation_id for m, s in subscriptions.items() if tp in s.owned_partitions}
    top = max(claims.values(), default=None)
    return {m for m, generation in claims.items() if generation == top}


def rejoin(subscriptions, result: Assignment, generation: int):
    return {
        m: ClassicSubscription(s.topics, result[m], generation, s.rack_id, s.group_instance_id)
        for m, s in subscriptions.items()
    }


def reversed_group(subscriptions):
    return dict(reversed(subscriptions.items()))


def next_generation(subscriptions) -> int:
    return max(s.generation_id for s in subscriptions.values()) + 1


def owners(result: Assignment) -> dict[tuple[str, int], str]:
    return {tp: m for m, assigned in result.items() for tp in assigned}


# -- all three -----------------------------------------------------------------------------


@ALL
@PROPERTY
@given(groups())
def test_assignment_is_well_formed_and_deterministic(assignor, group):
    sizes, subscriptions = group
    result = assignor.assign(sizes, subscriptions)
    check_well_formed(sizes, subscriptions, result)
    assert assignor.assign(dict(reversed(sizes.items())), reversed_group(subscriptions)) == result


@pytest.mark.parametrize("assignor", [range_assignor, roundrobin], ids=lambda a: a.name)
@PROPERTY
@given(groups())
def test_eager_assignors_assign_every_subscribed_partition_once(assignor, group):
    sizes, subscriptions = group
    check_complete(sizes, subscriptions, assignor.assign(sizes, subscriptions))


# -- range ---------------------------------------------------------------------------------


@PROPERTY
@given(groups())
def test_range_balances_each_topic_with_extras_to_the_first_members(group):
    sizes, subscriptions = group
    result = range_assignor.assign(sizes, subscriptions)
    static_first = {
        m: (s.group_instance_id is None, s.group_instance_id or m) for m, s in subscriptions.items()
    }
    order = sorted(subscriptions, key=static_first.__getitem__)
    for topic in {t for t, _ in subscribed_partitions(sizes, subscriptions)}:
        counts = [
            sum(1 for t, _ in result[m] if t == topic)
            for m in order
            if topic in topics_of(sizes, subscriptions[m])
        ]
        assert counts == sorted(counts, reverse=True)
        assert counts[0] - counts[-1] <= 1


# -- roundrobin ----------------------------------------------------------------------------


@PROPERTY
@given(groups(homogeneous=True))
def test_roundrobin_with_identical_subscriptions_is_balanced_to_within_one(group):
    sizes, subscriptions = group
    loads = [len(a) for a in roundrobin.assign(sizes, subscriptions).values()]
    assert max(loads) - min(loads) <= 1


# -- cooperative-sticky --------------------------------------------------------------------


@PROPERTY
@given(groups())
def test_sticky_target_is_complete_and_optimally_balanced(group):
    sizes, subscriptions = group
    target = sticky_assignment(sizes, subscriptions)
    check_complete(sizes, subscriptions, target)
    check_optimally_balanced(sizes, subscriptions, target)


@PROPERTY
@given(groups())
def test_sticky_members_with_identical_subscriptions_differ_by_at_most_one(group):
    sizes, subscriptions = group
    target = sticky_assignment(sizes, subscriptions)
    for m, a in subscriptions.items():
        for n, b in subscriptions.items():
            if topics_of(sizes, a) == topics_of(sizes, b):
                assert len(target[m]) - len(target[n]) <= 1


@PROPERTY
@given(groups())
def test_cooperative_never_gives_a_member_a_partition_another_member_owns(group):
    sizes, subscriptions = group
    result = cooperative.assign(sizes, subscriptions)
    for member_id, assigned in result.items():
        for tp in assigned:
            assert claimants_at_top_generation(subscriptions, tp) <= {member_id}, tp


@PROPERTY
@given(groups())
def test_cooperative_passes_kafkas_validate_cooperative_assignment(group):
    # ConsumerCoordinator's check, blind to generations: nothing is revoked and added at once.
    sizes, subscriptions = group
    result = cooperative.assign(sizes, subscriptions)
    revoked, added = set(), set()
    for member_id, subscription in subscriptions.items():
        owned, assigned = set(subscription.owned_partitions), set(result[member_id])
        revoked |= owned - assigned
        added |= assigned - owned
    assert not revoked & added


@PROPERTY
@given(groups())
def test_cooperative_withholds_only_partitions_moving_away_from_their_owner(group):
    sizes, subscriptions = group
    result = cooperative.assign(sizes, subscriptions)
    target = sticky_assignment(sizes, subscriptions)
    check_well_formed(sizes, subscriptions, result)
    for member_id, planned in target.items():
        assert set(result[member_id]) <= set(planned)
        for tp in set(planned) - set(result[member_id]):
            assert claimants_at_top_generation(subscriptions, tp) - {member_id}, tp


@PROPERTY
@given(groups())
def test_two_cooperative_rounds_reach_a_complete_balanced_assignment(group):
    sizes, subscriptions = group
    first = cooperative.assign(sizes, subscriptions)
    rejoined = rejoin(subscriptions, first, next_generation(subscriptions))
    second = cooperative.assign(sizes, rejoined)
    check_complete(sizes, subscriptions, second)
    check_optimally_balanced(sizes, subscriptions, second)
    for member_id, kept in first.items():
        assert set(kept) <= set(second[member_id])


@PROPERTY
@given(groups(owning=False))
def test_settled_group_is_a_fixed_point(group):
    sizes, subscriptions = group
    settled = cooperative.assign(sizes, subscriptions)
    check_complete(sizes, subscriptions, settled)
    again = rejoin(subscriptions, settled, next_generation(subscriptions))
    assert cooperative.assign(sizes, reversed_group(again)) == settled


@PROPERTY
@given(groups(homogeneous=True, owning=False))
def test_joiner_moves_only_its_share_of_partitions(group):
    sizes, subscriptions = group
    assume("joiner" not in subscriptions)
    settled = cooperative.assign(sizes, subscriptions)
    members = rejoin(subscriptions, settled, 1)
    members["joiner"] = ClassicSubscription(list(next(iter(subscriptions.values())).topics))
    target = sticky_assignment(sizes, members)
    moved = sum(1 for tp, m in owners(target).items() if owners(settled).get(tp) != m)
    share = math.ceil(len(owners(settled)) / len(members))
    assert moved == len(target["joiner"]) <= share
    assert cooperative.assign(sizes, members)["joiner"] == []


@PROPERTY
@given(groups(homogeneous=True, owning=False), st.integers(0, 6))
def test_leaver_partitions_move_and_nobody_elses(group, pick):
    sizes, subscriptions = group
    assume(len(subscriptions) >= 2)
    leaver = sorted(subscriptions)[pick % len(subscriptions)]
    settled = cooperative.assign(sizes, subscriptions)
    stayers = rejoin({m: s for m, s in subscriptions.items() if m != leaver}, settled, 1)
    result = cooperative.assign(sizes, stayers)
    check_complete(sizes, stayers, result)
    for member_id in stayers:
        assert set(settled[member_id]) <= set(result[member_id])
