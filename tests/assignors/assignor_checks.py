"""Builders and invariant checks shared by the assignor tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from assignors import AssignmentSpec, GroupAssignment, MemberSpec, TopicSpec


def topics(**sizes: int) -> dict[str, TopicSpec]:
    """``topics(foo=3)`` -> topic id "foo" named "foo" with 3 partitions."""
    return {tid: TopicSpec(tid, n) for tid, n in sizes.items()}


def group(
    topic_specs: Mapping[str, TopicSpec],
    members: Mapping[str, Mapping[str, Iterable[int]]],
    subscriptions: Mapping[str, Iterable[str]] | None = None,
    racks: Mapping[str, str] | None = None,
) -> AssignmentSpec:
    """A spec: ``members`` maps member id -> current {topic: partitions}.

    Members subscribe to every topic unless ``subscriptions`` says otherwise.
    """
    everything = frozenset(topic_specs)
    specs = {}
    for member_id, current in members.items():
        subs = everything if subscriptions is None else frozenset(subscriptions[member_id])
        specs[member_id] = MemberSpec(
            subscribed_topic_ids=subs,
            assigned_partitions={t: frozenset(ps) for t, ps in current.items()},
            rack_id=(racks or {}).get(member_id),
        )
    return AssignmentSpec(members=specs, topics=dict(topic_specs))


def foo(num_partitions: int, **members: list[int]) -> AssignmentSpec:
    """The case studies' shape: one topic "foo", members' current partitions of it."""
    return group(topics(foo=num_partitions), {m: {"foo": ps} for m, ps in members.items()})


def of(result: GroupAssignment, topic: str = "foo") -> dict[str, list[int]]:
    """Member -> sorted partitions of one topic."""
    return {m: sorted(a.get(topic, ())) for m, a in result.members.items()}


def sizes(result: GroupAssignment) -> dict[str, int]:
    return {m: sum(len(ps) for ps in a.values()) for m, a in result.members.items()}


def owners(result: GroupAssignment) -> dict[tuple[str, int], str]:
    return {(t, p): m for m, a in result.members.items() for t, ps in a.items() for p in ps}


def next_spec(spec: AssignmentSpec, result: GroupAssignment) -> AssignmentSpec:
    """The same group with ``result`` as everyone's current assignment."""
    members = {
        m: MemberSpec(s.subscribed_topic_ids, result.members[m], s.instance_id, s.rack_id)
        for m, s in spec.members.items()
    }
    return AssignmentSpec(members=members, topics=spec.topics)


def without(spec: AssignmentSpec, member_id: str) -> AssignmentSpec:
    members = {m: s for m, s in spec.members.items() if m != member_id}
    return AssignmentSpec(members=members, topics=spec.topics)


def moved(before: GroupAssignment, after: GroupAssignment) -> int:
    """Partitions whose owner changed (a partition that vanished is not a move)."""
    old = owners(before)
    return sum(1 for tp, m in owners(after).items() if tp in old and old[tp] != m)


def check_complete(spec: AssignmentSpec, result: GroupAssignment) -> None:
    """Each partition of a subscribed topic exactly once, to a subscriber; nothing else."""
    assert set(result.members) == set(spec.members)
    seen: Counter[tuple[str, int]] = Counter()
    for member_id, assignment in result.members.items():
        member = spec.members[member_id]
        for topic_id, partitions in assignment.items():
            assert isinstance(partitions, frozenset)
            assert partitions, f"{member_id} has an empty entry for {topic_id}"
            assert topic_id in member.subscribed_topic_ids, (member_id, topic_id)
            assert topic_id in spec.topics
            for p in partitions:
                assert 0 <= p < spec.topics[topic_id].num_partitions
                seen[(topic_id, p)] += 1
    wanted = {
        (t, p)
        for member in spec.members.values()
        for t in member.subscribed_topic_ids
        if t in spec.topics
        for p in range(spec.topics[t].num_partitions)
    }
    assert set(seen) == wanted
    assert all(count == 1 for count in seen.values())


def check_locally_balanced(spec: AssignmentSpec, result: GroupAssignment) -> None:
    """No owner holds 2+ more partitions than another subscriber of the same topic."""
    load = sizes(result)
    for (topic_id, _), owner in owners(result).items():
        for member_id, member in spec.members.items():
            if topic_id in member.subscribed_topic_ids:
                assert load[owner] - load[member_id] <= 1, (topic_id, owner, member_id, load)
