"""The records a shard writes: the only way group state changes, and what replay rebuilds.

Each is a (key, value) pair, as in ``__consumer_offsets``: the key names the thing (a group, a
member's target assignment...) and the value is its latest state; a ``None`` value is a
tombstone. The key classes carry Kafka's record-type numbers (``TYPE``), which the codec writes
first. Partition sets are stored as ``{topic_id: (p0, p1, ...)}`` with sorted partitions, so
equal state always encodes to equal bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

PartitionMap = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class Record:
    key: object
    value: object | None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


# ------------------------------------------------------------------ consumer group (KIP-848)


@dataclass(frozen=True)
class ConsumerGroupMetadataKey:
    TYPE: ClassVar[int] = 3
    group_id: str


@dataclass(frozen=True)
class ConsumerGroupMetadataValue:
    epoch: int


@dataclass(frozen=True)
class TopicMetadataEntry:
    topic_id: str
    topic_name: str
    num_partitions: int
    racks_digest: int = 0


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
class ClientAssignorEntry:
    name: str
    minimum_version: int
    maximum_version: int
    reason: int
    metadata_version: int
    metadata_bytes: bytes


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


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    TYPE: ClassVar[int] = 6
    group_id: str


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


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
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: PartitionMap = field(default_factory=dict)
    partitions_pending_revocation: PartitionMap = field(default_factory=dict)
    error: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""


# key class -> value class; the codec's registry.
RECORD_SCHEMAS: dict[type, type] = {
    ConsumerGroupMetadataKey: ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey: ConsumerGroupPartitionMetadataValue,
    ConsumerGroupMemberMetadataKey: ConsumerGroupMemberMetadataValue,
    ConsumerGroupTargetAssignmentMetadataKey: ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey: ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupCurrentMemberAssignmentKey: ConsumerGroupCurrentMemberAssignmentValue,
}
