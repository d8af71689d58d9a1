"""A Connect worker in a ``connect`` group: what it asked for and what it holds.

The kernel's member (``protocol.modern.member``) over the Connect records: its metadata
(instance id, assignors, rebalance timeout) and its current assignment (epoch, state,
connectors and tasks owned and pending revocation). Its units are ``(connector, task)`` pairs
(``units``). Immutable.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from enum import IntEnum
from functools import partial

from protocol.connect import units as u
from protocol.connect.records import (
    ConnectGroupCurrentMemberAssignmentValue,
    ConnectGroupMemberMetadataValue,
)
from protocol.modern.member import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ModernMember,
    fresh_assignment,
)

__all__ = ["JOIN_EPOCH", "LEAVE_EPOCH", "STATIC_LEAVE_EPOCH", "ConnectWorkerMember", "WorkerState"]


Metadata = ConnectGroupMemberMetadataValue
Current = ConnectGroupCurrentMemberAssignmentValue


class WorkerState(IntEnum):
    """Where a worker is on its way to its target (the numbers of Kafka's MemberState)."""

    STABLE = 0  # runs its whole target (or all it can have) at the target epoch
    UNREVOKED = 1  # must stop connectors/tasks before it moves to the new epoch
    UNRELEASED = 2  # at the target epoch, waiting for others to stop what it will run
    UNKNOWN = 3

    @property
    def label(self) -> str:
        return {1: "unrevoked_work", 2: "unreleased_work"}.get(self.value, self.name.lower())




@dataclass(frozen=True)
class ConnectWorkerMember(ModernMember):
    member_id: str
    metadata: Metadata = field(default_factory=Metadata)
    current: Current = field(default_factory=partial(fresh_assignment, Current))

    STATES = WorkerState

    @property
    def assigned(self) -> u.Units:
        """What the coordinator let the worker run (at ``member_epoch``)."""
        return u.of(self.current.connectors, self.current.tasks)

    @property
    def pending_revocation(self) -> u.Units:
        """What the worker must stop before it moves on."""
        return u.of(
            self.current.connectors_pending_revocation, self.current.tasks_pending_revocation
        )

    @property
    def held(self) -> u.Units:
        """Everything the worker may be running: assigned plus pending revocation."""
        return self.assigned | self.pending_revocation

    assigned_units = assigned
    pending_units = pending_revocation

    def unit_fields(self, assigned: Set, pending: Set) -> dict[str, object]:
        connectors, tasks = u.split(assigned)
        pending_connectors, pending_tasks = u.split(pending)
        return {
            "connectors": connectors,
            "tasks": tasks,
            "connectors_pending_revocation": pending_connectors,
            "tasks_pending_revocation": pending_tasks,
        }

    def moved(
        self,
        *,
        state: WorkerState,
        assigned: u.Units,
        pending_revocation: u.Units,
        member_epoch: int | None = None,
        previous_member_epoch: int | None = None,
    ) -> ConnectWorkerMember:
        """The worker with a new current assignment."""
        return self.moved_units(
            state,
            assigned,
            pending_revocation,
            self.member_epoch if member_epoch is None else member_epoch,
            self.previous_member_epoch if previous_member_epoch is None else previous_member_epoch,
        )
