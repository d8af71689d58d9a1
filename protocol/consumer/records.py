"""A consumer group's records (KIP-848, seed 000): Kafka's record types 3 to 8.

The group's epoch, the subscribed topics' metadata as of that epoch, and for each member its
metadata, its target assignment and its current assignment, plus the target's epoch. The
consumer row of the group-type table names them (``SCHEMAS``: the codec's registry and the
replay dispatch); the group's metadata tombstone deletes every record of these types whose
first key field is the group id. Offsets and the rebalance history are not part of it (a group
converted between protocols keeps both).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from protocol.records import (
    ClassicMemberMetadata,
    ClientAssignorEntry,
    PartitionMap,
    TopicMetadataEntry,
)
from protocol.security.acls import TopicView


@dataclass(frozen=True)
class ConsumerGroupMetadataKey:
    TYPE: ClassVar[int] = 3
    group_id: str

@dataclass(frozen=True)
class ConsumerGroupMetadataValue:
    epoch: int

@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataKey:
    TYPE: ClassVar[int] = 4
    group_id: str

@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataValue:
    """The metadata of the topics the group subscribes to, as of the last epoch bump."""

    epoch: int
    topics: tuple[TopicMetadataEntry, ...] = ()

@dataclass(frozen=True)
class ConsumerGroupMemberMetadataKey:
    TYPE: ClassVar[int] = 5
    group_id: str
    member_id: str

@dataclass(frozen=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    client_assignors: tuple[ClientAssignorEntry, ...] = ()
    rebalance_timeout_ms: int = -1
    classic_member_metadata: ClassicMemberMetadata | None = None
    # A regex subscriber's view of the topics (``protocol.security.acls.TopicView``): its
    # regex resolves to those it may DESCRIBE. None: every topic (no authorizer where it
    # heartbeats, a super user, a Ray client, or a subscription by names).
    topic_view: TopicView | None = None

    ADDED_FIELDS: ClassVar[int] = 1  # topic_view: records written before it lack it


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    TYPE: ClassVar[int] = 6
    group_id: str

@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    # KIP-1263: when the coordinator's assignor computed this target (ms; 0: not computed by
    # it, so the next target may be computed at once). Kafka 4.3+ keeps it in this record.
    assignment_timestamp: int = 0

    ADDED_FIELDS: ClassVar[int] = 1  # assignment_timestamp: records written before it lack it

@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberKey:
    TYPE: ClassVar[int] = 7
    group_id: str
    member_id: str

@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberValue:
    partitions: PartitionMap = field(default_factory=dict)
    error: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""

@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    TYPE: ClassVar[int] = 8
    group_id: str
    member_id: str

@dataclass(frozen=True)
class PartitionEpochs:
    """Partitions of one topic that a member got at one member epoch (KIP-1251)."""

    topic_id: str
    epoch: int
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: PartitionMap = field(default_factory=dict)
    partitions_pending_revocation: PartitionMap = field(default_factory=dict)
    error: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""
    # KIP-1251 (Kafka 4.3): the member epoch at which the member got each partition it holds
    # (and kept since), which bounds the epochs its commits of that partition may carry. A
    # partition not listed (a record written before this field) counts as got at the
    # member's epoch.
    assignment_epochs: tuple[PartitionEpochs, ...] = ()

    ADDED_FIELDS: ClassVar[int] = 1  # assignment_epochs: records written before it lack it


# key class -> value class, the group's own record first
SCHEMAS: dict[type, type] = {
    ConsumerGroupMetadataKey: ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey: ConsumerGroupPartitionMetadataValue,
    ConsumerGroupMemberMetadataKey: ConsumerGroupMemberMetadataValue,
    ConsumerGroupTargetAssignmentMetadataKey: ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey: ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupCurrentMemberAssignmentKey: ConsumerGroupCurrentMemberAssignmentValue,
}
