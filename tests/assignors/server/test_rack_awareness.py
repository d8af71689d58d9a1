"""Rack awareness: prefer replicas in the member's rack; balance and stickiness win."""

from __future__ import annotations

import pytest

from assignors import RangeAssignor, TopicSpec, UniformAssignor
from tests.assignors.assignor_checks import check_complete, group, of, sizes

R1, R2 = frozenset({"r1"}), frozenset({"r2"})
BOTH = frozenset({"r1", "r2"})


def racked(name: str, *racks: frozenset[str]) -> dict[str, TopicSpec]:
    return {name: TopicSpec(name, len(racks), partition_racks=tuple(racks))}


def test_uniform_gives_members_partitions_with_a_replica_in_their_rack():
    spec = group(racked("foo", R1, R2, R1, R2), {"A": {}, "B": {}}, racks={"A": "r2", "B": "r1"})
    assert of(UniformAssignor().assign(spec)) == {"A": [1, 3], "B": [0, 2]}


def test_uniform_over_quota_member_keeps_its_rack_matched_partitions():
    spec = group(
        racked("foo", R1, R2, R2, R1),
        {"A": {"foo": [0, 1, 2, 3]}, "B": {}},
        racks={"A": "r2", "B": "r1"},
    )
    assert of(UniformAssignor().assign(spec)) == {"A": [1, 2], "B": [0, 3]}


@pytest.mark.parametrize("assignor", [UniformAssignor(), RangeAssignor()])
def test_balance_wins_over_rack_locality(assignor):
    spec = group(racked("foo", R1, R1, R1, R1), {"A": {}, "B": {}}, racks={"A": "r1", "B": "r2"})
    assert sizes(assignor.assign(spec)) == {"A": 2, "B": 2}


@pytest.mark.parametrize("assignor", [UniformAssignor(), RangeAssignor()])
def test_stickiness_wins_over_moving_a_partition_to_its_rack(assignor):
    spec = group(
        racked("foo", R1, R2), {"A": {"foo": [1]}, "B": {"foo": [0]}}, racks={"A": "r1", "B": "r2"}
    )
    assert of(assignor.assign(spec)) == {"A": [1], "B": [0]}


def test_uniform_heterogeneous_group_prefers_rack_matched_partitions():
    topic_specs = {**racked("foo", R1, R2, R1, R2), "bar": TopicSpec("bar", 1)}
    spec = group(
        topic_specs,
        {"A": {}, "B": {}, "C": {}},
        subscriptions={"A": ["foo"], "B": ["foo"], "C": ["bar"]},
        racks={"A": "r1", "B": "r2"},
    )
    result = UniformAssignor().assign(spec)
    check_complete(spec, result)
    assert of(result) == {"A": [0, 2], "B": [1, 3], "C": []}


def test_range_prefers_rack_matches_and_stays_co_partitioned():
    topic_specs = {**racked("a", R2, R1), **racked("b", R2, R1)}
    spec = group(topic_specs, {"A": {}, "B": {}}, racks={"A": "r1", "B": "r2"})
    result = RangeAssignor().assign(spec)
    assert of(result, "a") == of(result, "b") == {"A": [1], "B": [0]}


@pytest.mark.parametrize("assignor", [UniformAssignor(), RangeAssignor()])
def test_replicas_in_every_rack_give_the_rack_blind_assignment(assignor):
    everywhere = group(
        racked("foo", *[BOTH] * 7), {m: {} for m in "ABC"}, racks={"A": "r2", "B": "r1", "C": "r2"}
    )
    blind = group({"foo": TopicSpec("foo", 7)}, {m: {} for m in "ABC"})
    assert assignor.assign(everywhere).members == assignor.assign(blind).members


@pytest.mark.parametrize("assignor", [UniformAssignor(), RangeAssignor()])
def test_members_without_racks_ignore_partition_racks(assignor):
    with_racks = group(racked("foo", R2, R1, R2, R1, R1), {m: {} for m in "AB"})
    blind = group({"foo": TopicSpec("foo", 5)}, {m: {} for m in "AB"})
    assert assignor.assign(with_racks).members == assignor.assign(blind).members
