"""The classic group protocol's requests and responses: JoinGroup (with KIP-800's reason),
SyncGroup, Heartbeat, LeaveGroup (batched), DescribeGroups. ``protocol.messages`` re-exports
them."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.errors import Errors
from protocol.types import Int16, Int32, Int64

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
    # The group's type: a group of another type is shown in the classic shape to Cohort's own
    # callers; Kafka's wire says such a group is not found (``protocol.wire.classic``).
    group_type: str = "classic"


@dataclass
class DescribeGroupsResponse:
    throttle_time_ms: Int32 = 0
    groups: list[DescribeGroupsResponseGroup] = field(default_factory=list)
