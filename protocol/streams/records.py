"""A streams group's records (KIP-1071), with Kafka's record type numbers (17, 19-23).

The kernel's five (group epoch, member metadata, target per member, target epoch, current
assignment) and the topology the first member sent (record 23). Tasks are
``{subtopology id: (partitions...)}`` maps, the shape the codec already writes sorted, so equal
state is equal bytes. What Kafka keeps only in memory stays out: the configured topology (it is
computed again from the topology and the metadata image), the endpoint epoch and a member's
shutdown request. The streams row names them (``SCHEMAS``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

TaskMap = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class KeyValue:
    key: str
    value: str


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int


@dataclass(frozen=True)
class TopicInfo:
    """An internal topic the topology names: partitions 0 means "as the coordinator sizes it";
    replication factor 0 means the cluster's default."""

    name: str
    partitions: int = 0
    replication_factor: int = 0
    topic_configs: tuple[KeyValue, ...] = ()


@dataclass(frozen=True)
class CopartitionGroup:
    """Indexes into the subtopology's ``source_topics`` / ``repartition_source_topics``."""

    source_topics: tuple[int, ...] = ()
    source_topic_regex: tuple[int, ...] = ()
    repartition_source_topics: tuple[int, ...] = ()


@dataclass(frozen=True)
class Subtopology:
    subtopology_id: str
    source_topics: tuple[str, ...] = ()
    source_topic_regex: tuple[str, ...] = ()
    state_changelog_topics: tuple[TopicInfo, ...] = ()
    repartition_sink_topics: tuple[str, ...] = ()
    repartition_source_topics: tuple[TopicInfo, ...] = ()
    copartition_groups: tuple[CopartitionGroup, ...] = ()


@dataclass(frozen=True)
class StreamsGroupMetadataKey:
    TYPE: ClassVar[int] = 17
    group_id: str


@dataclass(frozen=True)
class StreamsGroupMetadataValue:
    """The group epoch; the hash of the source topics' metadata it was computed at; the topology
    epoch last found ready (-1: none); the assignment configs the target was computed with."""

    epoch: int
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    last_assignment_configs: tuple[KeyValue, ...] = ()


@dataclass(frozen=True)
class StreamsGroupTopologyKey:
    TYPE: ClassVar[int] = 23
    group_id: str


@dataclass(frozen=True)
class StreamsGroupTopologyValue:
    epoch: int
    subtopologies: tuple[Subtopology, ...] = ()


@dataclass(frozen=True)
class StreamsGroupMemberMetadataKey:
    TYPE: ClassVar[int] = 19
    group_id: str
    member_id: str


@dataclass(frozen=True)
class StreamsGroupMemberMetadataValue:
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: Endpoint | None = None
    client_tags: tuple[KeyValue, ...] = ()


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMetadataKey:
    TYPE: ClassVar[int] = 20
    group_id: str


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    # KIP-1263 (Kafka 4.3+'s tagged AssignmentTimestamp): when the coordinator's assignor
    # computed this target (ms; 0: not computed by it, so the next may be computed at once).
    assignment_timestamp: int = 0

    ADDED_FIELDS: ClassVar[int] = 1  # assignment_timestamp: records written before it lack it


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMemberKey:
    TYPE: ClassVar[int] = 21
    group_id: str
    member_id: str


@dataclass(frozen=True)
class StreamsGroupTargetAssignmentMemberValue:
    active_tasks: TaskMap = field(default_factory=dict)
    standby_tasks: TaskMap = field(default_factory=dict)
    warmup_tasks: TaskMap = field(default_factory=dict)


@dataclass(frozen=True)
class TaskEpoch:
    """The member epoch at which a member was given an active task (Kafka's AssignmentEpochs):
    a commit at an older epoch may land for the task's partitions only from this epoch on."""

    subtopology_id: str
    partition: int
    epoch: int


@dataclass(frozen=True)
class StreamsGroupCurrentMemberAssignmentKey:
    TYPE: ClassVar[int] = 22
    group_id: str
    member_id: str


@dataclass(frozen=True)
class StreamsGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    active_tasks: TaskMap = field(default_factory=dict)
    standby_tasks: TaskMap = field(default_factory=dict)
    warmup_tasks: TaskMap = field(default_factory=dict)
    active_tasks_pending_revocation: TaskMap = field(default_factory=dict)
    standby_tasks_pending_revocation: TaskMap = field(default_factory=dict)
    warmup_tasks_pending_revocation: TaskMap = field(default_factory=dict)
    active_task_epochs: tuple[TaskEpoch, ...] = ()


# The group's own record first (its tombstone deletes the group and, in compaction, the rest).
SCHEMAS: dict[type, type] = {
    StreamsGroupMetadataKey: StreamsGroupMetadataValue,
    StreamsGroupTopologyKey: StreamsGroupTopologyValue,
    StreamsGroupMemberMetadataKey: StreamsGroupMemberMetadataValue,
    StreamsGroupTargetAssignmentMetadataKey: StreamsGroupTargetAssignmentMetadataValue,
    StreamsGroupTargetAssignmentMemberKey: StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupCurrentMemberAssignmentKey: StreamsGroupCurrentMemberAssignmentValue,
}
