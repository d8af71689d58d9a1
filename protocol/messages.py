"""Every request and response Cohort speaks, as dataclasses mirroring the seeds' JSON schemas.

Each group type's messages live in its own room (``consumer/messages``, ``classic/messages``,
``connect/messages``, ``offsets/messages``, ``share/messages``, ``streams/messages``); this
module re-exports all of them, so ``from protocol import messages as m`` reaches every one, and
holds the few that belong to no single room (ListGroups, the fallback reply). Topic ids are
strings (Kafka's are UUIDs).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.classic.messages import (  # noqa: F401
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    DescribeGroupsResponseGroup,
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
    LeaveGroupRequest,
    LeaveGroupResponse,
    LeaveGroupResponseMember,
    MemberIdentity,
    RebalanceCause,
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
)
from protocol.connect.messages import (  # noqa: F401
    ConnectDescribedGroup,
    ConnectDescribedMember,
    ConnectGroupAssignment,
    ConnectGroupDescribeRequest,
    ConnectGroupDescribeResponse,
    ConnectGroupHeartbeatRequest,
    ConnectGroupHeartbeatResponse,
    ConnectGroupInstallAssignmentRequest,
    ConnectGroupInstallAssignmentResponse,
    ConnectGroupPrepareAssignmentRequest,
    ConnectGroupPrepareAssignmentResponse,
    ConnectInstallAssignmentMember,
    ConnectorsAndTasks,
    ConnectorTaskId,
    ConnectorTasks,
    ConnectPrepareAssignmentMember,
)
from protocol.consumer.messages import (  # noqa: F401
    Assignor,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    ConsumerGroupInstallAssignmentRequest,
    ConsumerGroupInstallAssignmentResponse,
    ConsumerGroupPrepareAssignmentRequest,
    ConsumerGroupPrepareAssignmentResponse,
    DescribedAssignment,
    DescribedGroup,
    DescribedMember,
    DescribedTopicPartitions,
    HeartbeatAssignment,
    InstallAssignmentMember,
    PrepareAssignmentAssignor,
    PrepareAssignmentMember,
    PrepareAssignmentTopic,
    TopicPartitions,
)
from protocol.errors import Errors
from protocol.offsets.messages import (  # noqa: F401
    OFFSET_COMMIT_MEMBER_EPOCH_VERSION,
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchResponse,
    OffsetFetchResponsePartition,
    OffsetFetchResponseTopic,
)
from protocol.share.messages import (  # noqa: F401
    AcknowledgementBatch,
    AcquiredRecords,
    AlterShareGroupOffsetsPartition,
    AlterShareGroupOffsetsRequest,
    AlterShareGroupOffsetsResponse,
    AlterShareGroupOffsetsResponseTopic,
    AlterShareGroupOffsetsTopic,
    DeleteShareGroupOffsetsRequest,
    DeleteShareGroupOffsetsResponse,
    DeleteShareGroupOffsetsResponseTopic,
    DescribeShareGroupOffsetsPartition,
    DescribeShareGroupOffsetsRequest,
    DescribeShareGroupOffsetsResponse,
    DescribeShareGroupOffsetsTopic,
    ShareAcknowledgePartition,
    ShareAcknowledgeRequest,
    ShareAcknowledgeResponse,
    ShareAcknowledgeResponsePartition,
    ShareAcknowledgeResponseTopic,
    ShareAcknowledgeTopic,
    ShareDescribedGroup,
    ShareDescribedMember,
    ShareFetchPartition,
    ShareFetchRequest,
    ShareFetchResponse,
    ShareFetchResponsePartition,
    ShareFetchResponseTopic,
    ShareFetchTopic,
    ShareGroupAssignment,
    ShareGroupDescribeRequest,
    ShareGroupDescribeResponse,
    ShareGroupHeartbeatRequest,
    ShareGroupHeartbeatResponse,
    ShareOffsetsEnd,
    ShareOffsetsResponsePartition,
    ShareOffsetsTopic,
)
from protocol.streams.messages import (  # noqa: F401
    CreatableTopic,
    EndpointToPartitions,
    StreamsAssignment,
    StreamsDescribedGroup,
    StreamsDescribedMember,
    StreamsGroupDescribeRequest,
    StreamsGroupDescribeResponse,
    StreamsGroupHeartbeatRequest,
    StreamsGroupHeartbeatResponse,
    StreamsStatus,
    StreamsTopology,
    TaskIds,
    TaskOffset,
)
from protocol.types import Int16, Int32

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


# --------------------------------------------------------------------------- fallback


@dataclass
class ErrorResponse:
    """The reply to something that is not a request this coordinator knows."""

    error_code: Int16 = Errors.INVALID_REQUEST
    error_message: str | None = None
