"""A member of a ``streams`` group (KIP-1071): its metadata (process, endpoint, client tags,
topology epoch) and the tasks it holds, as active, standby and warm-up tasks.

The kernel's member over the streams records. Only active tasks are exclusive (invariant 8):
they are its units, ``(subtopology id, partition)`` pairs, so the group's ``owners`` map says
who holds each active task and the kernel asserts no task is held active twice. Standby and
warm-up tasks ride along in the same current-assignment record.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field, replace
from enum import IntEnum
from functools import partial

from protocol.modern.member import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ModernMember,
    fresh_assignment,
)
from protocol.partitions import from_pairs, pairs
from protocol.streams.records import (
    StreamsGroupCurrentMemberAssignmentValue,
    StreamsGroupMemberMetadataValue,
    TaskEpoch,
)

__all__ = ["JOIN_EPOCH", "LEAVE_EPOCH", "STATIC_LEAVE_EPOCH", "StreamsGroupMember",
           "StreamsMemberState", "Tasks"]

Metadata = StreamsGroupMemberMetadataValue
Current = StreamsGroupCurrentMemberAssignmentValue
ROLES = ("active", "standby", "warmup")


class StreamsMemberState(IntEnum):
    """Kafka's streams ``MemberState`` numbers."""

    STABLE = 0
    UNREVOKED_TASKS = 1
    UNRELEASED_TASKS = 2
    UNKNOWN = 3

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Tasks:
    """Tasks by role, each a frozenset of ``(subtopology id, partition)``."""

    active: frozenset = frozenset()
    standby: frozenset = frozenset()
    warmup: frozenset = frozenset()

    def __or__(self, other: Tasks) -> Tasks:
        return Tasks(self.active | other.active, self.standby | other.standby,
                     self.warmup | other.warmup)

    def __sub__(self, other: Tasks) -> Tasks:
        return Tasks(self.active - other.active, self.standby - other.standby,
                     self.warmup - other.warmup)

    def __bool__(self) -> bool:
        return bool(self.active or self.standby or self.warmup)

    def contains_any(self, other: Tasks) -> bool:
        return bool(self.active & other.active or self.standby & other.standby
                    or self.warmup & other.warmup)

    def contained_in(self, other: Tasks) -> bool:
        return (self.active <= other.active and self.standby <= other.standby
                and self.warmup <= other.warmup)

    def all(self) -> frozenset:
        return self.active | self.standby | self.warmup

    @classmethod
    def of(cls, active=None, standby=None, warmup=None) -> Tasks:
        """From ``{subtopology: partitions}`` maps (None: none)."""
        return cls(*(frozenset(pairs(x or {})) for x in (active, standby, warmup)))

    def maps(self) -> tuple[dict, dict, dict]:
        return from_pairs(self.active), from_pairs(self.standby), from_pairs(self.warmup)


@dataclass(frozen=True)
class StreamsGroupMember(ModernMember):
    member_id: str
    metadata: Metadata = field(default_factory=Metadata)
    current: Current = field(default_factory=partial(fresh_assignment, Current))

    STATES = StreamsMemberState
    is_classic = False
    uses_client_assignors = False
    server_assignor = None
    client_assignors = ()

    @property
    def rack_id(self) -> str | None:
        return self.metadata.rack_id

    @property
    def process_id(self) -> str:
        return self.metadata.process_id

    @property
    def topology_epoch(self) -> int:
        return self.metadata.topology_epoch

    @property
    def tasks(self) -> Tasks:
        c = self.current
        return Tasks.of(c.active_tasks, c.standby_tasks, c.warmup_tasks)

    @property
    def pending(self) -> Tasks:
        c = self.current
        return Tasks.of(c.active_tasks_pending_revocation, c.standby_tasks_pending_revocation,
                        c.warmup_tasks_pending_revocation)

    # --- the kernel's units: active tasks only ----------------------------------------------

    @property
    def assigned_units(self) -> Set:
        return frozenset(pairs(self.current.active_tasks))

    @property
    def pending_units(self) -> Set:
        return frozenset(pairs(self.current.active_tasks_pending_revocation))

    def unit_fields(self, assigned: Set, pending: Set) -> dict[str, object]:
        return {"active_tasks": from_pairs(assigned),
                "active_tasks_pending_revocation": from_pairs(pending)}

    def moved_tasks(self, state: int, tasks: Tasks, pending: Tasks, member_epoch: int,
                    previous_member_epoch: int) -> StreamsGroupMember:
        """The member with a new current assignment (every role)."""
        a, s, w = tasks.maps()
        pa, ps, pw = pending.maps()
        known = self.task_epochs()
        epochs = tuple(TaskEpoch(sub, p, known.get((sub, p), member_epoch))
                       for sub, p in sorted(tasks.active | pending.active))
        value = Current(member_epoch, previous_member_epoch, int(state), a, s, w, pa, ps, pw,
                        epochs)
        return replace(self, current=value)

    def task_epochs(self) -> dict[tuple[str, int], int]:
        """Each active task held (or pending revocation) -> the epoch it was given at."""
        return {(e.subtopology_id, e.partition): e.epoch for e in self.current.active_task_epochs}

    def away(self) -> StreamsGroupMember:
        """A static member's temporary leave (epoch -2): it keeps every task and its place."""
        return self.moved_tasks(StreamsMemberState.STABLE, self.tasks, Tasks(),
                                STATIC_LEAVE_EPOCH, self.previous_member_epoch)
