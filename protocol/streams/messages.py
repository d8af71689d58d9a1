"""StreamsGroupHeartbeat (API 88) and StreamsGroupDescribe (API 89) as pure dataclasses,
mirroring Kafka 4.4's schemas; tasks as ``{subtopology id: [partitions]}``, topics by name.

``StreamsGroupHeartbeatResponse.topics_to_create`` is not on the wire: it is Kafka's
``StreamsGroupHeartbeatResult.creatableTopics``, the internal topics the coordinator found
missing, which the entry point (the gateway, Kafka's ``KafkaApis``) creates under the caller's
principal after the reply is decided.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.errors import Errors
from protocol.streams.records import (
    CopartitionGroup,
    Endpoint,
    KeyValue,
    Subtopology,
    TopicInfo,
)
from protocol.types import Int16, Int32, Int64

__all__ = [
    "CopartitionGroup", "CreatableTopic", "Endpoint", "EndpointToPartitions", "KeyValue",
    "StreamsDescribedGroup", "StreamsDescribedMember", "StreamsGroupDescribeRequest",
    "StreamsGroupDescribeResponse", "StreamsGroupHeartbeatRequest",
    "StreamsGroupHeartbeatResponse", "StreamsStatus", "StreamsTopology", "Subtopology",
    "TaskIds", "TaskOffset", "TopicInfo", "task_ids", "task_map",
]



@dataclass
class TaskIds:
    subtopology_id: str
    partitions: list[Int32] = field(default_factory=list)


Tasks = list[TaskIds]


def task_ids(tasks: dict) -> list[TaskIds]:
    """``{subtopology: partitions}`` as the wire's list, subtopologies and partitions sorted."""
    return [TaskIds(s, sorted(ps)) for s, ps in sorted(tasks.items())]


def task_map(tasks: list[TaskIds]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for t in tasks:
        out.setdefault(t.subtopology_id, []).extend(t.partitions)
    return out


@dataclass(frozen=True)
class StreamsTopology:
    epoch: int
    subtopologies: tuple[Subtopology, ...] = ()


@dataclass(frozen=True)
class TaskOffset:
    subtopology_id: str
    partition: Int32
    offset: Int64


@dataclass
class StreamsGroupHeartbeatRequest:
    group_id: str = ""
    member_id: str = ""
    member_epoch: Int32 = 0
    endpoint_information_epoch: Int32 = 0
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: Int32 = -1
    topology: StreamsTopology | None = None
    active_tasks: Tasks | None = None
    standby_tasks: Tasks | None = None
    warmup_tasks: Tasks | None = None
    process_id: str | None = None
    user_endpoint: Endpoint | None = None
    client_tags: list[KeyValue] | None = None
    task_offsets: list[TaskOffset] | None = None
    task_end_offsets: list[TaskOffset] | None = None
    shutdown_application: bool = False
    client_id: str = ""
    client_host: str = ""
    # The version the client spoke (v1 may be told MISSING_CLIENT_TAGS, KAFKA-20744).
    api_version: Int16 = 0


@dataclass(frozen=True)
class StreamsStatus:
    status_code: int
    status_detail: str


@dataclass(frozen=True)
class CreatableTopic:
    """An internal topic to create: its name, partition count, replication factor (-1: the
    cluster's default) and configs."""

    name: str
    num_partitions: int
    replication_factor: int = -1
    configs: tuple[KeyValue, ...] = ()


@dataclass
class EndpointToPartitions:
    user_endpoint: Endpoint
    active_partitions: dict[str, list[int]] = field(default_factory=dict)  # topic name -> ps
    standby_partitions: dict[str, list[int]] = field(default_factory=dict)


@dataclass
class StreamsGroupHeartbeatResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    member_id: str = ""
    member_epoch: Int32 = 0
    heartbeat_interval_ms: Int32 = 0
    # v1's int64 (v0's int32 "legacy" field is never filled by Kafka 4.4: 0 on the wire);
    # -1 ("not supported") in a reply that sets none, as Kafka's default.
    acceptable_recovery_lag: Int64 = -1
    task_offset_interval_ms: Int32 = 0
    status: list[StreamsStatus] | None = None
    active_tasks: Tasks | None = None
    standby_tasks: Tasks | None = None
    warmup_tasks: Tasks | None = None
    # v1 (KIP-1331): the broker wants the topology description; never, without Kafka's
    # topology description plugin (Cohort has none).
    topology_description_required: bool = False
    endpoint_information_epoch: Int32 = 0
    partitions_by_user_endpoint: list[EndpointToPartitions] | None = None
    # Not on the wire (module docstring): internal topics to create, by name.
    topics_to_create: dict[str, CreatableTopic] = field(default_factory=dict)


@dataclass
class StreamsGroupDescribeRequest:
    group_ids: list[str] = field(default_factory=list)
    include_authorized_operations: bool = False
    include_topology_description: bool = False  # v1 (KIP-1331)


@dataclass
class StreamsAssignment:
    active_tasks: Tasks = field(default_factory=dict)
    standby_tasks: Tasks = field(default_factory=dict)
    warmup_tasks: Tasks = field(default_factory=dict)


@dataclass
class StreamsDescribedMember:
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    topology_epoch: int
    process_id: str
    user_endpoint: Endpoint | None
    client_tags: list[KeyValue]
    task_offsets: list[TaskOffset]
    task_end_offsets: list[TaskOffset]
    assignment: StreamsAssignment
    target_assignment: StreamsAssignment
    is_classic: bool = False


@dataclass
class StreamsDescribedGroup:
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    group_id: str = ""
    group_state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    topology: StreamsTopology | None = None
    members: list[StreamsDescribedMember] = field(default_factory=list)
    authorized_operations: int = -(2**31)
    # v1 (KIP-1331): 0 not requested, 1 not stored (what a broker without Kafka's topology
    # description plugin answers a described group: Cohort has none), 2 error, 3 available.
    topology_description_status: int = 0
    # v1 (KIP-1357): the task assignor of the group's next assignment; None on an error.
    assignor_name: str | None = None


@dataclass
class StreamsGroupDescribeResponse:
    throttle_time_ms: Int32 = 0
    groups: list[StreamsDescribedGroup] = field(default_factory=list)
