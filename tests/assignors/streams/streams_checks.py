"""Builders and invariant checks shared by the streams task assignor tests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from assignors.streams import (
    AssignmentMemberSpec,
    GroupAssignment,
    GroupSpec,
    MemberAssignment,
    StickyTaskAssignor,
    TaskId,
)

S = "test-subtopology"


@dataclass(frozen=True)
class Topology:
    """A topology: subtopology id -> (tasks, stateful)."""

    shape: Mapping[str, tuple[int, bool]] = field(default_factory=dict)

    def subtopologies(self) -> list[str]:
        return list(self.shape)

    def max_number_of_partitions(self, subtopology_id: str) -> int:
        return self.shape[subtopology_id][0]

    def is_stateful(self, subtopology_id: str) -> bool:
        return self.shape[subtopology_id][1]


def topology(tasks: int, stateful: bool, *subtopologies: str) -> Topology:
    """``tasks`` partitions in each of ``subtopologies`` (default one, ``S``)."""
    return Topology({s: (tasks, stateful) for s in subtopologies or (S,)})


def sets(value: Mapping[str, Iterable[int]] | Iterable[int] | None) -> dict[str, frozenset[int]]:
    """``{sub: parts}`` as frozensets; a bare iterable of ints means subtopology ``S``."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {s: frozenset(ps) for s, ps in value.items()}
    return {S: frozenset(value)}


def member(process: str, active=None, standby=None, warmup=None,
           offsets: Mapping[TaskId, int] | None = None) -> AssignmentMemberSpec:
    return AssignmentMemberSpec(
        instance_id=None, rack_id=None, active_tasks=sets(active), standby_tasks=sets(standby),
        warmup_tasks=sets(warmup), process_id=process, client_tags={},
        task_offsets=dict(offsets or {}), task_end_offsets={},
    )


def assign(members: Mapping[str, AssignmentMemberSpec], topo: Topology,
           standbys: int | None = None) -> GroupAssignment:
    configs = {} if standbys is None else {"num.standby.replicas": str(standbys)}
    return StickyTaskAssignor().assign(GroupSpec(members, configs), topo)


def tasks_of(sets_: Mapping[str, frozenset[int]]) -> set[TaskId]:
    return {TaskId(s, p) for s, ps in sets_.items() for p in ps}


def actives(result: GroupAssignment, *member_ids: str) -> set[TaskId]:
    ids = member_ids or tuple(result.members)
    return set().union(*(tasks_of(result.members[m].active_tasks) for m in ids))


def standbys(result: GroupAssignment, *member_ids: str) -> set[TaskId]:
    ids = member_ids or tuple(result.members)
    return set().union(*(tasks_of(result.members[m].standby_tasks) for m in ids))


def parts(result: GroupAssignment, member_id: str, kind: str = "active") -> set[int]:
    """Partitions of ``S`` the member got as ``kind`` (active or standby)."""
    a = result.members[member_id]
    got = a.active_tasks if kind == "active" else a.standby_tasks
    return set(got.get(S, ()))


def n_active(result: GroupAssignment, *member_ids: str) -> int:
    return sum(len(ps) for m in member_ids for ps in result.members[m].active_tasks.values())


def n_standby(result: GroupAssignment, *member_ids: str) -> int:
    return sum(len(ps) for m in member_ids for ps in result.members[m].standby_tasks.values())


def all_tasks(topo: Topology) -> set[TaskId]:
    return {TaskId(s, p) for s in topo.subtopologies()
            for p in range(topo.max_number_of_partitions(s))}


def check_assignment(spec_members: Mapping[str, AssignmentMemberSpec], topo: Topology,
                     result: GroupAssignment, num_standby: int = 0) -> None:
    """Complete (every task active once), invariant 8, standbys only of stateful tasks, at
    most ``num_standby`` of each and no two copies of a task on one process."""
    assert set(result.members) == set(spec_members)
    counts = Counter(t for a in result.members.values() for t in tasks_of(a.active_tasks))
    if spec_members:
        assert set(counts) == all_tasks(topo)
    assert all(c == 1 for c in counts.values()), counts
    copies: Counter[tuple[str, TaskId]] = Counter()
    replicas: Counter[TaskId] = Counter()
    for mid, a in result.members.items():
        pid = spec_members[mid].process_id
        for t in tasks_of(a.active_tasks):
            copies[(pid, t)] += 1
        for t in tasks_of(a.standby_tasks):
            assert topo.is_stateful(t.subtopology_id), t
            copies[(pid, t)] += 1
            replicas[t] += 1
        assert a.warmup_tasks == {}
    assert all(c == 1 for c in copies.values()), [k for k, c in copies.items() if c > 1]
    assert all(c <= num_standby for c in replicas.values())


def as_current(spec_members: Mapping[str, AssignmentMemberSpec],
               result: GroupAssignment) -> dict[str, AssignmentMemberSpec]:
    """The same members, holding ``result`` as their current assignment."""
    out = {}
    for mid, spec in spec_members.items():
        a: MemberAssignment = result.members[mid]
        out[mid] = member(spec.process_id, a.active_tasks, a.standby_tasks)
    return out
