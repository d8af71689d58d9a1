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

# Share groups' records live in their room (KIP-932) and are re-exported here with the rest.
from protocol.share.records import (  # noqa: F401
    SHARE_GROUP_KEYS,
    SHARE_GROUP_TYPES,
    SHARE_RECORD_SCHEMAS,
    InFlightBatch,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
    SharePartitionStateKey,
    SharePartitionStateValue,
)

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
class ClassicProtocol:
    name: str
    metadata: bytes = b""


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """Set on a consumer-group member that speaks the classic protocol (online migration)."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...] = ()


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
    # member's epoch. Logs written before the field decode without it (``OPTIONAL_TAIL``).
    assignment_epochs: tuple[PartitionEpochs, ...] = ()

    OPTIONAL_TAIL: ClassVar[int] = 1


# ------------------------------------------------------------------ offsets


@dataclass(frozen=True)
class OffsetCommitKey:
    TYPE: ClassVar[int] = 1
    group_id: str
    topic: str
    partition: int


@dataclass(frozen=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int = -1  # -1: expires by the group's retention rule


# ------------------------------------------------------------------ classic group


@dataclass(frozen=True)
class GroupMetadataKey:
    TYPE: ClassVar[int] = 2
    group_id: str


@dataclass(frozen=True)
class GroupMemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes  # the member's metadata for the group's protocol
    assignment: bytes
    # Every protocol the member supports (Kafka keeps only the chosen one, so a reloaded
    # group would refuse joiners the original accepted).
    protocols: tuple[ClassicProtocol, ...] = ()


@dataclass(frozen=True)
class GroupMetadataValue:
    """A classic group's generation and membership, written as one record (seed 003).

    Written when a generation starts (the join phase completes) and again when its
    assignment arrives (the leader's SyncGroup); ``state`` tells a loading coordinator which.
    ``topics`` is the subscribed topics' metadata as of the generation, so a new coordinator
    can see that partitions changed while nobody was looking (seed 003, failure point 1).
    """

    protocol_type: str
    generation: int
    protocol_name: str | None
    leader: str | None
    current_state_timestamp: int
    members: tuple[GroupMemberMetadata, ...] = ()
    state: str = "empty"
    topics: tuple[TopicMetadataEntry, ...] = ()


@dataclass(frozen=True)
class RebalanceCauseEntry:
    time_ms: int
    generation_id: int
    reason: str
    member_id: str | None = None
    group_instance_id: str | None = None


@dataclass(frozen=True)
class GroupRebalanceHistoryKey:
    """Cohort's own record (not Kafka's): why a group's recent rebalances happened."""

    TYPE: ClassVar[int] = 100
    group_id: str


@dataclass(frozen=True)
class GroupRebalanceHistoryValue:
    causes: tuple[RebalanceCauseEntry, ...] = ()


# ------------------------------------------------------------------ connect group (seed 004)
# Cohort's own record types (Kafka never shipped a ``connect`` group type), numbered in
# Cohort's range next to the rebalance history. A Connect group's units are connectors and
# tasks: connectors are a sorted tuple of names, tasks a ``{connector: (task ids...)}`` map
# (the partition-map shape, so equal assignments encode to equal bytes).

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


# key class -> value class; the codec's registry.
RECORD_SCHEMAS: dict[type, type] = {
    ConsumerGroupMetadataKey: ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey: ConsumerGroupPartitionMetadataValue,
    ConsumerGroupMemberMetadataKey: ConsumerGroupMemberMetadataValue,
    ConsumerGroupTargetAssignmentMetadataKey: ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey: ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupCurrentMemberAssignmentKey: ConsumerGroupCurrentMemberAssignmentValue,
    OffsetCommitKey: OffsetCommitValue,
    GroupMetadataKey: GroupMetadataValue,
    GroupRebalanceHistoryKey: GroupRebalanceHistoryValue,
    ConnectGroupMetadataKey: ConnectGroupMetadataValue,
    ConnectGroupMemberMetadataKey: ConnectGroupMemberMetadataValue,
    ConnectGroupTargetAssignmentMetadataKey: ConnectGroupTargetAssignmentMetadataValue,
    ConnectGroupTargetAssignmentMemberKey: ConnectGroupTargetAssignmentMemberValue,
    ConnectGroupCurrentMemberAssignmentKey: ConnectGroupCurrentMemberAssignmentValue,
    **SHARE_RECORD_SCHEMAS,
}

# The key types of a consumer group's records (its row of ``protocol/group_types.py`` replays
# them). Its metadata tombstone deletes the whole consumer group: every record of these types
# whose first key field is the group id. Offsets and the rebalance history are not part of it
# (a group converted between protocols keeps both); deleting a group writes their tombstones
# one by one, as Kafka does.
CONSUMER_GROUP_KEYS: tuple[type, ...] = (
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupCurrentMemberAssignmentKey,
)
CONSUMER_GROUP_TYPES = frozenset(k.TYPE for k in CONSUMER_GROUP_KEYS)

# The same for a Connect group: its metadata tombstone deletes every record of these types.
CONNECT_GROUP_KEYS: tuple[type, ...] = (
    ConnectGroupMetadataKey,
    ConnectGroupMemberMetadataKey,
    ConnectGroupTargetAssignmentMetadataKey,
    ConnectGroupTargetAssignmentMemberKey,
    ConnectGroupCurrentMemberAssignmentKey,
)
CONNECT_GROUP_TYPES = frozenset(k.TYPE for k in CONNECT_GROUP_KEYS)

# group metadata record type -> the record types its tombstone takes with it (compaction).
GROUP_TOMBSTONE_SCOPE: dict[int, frozenset[int]] = {
    ConsumerGroupMetadataKey.TYPE: CONSUMER_GROUP_TYPES,
    ConnectGroupMetadataKey.TYPE: CONNECT_GROUP_TYPES,
    ShareGroupMetadataKey.TYPE: SHARE_GROUP_TYPES,
}
