"""The streams task assignor's input and output (KIP-1071), as the coordinator hands them over.

A task is one partition of one subtopology: ``TaskId("1", 3)`` reads the fourth partition of
each of subtopology ``1``'s source topics. Task sets travel as ``{subtopology id: partitions}``
because that is how the heartbeat carries them and how members report what they own.

The spec is frozen data, so an assignor is a pure function of it: the same spec and topology
give the same assignment on every coordinator.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

# The group config the coordinator passes in ``GroupSpec.assignment_configs`` (from
# ``streams.num.standby.replicas``); missing means no standbys.
NUM_STANDBY_REPLICAS = "num.standby.replicas"

TaskSets = Mapping[str, frozenset[int]]
_NO_TASKS: TaskSets = {}


class TaskAssignorError(Exception):
    """The assignment cannot be computed: a malformed config, or active tasks and no member."""


@dataclass(frozen=True, order=True)
class TaskId:
    """One task; ordered by subtopology id, then partition."""

    subtopology_id: str
    partition: int


@dataclass(frozen=True)
class AssignmentMemberSpec:
    """What the assignor knows of one member: where it runs and what it holds.

    ``active_tasks``/``standby_tasks``/``warmup_tasks`` are the tasks the member holds now
    (Kafka 4.4's ``assignedTasks``: neither those pending revocation nor those its target has
    yet to hand it), what stickiness preserves. ``task_offsets`` are the changelog offset sums
    the member reported for tasks with state on its local disk (also for tasks it holds no
    longer, after a restart), ``task_end_offsets`` their end offsets. ``instance_id``,
    ``rack_id``, ``client_tags`` and ``task_end_offsets`` are carried for the coordinator's
    and later assignors' sake; Kafka 4.4's sticky assignor does not read them.
    """

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
    """Every member of the group by member id, and the group's assignment configs."""

    members: Mapping[str, AssignmentMemberSpec]
    assignment_configs: Mapping[str, str] = field(default_factory=dict)


class TopologyDescriber(Protocol):
    """The configured topology as the assignor needs it: the subtopologies, how many tasks
    each has (its largest source topic's partition count) and whether it keeps state."""

    def subtopologies(self) -> list[str]: ...

    def max_number_of_partitions(self, subtopology_id: str) -> int: ...

    def is_stateful(self, subtopology_id: str) -> bool: ...


@dataclass(frozen=True)
class MemberAssignment:
    """One member's target: subtopology id -> partitions, empty subtopologies left out."""

    active_tasks: TaskSets = field(default_factory=dict)
    standby_tasks: TaskSets = field(default_factory=dict)
    warmup_tasks: TaskSets = field(default_factory=dict)


@dataclass(frozen=True)
class GroupAssignment:
    """The target assignment: an entry (maybe empty) for every member of the spec."""

    members: Mapping[str, MemberAssignment]


def num_standby_replicas(configs: Mapping[str, str]) -> int:
    """``num.standby.replicas`` from the configs: 0 when absent, an error when not a
    non-negative integer (the coordinator validates group configs, so this is a bug upstream)."""
    raw = configs.get(NUM_STANDBY_REPLICAS)
    if raw is None:
        return 0
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise TaskAssignorError(f"{NUM_STANDBY_REPLICAS} must be an integer, got {raw!r}") from None
    if value < 0:
        raise TaskAssignorError(f"{NUM_STANDBY_REPLICAS} must not be negative, got {value}")
    return value


def task_ids(sets: TaskSets) -> list[TaskId]:
    """The tasks of a ``{subtopology: partitions}`` mapping, sorted."""
    return sorted(TaskId(s, p) for s, parts in sets.items() for p in parts)


def compact(tasks: list[TaskId] | set[TaskId]) -> dict[str, frozenset[int]]:
    """``{subtopology: partitions}`` of a task collection, subtopologies in sorted order."""
    out: dict[str, set[int]] = {}
    for task in tasks:
        out.setdefault(task.subtopology_id, set()).add(task.partition)
    return {s: frozenset(out[s]) for s in sorted(out)}
