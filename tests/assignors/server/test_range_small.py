"""The plain-Python range path for small groups gives what the vectorised path gives.

Specs come from range's own output (the input the small path handles) followed by what
happens to a group: members leave and join, subscriptions change, topics grow, shrink or
vanish, two members claim one partition; and from the fully random specs of the property
module (stale input, racks), where the small path must step aside or agree.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from assignors import AssignmentSpec, GroupAssignment, MemberSpec, RangeAssignor, TopicSpec
from assignors.server.range_small import assign_small
from tests.assignors.server.test_assignor_properties import specs

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
range_assignor = RangeAssignor()
TOPICS = [f"t{i}" for i in range(5)]
MEMBERS = [f"m{i}" for i in range(12)]


def reused(spec: AssignmentSpec, result: GroupAssignment) -> set[str]:
    """Members handed their own input mapping back (the same object)."""
    return {m for m, s in spec.members.items() if result.members[m] is s.assigned_partitions}


def assert_same_as_arrays(spec: AssignmentSpec) -> GroupAssignment | None:
    small = assign_small(spec)
    arrays = range_assignor.assign_arrays(spec)
    if small is not None:
        assert small.members == arrays.members
        assert reused(spec, small) == reused(spec, arrays)
    assert range_assignor.assign(spec).members == arrays.members
    return small


@st.composite
def group_histories(draw) -> AssignmentSpec:
    """A spec whose current assignment is range's answer to an earlier state of the group."""
    sizes = {t: draw(st.integers(0, 9)) for t in TOPICS[: draw(st.integers(1, 5))]}
    topics = {t: TopicSpec(f"name-{t}", n) for t, n in sizes.items()}
    homogeneous = draw(st.booleans())
    everything = frozenset(topics)
    subscription = st.frozensets(st.sampled_from(sorted(topics)), min_size=1)
    ids = draw(st.lists(st.sampled_from(MEMBERS), min_size=1, max_size=8, unique=True))
    subs = {m: everything if homogeneous else draw(subscription) for m in ids}
    before = AssignmentSpec({m: MemberSpec(s) for m, s in subs.items()}, topics)
    current = range_assignor.assign_arrays(before).members
    # What happened since: leaves, joins, changed subscriptions, resized or deleted topics.
    left = draw(st.frozensets(st.sampled_from(ids), max_size=len(ids) - 1))
    joined = draw(st.lists(st.sampled_from(MEMBERS), max_size=3, unique=True))
    members = {}
    for m in [*(i for i in ids if i not in left), *(j for j in joined if j not in ids)]:
        sub = subs.get(m, everything)
        if not homogeneous and draw(st.integers(0, 4)) == 0:
            sub = draw(subscription)
        members[m] = MemberSpec(sub, current.get(m, {}))
    if draw(st.booleans()):  # a topic resized
        t = draw(st.sampled_from(sorted(topics)))
        topics = {**topics, t: TopicSpec(f"name-{t}", draw(st.integers(0, 9)))}
    if len(topics) > 1 and draw(st.integers(0, 4)) == 0:  # a topic deleted
        t = draw(st.sampled_from(sorted(topics)))
        topics = {k: v for k, v in topics.items() if k != t}
    if len(members) > 1 and draw(st.integers(0, 4)) == 0:  # a member claims another's share
        a, b = draw(st.lists(st.sampled_from(sorted(members)), min_size=2, max_size=2,
                             unique=True))
        members[a] = MemberSpec(members[a].subscribed_topic_ids, members[b].assigned_partitions)
    return AssignmentSpec(members, topics)


@PROPERTY
@given(group_histories())
def test_small_path_assigns_a_changed_group_as_the_vectorised_path(spec):
    assert_same_as_arrays(spec)


@PROPERTY
@given(st.booleans().flatmap(lambda h: specs(homogeneous=h)))
def test_small_path_on_stale_or_rack_aware_input_steps_aside_or_agrees(spec):
    assert_same_as_arrays(spec)


def test_a_running_group_stays_on_the_small_path_through_a_join():
    topics = {f"t{i}": TopicSpec(f"topic-{i}", 10) for i in range(20)}
    everything = frozenset(topics)
    first = range_assignor.assign(
        AssignmentSpec({f"m{i:02d}": MemberSpec(everything) for i in range(30)}, topics)
    )
    members = {m: MemberSpec(everything, a) for m, a in first.members.items()}
    members["new"] = MemberSpec(everything)
    spec = AssignmentSpec(members, topics)
    small = assert_same_as_arrays(spec)
    assert small is not None  # the property above is not vacuous
    assert len(reused(spec, small)) >= 20  # the members untouched by the join keep theirs


def test_partitions_claimed_by_two_members_stay_with_the_first_in_member_id_order():
    topics = {"a": TopicSpec("a", 4), "b": TopicSpec("b", 4)}
    both = frozenset(topics)
    share = {"a": frozenset({0, 1}), "b": frozenset({0, 1})}
    spec = AssignmentSpec(
        {"m1": MemberSpec(both, share), "m2": MemberSpec(both, dict(share))}, topics
    )
    small = assert_same_as_arrays(spec)
    assert small is not None
    assert small.members["m1"] is spec.members["m1"].assigned_partitions
    assert small.members["m2"] == {"a": frozenset({2, 3}), "b": frozenset({2, 3})}


def test_racks_or_misaligned_assignments_go_to_the_vectorised_path():
    racked = {"a": TopicSpec("a", 2, (frozenset({"r1"}), frozenset({"r2"})))}
    spec = AssignmentSpec({"m": MemberSpec(frozenset({"a"}), rack_id="r1")}, racked)
    assert assign_small(spec) is None
    topics = {"a": TopicSpec("a", 2), "b": TopicSpec("b", 2)}
    split = {"a": frozenset({0}), "b": frozenset({1})}  # one class, two different numbers
    assert assign_small(AssignmentSpec({"m": MemberSpec(frozenset(topics), split)},
                                       topics)) is None
