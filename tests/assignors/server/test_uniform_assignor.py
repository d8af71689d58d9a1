"""The uniform assignor: KIP-848's case studies, balance, stickiness, what gets dropped."""

from __future__ import annotations

import pytest

from assignors import (
    AssignmentSpec,
    MemberSpec,
    PartitionAssignorError,
    TopicSpec,
    UniformAssignor,
)
from tests.assignors.assignor_checks import (
    check_complete,
    check_locally_balanced,
    foo,
    group,
    moved,
    next_spec,
    of,
    owners,
    sizes,
    topics,
    without,
)

uniform = UniformAssignor()


# -- KIP-848 case studies (topic "foo") -------------------------------------------------


def test_lone_member_gets_every_partition():
    assert of(uniform.assign(foo(3, A=[]))) == {"A": [0, 1, 2]}


def test_member_over_quota_releases_its_highest_partitions():
    assert of(uniform.assign(foo(3, A=[0, 1, 2], B=[]))) == {"A": [0, 1], "B": [2]}


def test_third_member_takes_the_partition_released_by_the_over_quota_member():
    result = uniform.assign(foo(3, A=[0, 1], B=[2], C=[]))
    assert of(result) == {"A": [0], "B": [2], "C": [1]}


def test_joining_member_collects_the_surplus_of_every_over_quota_member():
    result = uniform.assign(foo(6, A=[0, 1, 2], B=[3, 4, 5], C=[]))
    assert of(result) == {"A": [0, 1], "B": [3, 4], "C": [2, 5]}


def test_leaver_partitions_go_ascending_to_the_remaining_members_in_member_id_order():
    result = uniform.assign(foo(6, B=[3, 4], C=[2, 5]))
    assert of(result) == {"B": [0, 3, 4], "C": [1, 2, 5]}


def test_added_partition_goes_to_the_member_under_quota():
    assert of(uniform.assign(foo(2, A=[0], B=[]))) == {"A": [0], "B": [1]}


# -- balance and completeness --------------------------------------------------------------


@pytest.mark.parametrize(("members", "partitions"), [(1, 0), (3, 2), (4, 17), (7, 100)])
def test_homogeneous_group_is_balanced_to_within_one(members, partitions):
    spec = group(
        topics(a=partitions // 2, b=partitions - partitions // 2),
        {f"m{i}": {} for i in range(members)},
    )
    result = uniform.assign(spec)
    check_complete(spec, result)
    load = sizes(result).values()
    assert max(load) - min(load) <= 1


def test_fresh_homogeneous_assignment_hands_out_contiguous_runs_in_member_order():
    result = uniform.assign(foo(7, A=[], B=[], C=[]))
    assert of(result) == {"A": [0, 1, 2], "B": [3, 4], "C": [5, 6]}


def test_member_of_a_homogeneous_group_with_vanished_subscription_still_counts_as_homogeneous():
    spec = AssignmentSpec(
        members={
            "A": MemberSpec(frozenset({"foo", "gone"})),
            "B": MemberSpec(frozenset({"foo"})),
        },
        topics=topics(foo=4),
    )
    assert of(uniform.assign(spec)) == {"A": [0, 1], "B": [2, 3]}


def test_heterogeneous_partitions_only_go_to_subscribers_and_are_locally_balanced():
    spec = group(
        topics(a=6, b=3, c=5),
        {m: {} for m in "ABCD"},
        subscriptions={"A": ["a"], "B": ["a", "b"], "C": ["b", "c"], "D": ["c"]},
    )
    result = uniform.assign(spec)
    check_complete(spec, result)
    check_locally_balanced(spec, result)
    assert sorted(sizes(result).values()) == [3, 3, 4, 4]


def test_heterogeneous_subscriber_takes_partitions_from_an_overloaded_member():
    # B just subscribed to "a", which A owned alone; B is not subscribed to anything else.
    spec = group(
        topics(a=6, b=2),
        {"A": {"a": range(6)}, "B": {}, "C": {"b": [0, 1]}},
        subscriptions={"A": ["a"], "B": ["a"], "C": ["b"]},
    )
    result = uniform.assign(spec)
    assert of(result, "a") == {"A": [0, 1, 2], "B": [3, 4, 5], "C": []}
    assert of(result, "b")["C"] == [0, 1]


def test_member_subscribed_to_nothing_gets_an_empty_assignment():
    spec = group(topics(foo=2), {"A": {}, "B": {"foo": [0]}}, subscriptions={"A": ["foo"], "B": []})
    result = uniform.assign(spec)
    assert result.members == {"A": {"foo": frozenset({0, 1})}, "B": {}}


def test_empty_group_gets_an_empty_assignment():
    assert uniform.assign(AssignmentSpec(members={}, topics=topics(foo=3))).members == {}


# -- stickiness ----------------------------------------------------------------------------


def test_only_the_leavers_partitions_move_when_a_member_leaves():
    spec = group(topics(a=50, b=31), {f"m{i:02d}": {} for i in range(9)})
    before = uniform.assign(spec)
    after = uniform.assign(without(next_spec(spec, before), "m04"))
    leaver_had = sum(len(ps) for ps in before.members["m04"].values())
    assert moved(before, after) == leaver_had


def test_joining_member_takes_only_the_surplus():
    spec = group(topics(foo=12), {m: {} for m in "ABC"})
    before = uniform.assign(spec)
    joined = group(
        topics(foo=12), {**{m: {"foo": before.members[m]["foo"]} for m in "ABC"}, "D": {}}
    )
    after = uniform.assign(joined)
    assert moved(before, after) == 3
    assert of(after)["D"] == [3, 7, 11]


def test_assignment_of_a_balanced_group_is_left_unchanged():
    spec = group(topics(a=10, b=7), {m: {} for m in "ABCDE"})
    first = uniform.assign(spec)
    assert uniform.assign(next_spec(spec, first)).members == first.members


def test_static_members_are_treated_like_dynamic_ones():
    spec = AssignmentSpec(
        members={
            "A": MemberSpec(frozenset({"foo"}), {"foo": frozenset({2})}, instance_id="i-9"),
            "B": MemberSpec(frozenset({"foo"}), {"foo": frozenset({0, 1})}, instance_id="i-1"),
        },
        topics=topics(foo=3),
    )
    assert of(uniform.assign(spec)) == {"A": [2], "B": [0, 1]}


# -- what gets dropped ---------------------------------------------------------------------


def test_partitions_of_an_unsubscribed_topic_are_dropped():
    spec = group(topics(a=2, b=2), {"A": {"a": [0, 1], "b": [0, 1]}}, subscriptions={"A": ["a"]})
    assert uniform.assign(spec).members == {"A": {"a": frozenset({0, 1})}}


def test_partitions_of_a_deleted_topic_or_beyond_its_size_are_dropped():
    spec = AssignmentSpec(
        members={
            "A": MemberSpec(
                frozenset({"foo", "gone"}), {"foo": frozenset({0, 5, -1}), "gone": frozenset({0})}
            )
        },
        topics=topics(foo=2),
    )
    assert uniform.assign(spec).members == {"A": {"foo": frozenset({0, 1})}}


def test_a_partition_claimed_twice_stays_with_the_first_member_by_id():
    result = uniform.assign(foo(2, B=[0], A=[0]))
    assert owners(result)[("foo", 0)] == "A"
    assert of(result) == {"A": [0], "B": [1]}


# -- determinism and errors ----------------------------------------------------------------


def test_member_order_in_the_spec_does_not_change_the_result():
    forward = foo(10, A=[9], B=[], C=[0, 1, 2, 3, 4, 5], D=[])
    backward = AssignmentSpec(
        members=dict(reversed(forward.members.items())), topics=forward.topics
    )
    assert uniform.assign(forward).members == uniform.assign(backward).members


def test_negative_partition_count_is_rejected():
    with pytest.raises(PartitionAssignorError):
        uniform.assign(
            AssignmentSpec(
                members={"A": MemberSpec(frozenset({"x"}))}, topics={"x": TopicSpec("x", -1)}
            )
        )


def test_partition_racks_of_the_wrong_length_are_rejected():
    bad = TopicSpec("x", 2, partition_racks=(frozenset({"r1"}),))
    with pytest.raises(PartitionAssignorError):
        uniform.assign(
            AssignmentSpec(members={"A": MemberSpec(frozenset({"x"}))}, topics={"x": bad})
        )
