"""TEMPORARY stand-in for the streams task assignor (the ``streamsassign`` branch brings the
real sticky one behind this same import path; this file is replaced at merge).

Same interface: ``StickyTaskAssignor().assign(GroupSpec(members, assignment_configs),
topology_describer) -> GroupAssignment``. Active tasks round-robin over the members in id
order, keeping a task on its current owner while that owner has room; standbys
(``num.standby.replicas``) of stateful subtopologies go to the next members that do not hold
the task active and are not in the active owner's process.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

NUM_STANDBY_REPLICAS = "num.standby.replicas"
TaskSets = Mapping[str, frozenset[int]]


@dataclass(frozen=True, order=True)
class TaskId:
    subtopology_id: str
    partition: int


@dataclass(frozen=True)
class AssignmentMemberSpec:
    instance_id: str | None
    rack_id: str | None
    active_tasks: TaskSets
    standby_tasks: TaskSets
    warmup_tasks: TaskSets
    process_id: str
    client_tags: Mapping[str, str] = field(default_factory=dict)
    task_offsets: Mapping[TaskId, int] = field(default_factory=dict)
    task_end_offsets: Mapping[TaskId, int] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupSpec:
    members: Mapping[str, AssignmentMemberSpec]
    assignment_configs: Mapping[str, str] = field(default_factory=dict)


class TopologyDescriber(Protocol):
    def subtopologies(self) -> list[str]: ...

    def max_number_of_partitions(self, subtopology_id: str) -> int: ...

    def is_stateful(self, subtopology_id: str) -> bool: ...


@dataclass(frozen=True)
class MemberAssignment:
    active_tasks: TaskSets = field(default_factory=dict)
    standby_tasks: TaskSets = field(default_factory=dict)
    warmup_tasks: TaskSets = field(default_factory=dict)


@dataclass(frozen=True)
class GroupAssignment:
    members: Mapping[str, MemberAssignment]


def _compact(tasks: set[TaskId]) -> dict[str, frozenset[int]]:
    out: dict[str, set[int]] = {}
    for t in tasks:
        out.setdefault(t.subtopology_id, set()).add(t.partition)
    return {s: frozenset(out[s]) for s in sorted(out)}


class StickyTaskAssignor:
    NAME = "sticky"

    def assign(self, spec: GroupSpec, topology: TopologyDescriber) -> GroupAssignment:
        ids = sorted(spec.members)
        if not ids:
            return GroupAssignment({})
        tasks = [TaskId(s, p) for s in sorted(topology.subtopologies())
                 for p in range(topology.max_number_of_partitions(s))]
        quota = -(-len(tasks) // len(ids))
        active: dict[str, set[TaskId]] = {mid: set() for mid in ids}
        owner: dict[TaskId, str] = {}
        for mid in ids:  # stickiness: keep what a member holds while it has room
            for s, ps in spec.members[mid].active_tasks.items():
                for p in sorted(ps):
                    t = TaskId(s, p)
                    if t in set(tasks) and t not in owner and len(active[mid]) < quota:
                        active[mid].add(t)
                        owner[t] = mid
        i = 0
        for t in tasks:
            if t in owner:
                continue
            while len(active[ids[i % len(ids)]]) >= quota:
                i += 1
            active[ids[i % len(ids)]].add(t)
            owner[t] = ids[i % len(ids)]
            i += 1
        replicas = int(spec.assignment_configs.get(NUM_STANDBY_REPLICAS, "0") or 0)
        standby: dict[str, set[TaskId]] = {mid: set() for mid in ids}
        for n, t in enumerate(tasks):
            if not topology.is_stateful(t.subtopology_id):
                continue
            process = spec.members[owner[t]].process_id
            placed = 0
            for k in range(len(ids)):
                mid = ids[(n + 1 + k) % len(ids)]
                if placed >= replicas:
                    break
                if mid != owner[t] and spec.members[mid].process_id != process:
                    standby[mid].add(t)
                    placed += 1
        return GroupAssignment({
            mid: MemberAssignment(_compact(active[mid]), _compact(standby[mid]), {})
            for mid in ids
        })


__all__ = [
    "AssignmentMemberSpec", "GroupAssignment", "GroupSpec", "MemberAssignment",
    "StickyTaskAssignor", "TaskId", "TopologyDescriber",
]
