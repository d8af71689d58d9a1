"""The range assignor: contiguous ranges, co-partitioning, stickiness within quota."""

from __future__ import annotations

from assignors import AssignmentSpec, MemberSpec, RangeAssignor
from tests.assignors.assignor_checks import (
    check_complete,
    foo,
    group,
    moved,
    next_spec,
    of,
    topics,
    without,
)

range_assignor = RangeAssignor()


def test_members_in_id_order_get_contiguous_ranges_the_first_ones_one_extra():
    result = range_assignor.assign(foo(8, C=[], A=[], B=[]))
    assert of(result) == {"A": [0, 1, 2], "B": [3, 4, 5], "C": [6, 7]}


def test_more_members_than_partitions_leaves_the_last_members_empty():
    result = range_assignor.assign(foo(2, A=[], B=[], C=[]))
    assert result.members == {"A": {"foo": frozenset({0})}, "B": {"foo": frozenset({1})}, "C": {}}


def test_topics_with_equal_sizes_and_subscribers_are_co_partitioned():
    result = range_assignor.assign(group(topics(orders=5, payments=5), {m: {} for m in "XYZ"}))
    assert of(result, "orders") == of(result, "payments") == {"X": [0, 1], "Y": [2, 3], "Z": [4]}


def test_co_partitioning_survives_churn():
    spec = group(topics(a=9, b=9, c=9), {m: {} for m in "ABCD"})
    first = range_assignor.assign(spec)
    after = range_assignor.assign(without(next_spec(spec, first), "A"))
    assert of(after, "a") == of(after, "b") == of(after, "c")
    rejoined = group(topics(a=9, b=9, c=9), {**{m: after.members[m] for m in "BCD"}, "E": {}})
    again = range_assignor.assign(rejoined)
    assert of(again, "a") == of(again, "b") == of(again, "c")


def test_drifted_co_partitioned_topics_are_pulled_back_together_by_majority():
    spec = group(
        topics(a=4, b=4, c=4),
        {
            "A": {"a": [0, 1], "b": [0, 1], "c": [2, 3]},
            "B": {"a": [2, 3], "b": [2, 3], "c": [0, 1]},
        },
    )
    result = range_assignor.assign(spec)
    expected = {"A": [0, 1], "B": [2, 3]}
    assert of(result, "a") == of(result, "b") == of(result, "c") == expected


def test_each_topic_is_ranged_over_its_own_subscribers():
    spec = group(
        topics(a=4, b=3),
        {m: {} for m in "ABC"},
        subscriptions={"A": ["a"], "B": ["a", "b"], "C": ["b"]},
    )
    result = range_assignor.assign(spec)
    check_complete(spec, result)
    assert of(result, "a") == {"A": [0, 1], "B": [2, 3], "C": []}
    assert of(result, "b") == {"A": [], "B": [0, 1], "C": [2]}


def test_member_keeps_current_partitions_within_its_quota():
    result = range_assignor.assign(foo(6, A=[], B=[3, 4, 5], C=[]))
    assert of(result) == {"A": [0, 1], "B": [3, 4], "C": [2, 5]}


def test_only_the_leavers_partitions_move_when_a_member_leaves():
    spec = group(topics(a=10, b=10, c=7), {f"m{i}": {} for i in range(4)})
    before = range_assignor.assign(spec)
    after = range_assignor.assign(without(next_spec(spec, before), "m0"))
    leaver_had = sum(len(ps) for ps in before.members["m0"].values())
    assert moved(before, after) == leaver_had == 8


def test_assignment_of_a_settled_group_is_left_unchanged():
    spec = group(
        topics(a=10, b=3),
        {m: {} for m in "ABCD"},
        subscriptions={"A": ["a"], "B": ["a", "b"], "C": ["a", "b"], "D": ["b"]},
    )
    first = range_assignor.assign(spec)
    assert range_assignor.assign(next_spec(spec, first)).members == first.members


def test_partitions_of_unsubscribed_or_deleted_topics_are_dropped():
    spec = AssignmentSpec(
        members={
            "A": MemberSpec(
                frozenset({"foo", "gone"}),
                {"foo": frozenset({1, 7}), "bar": frozenset({0}), "gone": frozenset({0})},
            )
        },
        topics=topics(foo=2, bar=1),
    )
    assert range_assignor.assign(spec).members == {"A": {"foo": frozenset({0, 1})}}
