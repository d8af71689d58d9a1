"""The classic client assignors on small groups, mostly the examples of Kafka's javadoc."""

from __future__ import annotations

import pytest

from assignors.classic import (
    CLASSIC_ASSIGNORS,
    ClassicAssignor,
    ClassicSubscription,
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    classic_assignor,
    current_owners,
    sticky_assignment,
)

Sub = ClassicSubscription
range_assignor = RangeAssignor()
roundrobin = RoundRobinAssignor()
cooperative = CooperativeStickyAssignor()


def tps(spec: str) -> list[tuple[str, int]]:
    """``tps("t0p0 t1p2")`` -> ``[("t0", 0), ("t1", 2)]``: the javadoc's notation."""
    result = []
    for word in spec.split():
        topic, partition = word.rsplit("p", 1)
        result.append((topic, int(partition)))
    return sorted(result)


def t(*partitions: int) -> list[tuple[str, int]]:
    """Partitions of the topic called "t"."""
    return [("t", p) for p in partitions]


def everyone(topics: dict[str, int], *members: str) -> dict[str, ClassicSubscription]:
    return {m: Sub(list(topics)) for m in members}


def rejoin(
    subscriptions: dict[str, ClassicSubscription],
    assignment: dict[str, list[tuple[str, int]]],
    generation: int,
) -> dict[str, ClassicSubscription]:
    """The same members rejoining, each owning its ``assignment`` at ``generation``."""
    return {
        m: Sub(s.topics, assignment[m], generation, s.rack_id, s.group_instance_id)
        for m, s in subscriptions.items()
    }


# -- registry ------------------------------------------------------------------------------


def test_registry_holds_kafkas_three_strategies_under_their_names():
    assert set(CLASSIC_ASSIGNORS) == {"range", "roundrobin", "cooperative-sticky"}
    for name, assignor in CLASSIC_ASSIGNORS.items():
        assert isinstance(assignor, ClassicAssignor)
        assert assignor.name == name
        assert classic_assignor(name) is assignor


def test_only_cooperative_sticky_speaks_the_cooperative_protocol():
    protocols = {name: a.rebalance_protocol for name, a in CLASSIC_ASSIGNORS.items()}
    assert protocols == {
        "range": "eager",
        "roundrobin": "eager",
        "cooperative-sticky": "cooperative",
    }


def test_unknown_assignor_name_is_a_key_error_naming_the_known_ones():
    with pytest.raises(KeyError, match=r"'sticky'.*cooperative-sticky, range, roundrobin"):
        classic_assignor("sticky")


@pytest.mark.parametrize("assignor", CLASSIC_ASSIGNORS.values(), ids=lambda a: a.name)
def test_every_member_appears_even_with_nothing_to_consume(assignor):
    subscriptions = {"A": Sub(["t"]), "B": Sub(["gone"]), "C": Sub([])}
    assert assignor.assign({"t": 1, "other": 3}, subscriptions) == {
        "A": [("t", 0)],
        "B": [],
        "C": [],
    }


# -- range ---------------------------------------------------------------------------------


def test_range_javadoc_two_members_two_topics_of_three():
    result = range_assignor.assign({"t0": 3, "t1": 3}, everyone({"t0": 3, "t1": 3}, "C1", "C0"))
    assert result == {"C0": tps("t0p0 t0p1 t1p0 t1p1"), "C1": tps("t0p2 t1p2")}


def test_range_gives_the_first_members_one_extra_partition():
    result = range_assignor.assign({"t": 8}, everyone({"t": 8}, "c", "a", "b"))
    assert result == {"a": t(0, 1, 2), "b": t(3, 4, 5), "c": t(6, 7)}


def test_range_splits_each_topic_over_its_own_subscribers():
    subscriptions = {"A": Sub(["t0"]), "B": Sub(["t0", "t1"]), "C": Sub(["t1"])}
    result = range_assignor.assign({"t0": 3, "t1": 4}, subscriptions)
    assert result == {"A": tps("t0p0 t0p1"), "B": tps("t0p2 t1p0 t1p1"), "C": tps("t1p2 t1p3")}


def test_range_puts_static_members_first_in_instance_id_order():
    subscriptions = {
        "a-dynamic": Sub(["t"]),
        "x-1": Sub(["t"], group_instance_id="zeta"),
        "y-2": Sub(["t"], group_instance_id="alpha"),
    }
    result = range_assignor.assign({"t": 3}, subscriptions)
    assert result == {"y-2": [("t", 0)], "x-1": [("t", 1)], "a-dynamic": [("t", 2)]}


def test_range_orders_member_ids_as_java_does_by_utf16_units():
    # U+1F600 sorts after U+FF21 by code point, before it by UTF-16 unit (0xD83D < 0xFF21).
    result = range_assignor.assign({"t": 2}, everyone({"t": 2}, "\uff21", "\U0001f600"))
    assert result == {"\U0001f600": [("t", 0)], "\uff21": [("t", 1)]}


def test_range_ignores_what_members_own():
    owning = {"A": Sub(["t"]), "B": Sub(["t"], owned_partitions=[("t", 0)], generation_id=3)}
    assert range_assignor.assign({"t": 2}, owning) == {"A": [("t", 0)], "B": [("t", 1)]}


# -- roundrobin ----------------------------------------------------------------------------


def test_roundrobin_javadoc_identical_subscriptions_alternate():
    result = roundrobin.assign({"t0": 3, "t1": 3}, everyone({"t0": 3, "t1": 3}, "C0", "C1"))
    assert result == {"C0": tps("t0p0 t0p2 t1p1"), "C1": tps("t0p1 t1p0 t1p2")}


def test_roundrobin_javadoc_skips_members_not_subscribed_to_the_topic():
    subscriptions = {"C0": Sub(["t0"]), "C1": Sub(["t0", "t1"]), "C2": Sub(["t0", "t1", "t2"])}
    result = roundrobin.assign({"t0": 1, "t1": 2, "t2": 3}, subscriptions)
    assert result == {
        "C0": tps("t0p0"),
        "C1": tps("t1p0"),
        "C2": tps("t1p1 t2p0 t2p1 t2p2"),
    }


def test_roundrobin_deals_static_members_first():
    subscriptions = {"a": Sub(["t"]), "b": Sub(["t"], group_instance_id="host-1")}
    assert roundrobin.assign({"t": 3}, subscriptions) == {"a": [("t", 1)], "b": t(0, 2)}


# -- cooperative-sticky: the eager target (StickyAssignor's javadoc) -----------------------

FOUR_TOPICS = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}
UNEVEN_TOPICS = {"t0": 1, "t1": 2, "t2": 3}
UNEVEN_SUBSCRIPTIONS = {"C0": Sub(["t0"]), "C1": Sub(["t0", "t1"]), "C2": Sub(["t0", "t1", "t2"])}


def test_sticky_javadoc_first_assignment_matches_round_robin():
    result = cooperative.assign(FOUR_TOPICS, everyone(FOUR_TOPICS, "C0", "C1", "C2"))
    assert result == {
        "C0": tps("t0p0 t1p1 t3p0"),
        "C1": tps("t0p1 t2p0 t3p1"),
        "C2": tps("t1p0 t2p1"),
    }


def test_sticky_javadoc_leaver_partitions_spread_and_nobody_else_moves():
    first = cooperative.assign(FOUR_TOPICS, everyone(FOUR_TOPICS, "C0", "C1", "C2"))
    survivors = rejoin(everyone(FOUR_TOPICS, "C0", "C2"), first, generation=1)
    result = cooperative.assign(FOUR_TOPICS, survivors)
    assert result == {"C0": tps("t0p0 t1p1 t3p0 t2p0"), "C2": tps("t1p0 t2p1 t0p1 t3p1")}


def test_sticky_javadoc_uneven_subscriptions_are_balanced_unlike_round_robin():
    result = cooperative.assign(UNEVEN_TOPICS, UNEVEN_SUBSCRIPTIONS)
    assert result == {"C0": tps("t0p0"), "C1": tps("t1p0 t1p1"), "C2": tps("t2p0 t2p1 t2p2")}


def test_sticky_javadoc_uneven_subscriptions_after_a_leave():
    first = cooperative.assign(UNEVEN_TOPICS, UNEVEN_SUBSCRIPTIONS)
    survivors = rejoin({m: UNEVEN_SUBSCRIPTIONS[m] for m in ("C1", "C2")}, first, generation=1)
    result = cooperative.assign(UNEVEN_TOPICS, survivors)
    assert result == {"C1": tps("t0p0 t1p0 t1p1"), "C2": tps("t2p0 t2p1 t2p2")}


def test_settled_group_keeps_its_assignment():
    subscriptions = rejoin(
        everyone({"t": 5}, "A", "B"), {"A": t(0, 3, 4), "B": t(1, 2)}, generation=7
    )
    assert cooperative.assign({"t": 5}, subscriptions) == {"A": t(0, 3, 4), "B": t(1, 2)}


def test_over_full_member_gives_up_its_highest_partitions():
    subscriptions = rejoin(
        everyone({"t": 4}, "A", "B"), {"A": t(0, 1, 2, 3), "B": []}, generation=1
    )
    assert sticky_assignment({"t": 4}, subscriptions) == {"A": t(0, 1), "B": t(2, 3)}


def test_uneven_subscriptions_pass_a_partition_along_a_chain_when_no_direct_move_helps():
    # Dealt A 3, B 2, C 1: nobody can take from a member 2+ fuller, but A -> B -> C can.
    subscriptions = {"A": Sub(["t1"]), "B": Sub(["t0", "t1"]), "C": Sub(["t0"])}
    assert sticky_assignment({"t0": 2, "t1": 4}, subscriptions) == {
        "A": tps("t1p0 t1p1"),
        "B": tps("t1p2 t1p3"),
        "C": tps("t0p0 t0p1"),
    }


def test_topics_with_fewer_subscribers_are_dealt_first():
    # Either way loads are 1, 1, 0; dealing t1 first leaves t0 for B, its only topic.
    subscriptions = {"A": Sub(["t0", "t1"]), "B": Sub(["t0"]), "C": Sub(["t0", "t1"])}
    assert cooperative.assign({"t0": 1, "t1": 1}, subscriptions) == {
        "A": tps("t1p0"),
        "B": tps("t0p0"),
        "C": [],
    }


def test_over_full_member_passes_on_a_partition_it_did_not_own_before_one_it_did():
    subscriptions = {
        "A": Sub(["t1"], owned_partitions=[("t1", 1)], generation_id=1),
        "B": Sub(["t0", "t1"]),
        "C": Sub(["t0"]),
    }
    result = cooperative.assign({"t0": 1, "t1": 2}, subscriptions)
    assert result == {"A": tps("t1p1"), "B": tps("t1p0"), "C": tps("t0p0")}


def test_free_partitions_are_rebalanced_among_themselves_before_an_owned_one_moves():
    # A second cooperative round: A and B keep what the first round left them.
    subscriptions = {
        "A": Sub(["t0", "t1"], owned_partitions=tps("t0p0 t1p1"), generation_id=2),
        "B": Sub(["t1"], owned_partitions=tps("t1p0"), generation_id=2),
        "C": Sub(["t0", "t1"]),
        "D": Sub(["t0"]),
    }
    assert cooperative.assign({"t0": 2, "t1": 4}, subscriptions) == {
        "A": tps("t0p0 t1p1"),
        "B": tps("t1p0 t1p2"),
        "C": tps("t1p3"),
        "D": tps("t0p1"),
    }


# -- cooperative-sticky: the cooperative rule ----------------------------------------------


def test_joiner_gets_nothing_until_owners_revoke_then_gets_its_share():
    owned = {"A": t(0, 1, 2), "B": t(3, 4, 5), "C": []}
    group = rejoin(everyone({"t": 6}, "A", "B", "C"), owned, generation=1)
    first = cooperative.assign({"t": 6}, group)
    assert first == {"A": t(0, 1), "B": t(3, 4), "C": []}
    second = cooperative.assign({"t": 6}, rejoin(group, first, generation=2))
    assert second == {"A": t(0, 1), "B": t(3, 4), "C": t(2, 5)}


def test_unowned_partitions_are_assigned_at_once():
    group = rejoin(everyone({"t": 4}, "A", "B"), {"A": t(0, 1), "B": []}, generation=1)
    assert cooperative.assign({"t": 4}, group) == {"A": t(0, 1), "B": t(2, 3)}


def test_higher_generation_claim_wins_a_doubly_claimed_partition():
    group = {
        "A": Sub(["t"], owned_partitions=[("t", 0)], generation_id=5),
        "B": Sub(["t"], owned_partitions=[("t", 0), ("t", 1)], generation_id=4),
    }
    assert current_owners({"t": 2}, group) == {("t", 0): {"A"}, ("t", 1): {"B"}}
    assert cooperative.assign({"t": 2}, group) == {"A": [("t", 0)], "B": [("t", 1)]}


def test_stale_claim_of_an_older_generation_does_not_stop_the_owner_keeping_it():
    group = {
        "A": Sub(["t"], owned_partitions=[("t", 0)], generation_id=4),
        "B": Sub(["t"], owned_partitions=[("t", 0), ("t", 1)], generation_id=5),
    }
    # B owns both; balance moves t1 to A, which must wait for B to revoke it.
    assert sticky_assignment({"t": 2}, group) == {"A": [("t", 1)], "B": [("t", 0)]}
    assert cooperative.assign({"t": 2}, group) == {"A": [], "B": [("t", 0)]}


def test_partitions_claimed_twice_in_one_generation_are_kept_by_no_claimant():
    group = {
        "A": Sub(["t"], owned_partitions=t(0, 1), generation_id=3),
        "B": Sub(["t"], owned_partitions=t(0, 1), generation_id=3),
        "C": Sub(["t"]),
    }
    assert current_owners({"t": 4}, group) == {("t", 0): {"A", "B"}, ("t", 1): {"A", "B"}}
    assert sticky_assignment({"t": 4}, group) == {"A": t(0, 3), "B": t(1), "C": t(2)}


def test_partition_claimed_twice_in_one_generation_is_withheld_until_both_revoke():
    group = {
        "A": Sub(["t"], owned_partitions=t(0), generation_id=3),
        "B": Sub(["t"], owned_partitions=t(0), generation_id=3),
        "C": Sub(["t"]),
    }
    first = cooperative.assign({"t": 3}, group)
    assert first == {"A": [], "B": t(1), "C": t(2)}
    second = cooperative.assign({"t": 3}, rejoin(group, first, generation=4))
    assert second == {"A": t(0), "B": t(1), "C": t(2)}


def test_member_leaving_a_topic_keeps_it_until_revoked():
    group = {
        "A": Sub(["u"], owned_partitions=[("t", 0), ("u", 0)], generation_id=2),
        "B": Sub(["t", "u"], owned_partitions=[("u", 1)], generation_id=2),
    }
    assert sticky_assignment({"t": 1, "u": 2}, group) == {
        "A": [("u", 0)],
        "B": [("t", 0), ("u", 1)],
    }
    assert cooperative.assign({"t": 1, "u": 2}, group) == {"A": [("u", 0)], "B": [("u", 1)]}


def test_claims_on_vanished_topics_and_partitions_are_ignored():
    group = {"A": Sub(["t"], owned_partitions=[("gone", 0), ("t", 9)], generation_id=1)}
    assert current_owners({"t": 1}, group) == {}
    assert cooperative.assign({"t": 1}, group) == {"A": [("t", 0)]}
