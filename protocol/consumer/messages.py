"""KIP-848's requests and responses (seed 000): heartbeat, client-side assignment, describe.

Field names are the schemas' names in snake_case; nullable fields default to ``None``, which in
a heartbeat means "unchanged since the last heartbeat". ``protocol.messages`` re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.errors import Errors
from protocol.security.acls import TopicView
from protocol.types import Int8, Int16, Int32

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
    # Not on the wire: what the sender may DESCRIBE, from its listener's authorizer (a regex
    # resolves to those topics only); None: every topic (no authorizer, a super user, a Ray
    # client). Stated on every heartbeat, not "unchanged" when None.
    topic_view: TopicView | None = None


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
    classic: bool = False  # speaks the classic protocol (online migration): member_type 0


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
