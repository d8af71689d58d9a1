"""StreamsGroupHeartbeat v1 and StreamsGroupDescribe v1 as wire entities, in kio's form.

kio (the codec, 0.6.5) knows both APIs at v0 only; Kafka 4.4 serves both at v0-1
(``clients/src/main/resources/common/message/StreamsGroup{Heartbeat,Describe}*.json`` of the
4.4 jar). The entities below are those schemas' v1 written as kio writes its own (frozen
dataclasses whose fields carry ``kafka_type``), so kio's reader and writer handle them like
any other; the nested structures v1 shares with v0 are kio's. ``OWN_SCHEMAS`` names them by
(API key, version); the API table's rows carry them (``Api.own_schemas``) and the codec asks
there before kio.

What v1 adds:

* StreamsGroupHeartbeat request: nothing (bumped so that the reply's v1 is negotiated, and so
  that the broker may answer the MISSING_CLIENT_TAGS status, KAFKA-20744).
* StreamsGroupHeartbeat reply: ``acceptable_recovery_lag`` becomes an int64 after
  ``task_offset_interval`` (v0's int32 before it is Kafka's "legacy" field, which 4.4 never
  fills: a v0 reply carries 0 there), and ``topology_description_required`` (KIP-1331) comes
  after the warm-up tasks.
* StreamsGroupDescribe request: ``include_topology_description`` (KIP-1331).
* StreamsGroupDescribe reply, per group: ``topology_description`` (nullable),
  ``topology_description_status`` (0 not requested, 1 not stored, 2 error, 3 available) and
  ``assignor_name`` (KIP-1357; null on a describe error).

Kafka 4.4 also serves StreamsGroupTopologyDescriptionUpdate (93) v0, a member's push of its
topology description, which a broker without the topology description plugin (Kafka's default,
and Cohort) refuses: its entities are here too.
"""

# No ``from __future__ import annotations`` here: kio reads each field's type at run time.
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.errors import ErrorCode
from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.schema.streams_group_describe.v0 import response as described_v0
from kio.schema.streams_group_heartbeat.v0 import request as heartbeat_v0
from kio.schema.streams_group_heartbeat.v0 import response as heartbeat_reply_v0
from kio.schema.types import GroupId, TopicName
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i32Timedelta, i64

HEARTBEAT, DESCRIBE, TOPOLOGY_DESCRIPTION_UPDATE = 88, 89, 93


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroupHeartbeatRequest(heartbeat_v0.StreamsGroupHeartbeatRequest):
    """v1: v0's fields, unchanged."""

    __version__: ClassVar[i16] = i16(1)


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroupHeartbeatResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(HEARTBEAT)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    member_id: str = field(metadata={"kafka_type": "string"})
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    heartbeat_interval: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    task_offset_interval: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    acceptable_recovery_lag: i64 = field(metadata={"kafka_type": "int64"}, default=i64(-1))
    status: tuple[heartbeat_reply_v0.Status, ...] | None
    active_tasks: tuple[heartbeat_reply_v0.TaskIds, ...] | None
    standby_tasks: tuple[heartbeat_reply_v0.TaskIds, ...] | None
    warmup_tasks: tuple[heartbeat_reply_v0.TaskIds, ...] | None
    topology_description_required: bool = field(metadata={"kafka_type": "bool"}, default=False)
    endpoint_information_epoch: i32 = field(metadata={"kafka_type": "int32"})
    partitions_by_user_endpoint: tuple[heartbeat_reply_v0.EndpointToPartitions, ...] | None


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroupDescribeRequest:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(DESCRIBE)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    group_ids: tuple[GroupId, ...] = field(metadata={"kafka_type": "string"}, default=())
    include_authorized_operations: bool = field(metadata={"kafka_type": "bool"})
    include_topology_description: bool = field(metadata={"kafka_type": "bool"}, default=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyDescriptionNode:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(DESCRIBE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    name: str = field(metadata={"kafka_type": "string"})
    node_type: i8 = field(metadata={"kafka_type": "int8"})  # 1 source, 2 processor, 3 sink
    source_topics: tuple[TopicName, ...] = field(metadata={"kafka_type": "string"}, default=())
    sink_topic: TopicName | None = field(metadata={"kafka_type": "string"}, default=None)
    stores: tuple[str, ...] = field(metadata={"kafka_type": "string"}, default=())
    successors: tuple[str, ...] = field(metadata={"kafka_type": "string"}, default=())


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyDescriptionSubtopology:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(DESCRIBE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    subtopology_id: str = field(metadata={"kafka_type": "string"})
    nodes: tuple[TopologyDescriptionNode, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyDescriptionGlobalStore:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(DESCRIBE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    source: TopologyDescriptionNode
    processor: TopologyDescriptionNode


@dataclass(frozen=True, slots=True, kw_only=True)
class TopologyDescription:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(DESCRIBE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    subtopologies: tuple[TopologyDescriptionSubtopology, ...]
    global_stores: tuple[TopologyDescriptionGlobalStore, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class DescribedGroup:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(DESCRIBE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    group_id: GroupId = field(metadata={"kafka_type": "string"})
    group_state: str = field(metadata={"kafka_type": "string"})
    group_epoch: i32 = field(metadata={"kafka_type": "int32"})
    assignment_epoch: i32 = field(metadata={"kafka_type": "int32"})
    topology: described_v0.Topology | None = None
    members: tuple[described_v0.Member, ...]
    authorized_operations: i32 = field(metadata={"kafka_type": "int32"}, default=i32(-2147483648))
    topology_description: TopologyDescription | None = None
    topology_description_status: i8 = field(metadata={"kafka_type": "int8"}, default=i8(0))
    assignor_name: str | None = field(metadata={"kafka_type": "string"}, default=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroupDescribeResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(1)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(DESCRIBE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    groups: tuple[DescribedGroup, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroupTopologyDescriptionUpdateRequest:
    """KIP-1331's push of a topology description (its structures are describe v1's)."""

    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(TOPOLOGY_DESCRIPTION_UPDATE)
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader
    group_id: GroupId = field(metadata={"kafka_type": "string"})
    member_id: str = field(metadata={"kafka_type": "string"})
    topology_epoch: i32 = field(metadata={"kafka_type": "int32"})
    topology_description: TopologyDescription


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamsGroupTopologyDescriptionUpdateResponse:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = i16(TOPOLOGY_DESCRIPTION_UPDATE)
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    error_code: ErrorCode = field(metadata={"kafka_type": "error_code"})
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)


# (API key, version) -> (request entity, response entity): the versions kio lacks.
OWN_SCHEMAS: dict[tuple[int, int], tuple[type, type]] = {
    (HEARTBEAT, 1): (StreamsGroupHeartbeatRequest, StreamsGroupHeartbeatResponse),
    (DESCRIBE, 1): (StreamsGroupDescribeRequest, StreamsGroupDescribeResponse),
    (TOPOLOGY_DESCRIPTION_UPDATE, 0): (StreamsGroupTopologyDescriptionUpdateRequest,
                                       StreamsGroupTopologyDescriptionUpdateResponse),
}


def own_versions(api_key: int) -> dict[int, tuple[type, type]]:
    """The API row's ``own_schemas``: version -> (request, response) entity."""
    return {v: pair for (k, v), pair in OWN_SCHEMAS.items() if k == api_key}
