"""Properties of both server assignors over random groups (hypothesis).

Random specs mix valid and stale input: subscriptions to vanished topics, current
assignments beyond a topic's size, of unsubscribed topics, or claimed by two members;
racks on some members and partitions.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from assignors import AssignmentSpec, MemberSpec, RangeAssignor, TopicSpec, UniformAssignor
from tests.assignors.assignor_checks import (
    check_complete,
    check_locally_balanced,
    moved,
    next_spec,
    sizes,
    without,
)

RACKS = ["r0", "r1", "r2"]
MEMBER_IDS = [f"m{i}" for i in range(10)]
PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])

uniform = UniformAssignor()
range_assignor = RangeAssignor()


@st.composite
def topic_specs(draw) -> dict[str, TopicSpec]:
    count = draw(st.integers(1, 4))
    result = {}
    for i in range(count):
        size = draw(st.integers(0, 12))
        racks = None
        if draw(st.booleans()):
            racks = tuple(
                draw(st.frozensets(st.sampled_from(RACKS), max_size=2)) for _ in range(size)
            )
        result[f"t{i}"] = TopicSpec(f"topic-{i}", size, racks)
    return result


@st.composite
def specs(draw, homogeneous: bool) -> AssignmentSpec:
    topics = draw(topic_specs())
    known = [*sorted(topics), "gone"]
    member_ids = draw(st.lists(st.sampled_from(MEMBER_IDS), min_size=1, max_size=7, unique=True))
    shared = draw(st.frozensets(st.sampled_from(known), min_size=1))
    members = {}
    for member_id in member_ids:
        subs = shared if homogeneous else draw(st.frozensets(st.sampled_from(known)))
        current = {
            t: draw(st.frozensets(st.integers(-1, 13), max_size=6))
            for t in draw(st.frozensets(st.sampled_from(known), max_size=3))
        }
        rack = draw(st.sampled_from([None, *RACKS]))
        members[member_id] = MemberSpec(subs, current, rack_id=rack)
    return AssignmentSpec(members=members, topics=topics)


def reversed_members(spec: AssignmentSpec) -> AssignmentSpec:
    return AssignmentSpec(members=dict(reversed(spec.members.items())), topics=spec.topics)


def per_topic_counts(spec: AssignmentSpec, result) -> dict[str, dict[str, int]]:
    counts: dict[str, dict[str, int]] = defaultdict(dict)
    for member_id, member in spec.members.items():
        for t in member.subscribed_topic_ids & set(spec.topics):
            counts[t][member_id] = len(result.members[member_id].get(t, ()))
    return counts


# -- uniform -------------------------------------------------------------------------------


@PROPERTY
@given(specs(homogeneous=True))
def test_uniform_homogeneous_is_complete_and_balanced_to_within_one(spec):
    result = uniform.assign(spec)
    check_complete(spec, result)
    load = sizes(result).values()
    assert max(load) - min(load) <= 1


@PROPERTY
@given(specs(homogeneous=False))
def test_uniform_heterogeneous_is_complete_and_locally_balanced(spec):
    result = uniform.assign(spec)
    check_complete(spec, result)
    check_locally_balanced(spec, result)


# -- range ---------------------------------------------------------------------------------


@PROPERTY
@given(st.booleans().flatmap(lambda h: specs(homogeneous=h)))
def test_range_is_complete_and_balanced_per_topic(spec):
    result = range_assignor.assign(spec)
    check_complete(spec, result)
    for counts in per_topic_counts(spec, result).values():
        assert max(counts.values()) - min(counts.values()) <= 1


@PROPERTY
@given(st.booleans().flatmap(lambda h: specs(homogeneous=h)))
def test_range_co_partitions_topics_of_equal_size_and_subscribers(spec):
    result = range_assignor.assign(spec)
    classes = defaultdict(list)
    for t, topic in spec.topics.items():
        subscribers = frozenset(m for m, s in spec.members.items() if t in s.subscribed_topic_ids)
        if subscribers:
            classes[(topic.num_partitions, subscribers)].append(t)
    for topic_ids in classes.values():
        views = [{m: a.get(t, frozenset()) for m, a in result.members.items()} for t in topic_ids]
        assert all(view == views[0] for view in views)


# -- both assignors ------------------------------------------------------------------------

BOTH = pytest.mark.parametrize("assignor", [uniform, range_assignor], ids=lambda a: a.name)


@BOTH
@PROPERTY
@given(st.booleans().flatmap(lambda h: specs(homogeneous=h)))
def test_assignment_is_deterministic_and_a_fixed_point_of_its_own_output(assignor, spec):
    result = assignor.assign(spec)
    assert assignor.assign(reversed_members(spec)).members == result.members
    assert assignor.assign(next_spec(spec, result)).members == result.members


@BOTH
@PROPERTY
@given(specs(homogeneous=True), st.integers(0, 6))
def test_homogeneous_leave_moves_only_the_leavers_partitions(assignor, spec, pick):
    assume(len(spec.members) >= 2)
    settled = assignor.assign(spec)
    leaver = sorted(spec.members)[pick % len(spec.members)]
    after = assignor.assign(without(next_spec(spec, settled), leaver))
    assert moved(settled, after) == sum(len(ps) for ps in settled.members[leaver].values())


# -- the way out: unchanged members get their own mapping back -------------------------------


def as_sets(spec: AssignmentSpec) -> AssignmentSpec:
    """The same spec with current assignments as mutable sets: never handed back as is."""
    members = {
        mid: MemberSpec(m.subscribed_topic_ids, {t: set(ps) for t, ps in
                                                  m.assigned_partitions.items()},
                        m.instance_id, m.rack_id)
        for mid, m in spec.members.items()
    }
    return AssignmentSpec(members=members, topics=spec.topics)


def plain(result) -> dict[str, dict[str, list[int]]]:
    return {m: {t: sorted(ps) for t, ps in a.items() if ps} for m, a in result.members.items()}


@BOTH
@PROPERTY
@given(st.booleans().flatmap(lambda h: specs(homogeneous=h)))
def test_handing_a_members_own_mapping_back_gives_what_building_it_afresh_gives(assignor, spec):
    reused, fresh = assignor.assign(spec), assignor.assign(as_sets(spec))
    assert plain(reused) == plain(fresh)
    for member_id, mapping in reused.members.items():
        if mapping is spec.members[member_id].assigned_partitions:
            assert plain(fresh)[member_id] == {t: sorted(ps) for t, ps in mapping.items()}


@BOTH
def test_a_join_hands_every_untouched_member_its_own_mapping_back(assignor):
    topic_specs = {f"t{i}": TopicSpec(f"topic-{i}", 120) for i in range(5)}
    everything = frozenset(topic_specs)
    old = {f"m{i:02d}": MemberSpec(everything) for i in range(50)}
    first = assignor.assign(AssignmentSpec(members=old, topics=topic_specs))
    members = {mid: MemberSpec(everything, first.members[mid]) for mid in old}
    members["new"] = MemberSpec(everything)
    spec = AssignmentSpec(members=members, topics=topic_specs)
    result = assignor.assign(spec)
    kept = [mid for mid in old if result.members[mid] is members[mid].assigned_partitions]
    changed = [mid for mid in old if mid not in kept]
    assert kept and all(plain(result)[mid] != plain(first)[mid] for mid in changed)
    assert result.members["new"]
