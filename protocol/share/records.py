"""A share group's records (KIP-932): the kernel's five, which of its share-partitions may be
assigned, and the state of its share-partitions.

The group, member, target, target epoch, current-assignment and state-partition metadata
records carry Kafka's record type numbers for share groups (10-15 in ``__consumer_offsets``).
A share-partition's state (what Kafka's share coordinator keeps in ``__share_group_state``)
is Cohort's record 110, written in the same log as the group: its start offset and its
in-flight records as batches of consecutive offsets in the same state. Unlike Kafka,
acquisitions are durable too (the owner and the lock deadline), so a reloaded partition never
hands a record to a second consumer while its first lock runs (docs/decisions.md). The share
row of the group-type table names them (``SCHEMAS``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

PartitionMap = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class ShareGroupMemberMetadataKey:
    TYPE: ClassVar[int] = 10
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ShareGroupMemberMetadataValue:
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShareGroupMetadataKey:
    TYPE: ClassVar[int] = 11
    group_id: str


@dataclass(frozen=True)
class ShareGroupMetadataValue:
    epoch: int


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMetadataKey:
    TYPE: ClassVar[int] = 12
    group_id: str


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    # KIP-1263: when the coordinator computed this target (ms; 0: the next may be at once).
    assignment_timestamp: int = 0

    ADDED_FIELDS: ClassVar[int] = 1  # assignment_timestamp: records written before it lack it


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMemberKey:
    TYPE: ClassVar[int] = 13
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMemberValue:
    partitions: PartitionMap = field(default_factory=dict)


@dataclass(frozen=True)
class ShareGroupCurrentMemberAssignmentKey:
    TYPE: ClassVar[int] = 14
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: PartitionMap = field(default_factory=dict)


@dataclass(frozen=True)
class ShareGroupStatePartitionMetadataKey:
    TYPE: ClassVar[int] = 15
    group_id: str


@dataclass(frozen=True)
class ShareGroupStatePartitionMetadataValue:
    """Kafka's record 15: the share-partitions the group may assign, by topic id
    (``initialized_topics``: their state exists), and those being initialised. Kafka's value
    also names each topic and lists topics whose state is being deleted; Cohort deletes a
    share-partition's state with its topic, in the same turn."""

    initializing_topics: PartitionMap = field(default_factory=dict)
    initialized_topics: PartitionMap = field(default_factory=dict)


# ------------------------------------------------------------------ share-partition state


@dataclass(frozen=True)
class InFlightBatch:
    """Offsets ``first_offset..last_offset`` (both included), all in one state: ``state`` is
    a ``RecordState`` number; ``member_id`` and ``lock_deadline_ms`` are set while acquired
    ("" and 0 otherwise)."""

    first_offset: int
    last_offset: int
    state: int
    delivery_count: int
    member_id: str = ""
    lock_deadline_ms: int = 0


@dataclass(frozen=True)
class SharePartitionStateKey:
    TYPE: ClassVar[int] = 110
    group_id: str
    topic_id: str
    partition: int


@dataclass(frozen=True)
class SharePartitionStateValue:
    """Every offset below ``start_offset`` is done (acknowledged, rejected or archived);
    ``batches`` are the in-flight records from it on, in offset order; any offset at or past
    the last batch's end has never been delivered."""

    start_offset: int
    batches: tuple[InFlightBatch, ...] = ()


SCHEMAS: dict[type, type] = {
    ShareGroupMetadataKey: ShareGroupMetadataValue,
    ShareGroupMemberMetadataKey: ShareGroupMemberMetadataValue,
    ShareGroupTargetAssignmentMetadataKey: ShareGroupTargetAssignmentMetadataValue,
    ShareGroupTargetAssignmentMemberKey: ShareGroupTargetAssignmentMemberValue,
    ShareGroupCurrentMemberAssignmentKey: ShareGroupCurrentMemberAssignmentValue,
    ShareGroupStatePartitionMetadataKey: ShareGroupStatePartitionMetadataValue,
    SharePartitionStateKey: SharePartitionStateValue,
}
