"""A Connect group's records (seed 004): Cohort's own record types 101 to 105.

Kafka never shipped a ``connect`` group type, so they are numbered in Cohort's range next to
the rebalance history. A Connect group's units are connectors and tasks: connectors are a
sorted tuple of names, tasks a ``{connector: (task ids...)}`` map (the partition-map shape, so
equal assignments encode to equal bytes). The group's metadata tombstone deletes every record
of these types whose first key field is the group id.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from protocol.records import ClassicMemberMetadata, ClientAssignorEntry

TaskMap = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class ConnectorEntry:
    name: str
    task_count: int

@dataclass(frozen=True)
class ConnectGroupMetadataKey:
    TYPE: ClassVar[int] = 101
    group_id: str

@dataclass(frozen=True)
class ConnectGroupMetadataValue:
    """The group epoch, and the group's connectors as of that epoch (what the metadata image
    said when the epoch was bumped: a later image that differs bumps it again)."""

    epoch: int
    connectors: tuple[ConnectorEntry, ...] = ()

@dataclass(frozen=True)
class ConnectGroupMemberMetadataKey:
    TYPE: ClassVar[int] = 102
    group_id: str
    member_id: str

@dataclass(frozen=True)
class ConnectGroupMemberMetadataValue:
    instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    server_assignor: str | None = None
    client_assignors: tuple[ClientAssignorEntry, ...] = ()
    rebalance_timeout_ms: int = -1
    # Set on a worker that speaks the classic protocol (classic Connect <-> connect migration).
    classic_member_metadata: ClassicMemberMetadata | None = None

@dataclass(frozen=True)
class ConnectGroupTargetAssignmentMetadataKey:
    TYPE: ClassVar[int] = 103
    group_id: str

@dataclass(frozen=True)
class ConnectGroupTargetAssignmentMetadataValue:
    assignment_epoch: int

@dataclass(frozen=True)
class ConnectGroupTargetAssignmentMemberKey:
    TYPE: ClassVar[int] = 104
    group_id: str
    member_id: str

@dataclass(frozen=True)
class ConnectGroupTargetAssignmentMemberValue:
    connectors: tuple[str, ...] = ()
    tasks: TaskMap = field(default_factory=dict)
    error: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""

@dataclass(frozen=True)
class ConnectGroupCurrentMemberAssignmentKey:
    TYPE: ClassVar[int] = 105
    group_id: str
    member_id: str

@dataclass(frozen=True)
class ConnectGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    connectors: tuple[str, ...] = ()
    tasks: TaskMap = field(default_factory=dict)
    connectors_pending_revocation: tuple[str, ...] = ()
    tasks_pending_revocation: TaskMap = field(default_factory=dict)


# key class -> value class, the group's own record first
SCHEMAS: dict[type, type] = {
    ConnectGroupMetadataKey: ConnectGroupMetadataValue,
    ConnectGroupMemberMetadataKey: ConnectGroupMemberMetadataValue,
    ConnectGroupTargetAssignmentMetadataKey: ConnectGroupTargetAssignmentMetadataValue,
    ConnectGroupTargetAssignmentMemberKey: ConnectGroupTargetAssignmentMemberValue,
    ConnectGroupCurrentMemberAssignmentKey: ConnectGroupCurrentMemberAssignmentValue,
}
