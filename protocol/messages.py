"""Requests and responses, as dataclasses mirroring the seeds' JSON message schemas.

Field names are the schemas' names in snake_case; nested structs keep the names Kafka's JSON
specs give them (``TopicPartitions``, ``Assignor``, ``DescribedGroup``...). Nullable fields
default to ``None``, which in a heartbeat means "unchanged since the last heartbeat". Topic
ids are strings (Kafka's are UUIDs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.errors import Errors
from protocol.types import Int8, Int16, Int32, Int64

# ---------------------------------------------------------------------------- common structs


@dataclass
class TopicPartitions:
    topic_id: str
    partitions: list[Int32]


@dataclass
class Assignor:
    """A client-side assignor the member supports, with its metadata version range."""

    name: str
    minimum_version: Int16 = 0
    maximum_version: Int16 = 0
    reason: Int8 = 0
    metadata_version: Int16 = 0
    metadata_bytes: bytes = b""


# ----------------------------------------------------------------- ConsumerGroupHeartbeat


@dataclass
class ConsumerGroupHeartbeatRequest:
    group_id: str
    member_id: str = ""
    member_epoch: Int32 = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: Int32 = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    client_assignors: list[Assignor] | None = None
    topic_partitions: list[TopicPartitions] | None = None
    # Not in the seed's schema but in every Kafka request header: who sent it.
    client_id: str = ""
    client_host: str = ""


@dataclass
class HeartbeatAssignment:
    """The ``Assignment`` struct of the heartbeat response."""

    error: Int8 = 0
    assigned_topic_partitions: list[TopicPartitions] = field(default_factory=list)
    pending_topic_partitions: list[TopicPartitions] = field(default_factory=list)
    metadata_version: Int16 = 0
    metadata_bytes: bytes = b""


@dataclass
class ConsumerGroupHeartbeatResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: Int32 = 0
    should_compute_assignment: bool = False
    heartbeat_interval_ms: Int32 = 0
    assignment: HeartbeatAssignment | None = None


# ------------------------------------------------------- ConsumerGroupPrepareAssignment


@dataclass
class ConsumerGroupPrepareAssignmentRequest:
    group_id: str
    member_id: str
    member_epoch: Int32


@dataclass
class PrepareAssignmentAssignor:
    """The chosen assignor's metadata as one member reported it."""

    reason: Int8 = 0
    version: Int16 = 0
    metadata: bytes = b""


@dataclass
class PrepareAssignmentMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    subscribed_topic_ids: list[str]
    assignor: PrepareAssignmentAssignor
    # The member's current target partitions: what a sticky client assignor starts from.
    topic_partitions: list[TopicPartitions]


@dataclass
class PrepareAssignmentTopic:
    topic_id: str
    topic_name: str
    num_partitions: Int32


@dataclass
class ConsumerGroupPrepareAssignmentResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    group_id: str = ""
    group_epoch: Int32 = -1
    assignor_name: str = ""
    # The metadata version every member understands: the chosen member must encode with it.
    minimum_version: Int16 = -1
    maximum_version: Int16 = -1
    members: list[PrepareAssignmentMember] = field(default_factory=list)
    topics: list[PrepareAssignmentTopic] = field(default_factory=list)


# ------------------------------------------------------- ConsumerGroupInstallAssignment


@dataclass
class InstallAssignmentMember:
    member_id: str
    error: Int8 = 0
    topic_partitions: list[TopicPartitions] = field(default_factory=list)
    metadata_version: Int16 = 0
    metadata_bytes: bytes = b""


@dataclass
class ConsumerGroupInstallAssignmentRequest:
    group_id: str
    member_id: str
    member_epoch: Int32
    # The group epoch the assignment was computed for (from PrepareAssignment).
    group_epoch: Int32
    error: Int8 = 0
    members: list[InstallAssignmentMember] = field(default_factory=list)


@dataclass
class ConsumerGroupInstallAssignmentResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None


# --------------------------------------------------------------- ConsumerGroupDescribe


@dataclass
class ConsumerGroupDescribeRequest:
    group_ids: list[str]
    include_authorized_operations: bool = False


@dataclass
class DescribedTopicPartitions:
    topic_id: str
    topic_name: str
    partitions: list[Int32]


@dataclass
class DescribedAssignment:
    topic_partitions: list[DescribedTopicPartitions] = field(default_factory=list)


@dataclass
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: Int32
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    subscribed_topic_regex: str | None
    assignment: DescribedAssignment
    target_assignment: DescribedAssignment
    # Cohort's additions (not in Kafka's describe): the reconciler's view of the member.
    member_state: str = "stable"
    pending_topic_partitions: list[DescribedTopicPartitions] = field(default_factory=list)


@dataclass
class DescribedGroup:
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    group_id: str = ""
    group_state: str = ""
    group_epoch: Int32 = -1
    assignment_epoch: Int32 = -1
    assignor_name: str = ""
    members: list[DescribedMember] = field(default_factory=list)
    authorized_operations: Int32 = -(2**31)


@dataclass
class ConsumerGroupDescribeResponse:
    throttle_time_ms: Int32 = 0
    groups: list[DescribedGroup] = field(default_factory=list)


# ------------------------------------------------------------------------- ListGroups


@dataclass
class ListGroupsRequest:
    states_filter: list[str] = field(default_factory=list)
    types_filter: list[str] = field(default_factory=list)


@dataclass
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str


@dataclass
class ListGroupsResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    groups: list[ListedGroup] = field(default_factory=list)


# ------------------------------------------------------------- classic group protocol


@dataclass
class JoinGroupRequestProtocol:
    name: str
    metadata: bytes = b""


@dataclass
class JoinGroupRequest:
    group_id: str
    session_timeout_ms: Int32
    rebalance_timeout_ms: Int32 = -1
    member_id: str = ""
    group_instance_id: str | None = None
    protocol_type: str = "consumer"
    protocols: list[JoinGroupRequestProtocol] = field(default_factory=list)
    # KIP-800: restart | topic_metadata_change | upgrade | None (unknown).
    reason: str | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None = None
    metadata: bytes = b""


@dataclass
class JoinGroupResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    generation_id: Int32 = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: list[JoinGroupResponseMember] = field(default_factory=list)


@dataclass
class SyncGroupRequestAssignment:
    member_id: str
    assignment: bytes = b""


@dataclass
class SyncGroupRequest:
    group_id: str
    generation_id: Int32
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignments: list[SyncGroupRequestAssignment] = field(default_factory=list)


@dataclass
class SyncGroupResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass
class HeartbeatRequest:
    group_id: str
    generation_id: Int32
    member_id: str
    group_instance_id: str | None = None


@dataclass
class HeartbeatResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None


@dataclass
class MemberIdentity:
    member_id: str = ""
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass
class LeaveGroupRequest:
    group_id: str
    members: list[MemberIdentity] = field(default_factory=list)


@dataclass
class LeaveGroupResponseMember:
    member_id: str
    group_instance_id: str | None = None
    error_code: Int16 = Errors.NONE


@dataclass
class LeaveGroupResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    members: list[LeaveGroupResponseMember] = field(default_factory=list)


@dataclass
class DescribeGroupsRequest:
    groups: list[str]


@dataclass
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    member_metadata: bytes = b""
    member_assignment: bytes = b""


@dataclass
class RebalanceCause:
    """One transition to PreparingRebalance (KIP-800: remember why a rebalance happened)."""

    time_ms: Int64
    generation_id: Int32  # the generation the rebalance leaves
    reason: str
    member_id: str | None = None
    group_instance_id: str | None = None


@dataclass
class DescribeGroupsResponseGroup:
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    group_id: str = ""
    group_state: str = ""
    protocol_type: str = ""
    protocol_data: str = ""
    members: list[DescribedGroupMember] = field(default_factory=list)
    authorized_operations: Int32 = -(2**31)
    # Cohort's additions: the generation, its leader and why the group last rebalanced.
    generation_id: Int32 = -1
    leader: str = ""
    rebalance_history: list[RebalanceCause] = field(default_factory=list)


@dataclass
class DescribeGroupsResponse:
    throttle_time_ms: Int32 = 0
    groups: list[DescribeGroupsResponseGroup] = field(default_factory=list)


# ------------------------------------------------------------------------------ offsets


@dataclass
class OffsetCommitRequestPartition:
    partition_index: Int32
    committed_offset: Int64
    committed_leader_epoch: Int32 = -1
    committed_metadata: str | None = None


@dataclass
class OffsetCommitRequestTopic:
    name: str
    partitions: list[OffsetCommitRequestPartition] = field(default_factory=list)


@dataclass
class OffsetCommitRequest:
    group_id: str
    # The member epoch (new protocol) or the generation (classic); -1 for a simple consumer.
    generation_id_or_member_epoch: Int32 = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: Int64 = -1
    topics: list[OffsetCommitRequestTopic] = field(default_factory=list)


@dataclass
class OffsetCommitResponsePartition:
    partition_index: Int32
    error_code: Int16 = Errors.NONE


@dataclass
class OffsetCommitResponseTopic:
    name: str
    partitions: list[OffsetCommitResponsePartition] = field(default_factory=list)


@dataclass
class OffsetCommitResponse:
    throttle_time_ms: Int32 = 0
    # Cohort's addition: a request-level error (coordinator moved, bad request) in one place.
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    topics: list[OffsetCommitResponseTopic] = field(default_factory=list)


@dataclass
class OffsetFetchRequestTopic:
    name: str
    partition_indexes: list[Int32] = field(default_factory=list)


@dataclass
class OffsetFetchRequest:
    group_id: str
    # Set by a new-protocol member (Kafka's OffsetFetch v9); None for anyone else.
    member_id: str | None = None
    member_epoch: Int32 = -1
    topics: list[OffsetFetchRequestTopic] | None = None  # None: every committed offset
    require_stable: bool = False


@dataclass
class OffsetFetchResponsePartition:
    partition_index: Int32
    committed_offset: Int64 = -1
    committed_leader_epoch: Int32 = -1
    metadata: str | None = ""
    error_code: Int16 = Errors.NONE


@dataclass
class OffsetFetchResponseTopic:
    name: str
    partitions: list[OffsetFetchResponsePartition] = field(default_factory=list)


@dataclass
class OffsetFetchResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    topics: list[OffsetFetchResponseTopic] = field(default_factory=list)


@dataclass
class OffsetDeleteRequestPartition:
    partition_index: Int32


@dataclass
class OffsetDeleteRequestTopic:
    name: str
    partitions: list[OffsetDeleteRequestPartition] = field(default_factory=list)


@dataclass
class OffsetDeleteRequest:
    group_id: str
    topics: list[OffsetDeleteRequestTopic] = field(default_factory=list)


@dataclass
class OffsetDeleteResponsePartition:
    partition_index: Int32
    error_code: Int16 = Errors.NONE


@dataclass
class OffsetDeleteResponseTopic:
    name: str
    partitions: list[OffsetDeleteResponsePartition] = field(default_factory=list)


@dataclass
class OffsetDeleteResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    topics: list[OffsetDeleteResponseTopic] = field(default_factory=list)


@dataclass
class DeleteGroupsRequest:
    groups_names: list[str]


@dataclass
class DeletableGroupResult:
    group_id: str
    error_code: Int16 = Errors.NONE
    error_message: str | None = None


@dataclass
class DeleteGroupsResponse:
    throttle_time_ms: Int32 = 0
    results: list[DeletableGroupResult] = field(default_factory=list)


# --------------------------------------------------------------------------- fallback


@dataclass
class ErrorResponse:
    """The reply to something that is not a request this coordinator knows."""

    error_code: Int16 = Errors.INVALID_REQUEST
    error_message: str | None = None

