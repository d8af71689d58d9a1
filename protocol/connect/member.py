"""A Connect worker in a ``connect`` group: what it asked for and what it holds.

As for consumers (``protocol.consumer.member``), a worker *is* its two records, its metadata
(instance id, assignors, rebalance timeout) and its current assignment (epoch, state,
connectors and tasks owned and pending revocation), held as the record values themselves so
the record to write is always just the changed part. Immutable.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from protocol.connect import units as u
from protocol.records import (
    ClientAssignorEntry,
    ConnectGroupCurrentMemberAssignmentValue,
    ConnectGroupMemberMetadataValue,
)

# Epochs with a meaning of their own in the heartbeat (seed 004, as consumers).
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class WorkerState(IntEnum):
    """Where a worker is on its way to its target (the numbers of Kafka's MemberState)."""

    STABLE = 0  # runs its whole target (or all it can have) at the target epoch
    UNREVOKED = 1  # must stop connectors/tasks before it moves to the new epoch
    UNRELEASED = 2  # at the target epoch, waiting for others to stop what it will run
    UNKNOWN = 3

    @property
    def label(self) -> str:
        return {1: "unrevoked_work", 2: "unreleased_work"}.get(self.value, self.name.lower())


def _fresh_assignment() -> ConnectGroupCurrentMemberAssignmentValue:
    return ConnectGroupCurrentMemberAssignmentValue(
        member_epoch=JOIN_EPOCH, previous_member_epoch=-1, state=int(WorkerState.STABLE)
    )


def _read(part: str, name: str) -> Any:
    return property(lambda self: getattr(getattr(self, part), name))


@dataclass(frozen=True)
class ConnectWorkerMember:
    member_id: str
    metadata: ConnectGroupMemberMetadataValue = field(
        default_factory=ConnectGroupMemberMetadataValue
    )
    current: ConnectGroupCurrentMemberAssignmentValue = field(default_factory=_fresh_assignment)

    instance_id = _read("metadata", "instance_id")
    client_id = _read("metadata", "client_id")
    client_host = _read("metadata", "client_host")
    server_assignor = _read("metadata", "server_assignor")
    client_assignors = _read("metadata", "client_assignors")
    rebalance_timeout_ms = _read("metadata", "rebalance_timeout_ms")
    member_epoch = _read("current", "member_epoch")
    previous_member_epoch = _read("current", "previous_member_epoch")

    @property
    def state(self) -> WorkerState:
        s = self.current.state
        return WorkerState(s) if s in WorkerState._value2member_map_ else WorkerState.UNKNOWN

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

    def with_metadata(self, value: ConnectGroupMemberMetadataValue) -> ConnectWorkerMember:
        return replace(self, metadata=value)

    def with_assignment(
        self, value: ConnectGroupCurrentMemberAssignmentValue
    ) -> ConnectWorkerMember:
        return replace(self, current=value)

    def updated(self, **changes: Any) -> ConnectWorkerMember:
        """The worker with some of its metadata fields changed."""
        return replace(self, metadata=replace(self.metadata, **changes))

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
        connectors, tasks = u.split(assigned)
        pending_connectors, pending_tasks = u.split(pending_revocation)
        value = ConnectGroupCurrentMemberAssignmentValue(
            member_epoch=self.member_epoch if member_epoch is None else member_epoch,
            previous_member_epoch=(
                self.previous_member_epoch
                if previous_member_epoch is None
                else previous_member_epoch
            ),
            state=int(state),
            connectors=connectors,
            tasks=tasks,
            connectors_pending_revocation=pending_connectors,
            tasks_pending_revocation=pending_tasks,
        )
        return replace(self, current=value)

    @property
    def uses_client_assignors(self) -> bool:
        return bool(self.client_assignors)

    def client_assignor(self, name: str) -> ClientAssignorEntry | None:
        return next((a for a in self.client_assignors if a.name == name), None)
