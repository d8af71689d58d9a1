"""Kafka Connect worker groups' requests and responses (seed 004), as DESIGN.md fixes them.

The units of a Connect group are connectors and tasks, not partitions: ``ConnectorsAndTasks``
plays the part ``TopicPartitions`` plays for consumers. Field names are the seed's in snake_case;
nullable fields default to ``None``, which in a heartbeat means "unchanged since the last
heartbeat". Kafka never shipped these APIs, so they have no Kafka API key. ``protocol.messages``
re-exports them. The client-side assignor structs (``Assignor``, ``PrepareAssignmentAssignor``)
are the consumer room's: both group types speak the same Assignor family (seed 004).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.consumer.messages import Assignor, PrepareAssignmentAssignor
from protocol.errors import Errors
from protocol.types import Int8, Int16, Int32

# ---------------------------------------------------------------------------- common structs


@dataclass
class ConnectorTaskId:
    """One task of a connector: ``task`` counts from 0 to the connector's task count - 1."""

    connector: str
    task: Int32


@dataclass
class ConnectorsAndTasks:
    """The seed's ``ConnectorsAndTasks`` struct: connectors (by name) and tasks."""

    connectors: list[str] = field(default_factory=list)
    tasks: list[ConnectorTaskId] = field(default_factory=list)


# ------------------------------------------------------------------- ConnectGroupHeartbeat


@dataclass
class ConnectGroupHeartbeatRequest:
    group_id: str
    # The worker id, chosen by the worker (seed 004: "this corresponds to workerIds").
    member_id: str = ""
    # 0 to join, -1 to leave, -2 for a static worker's temporary leave.
    member_epoch: Int32 = 0
    instance_id: str | None = None
    rebalance_timeout_ms: Int32 = -1
    server_assignor: str | None = None
    client_assignors: list[Assignor] | None = None
    # What the worker owns; None = unchanged since the last heartbeat.
    connectors_and_tasks: ConnectorsAndTasks | None = None
    # Not in the seed's schema but in every Kafka request header: who sent it.
    client_id: str = ""
    client_host: str = ""


@dataclass
class ConnectGroupAssignment:
    """The ``Assignment`` struct of the heartbeat response.

    ``connectors_and_tasks`` is what the worker may run now; ``pending_connectors_and_tasks``
    is what its target holds that another worker has not yet released (Cohort's addition, as
    for consumers: the worker knows more is coming).
    """

    error: Int8 = 0
    connectors_and_tasks: ConnectorsAndTasks = field(default_factory=ConnectorsAndTasks)
    pending_connectors_and_tasks: ConnectorsAndTasks = field(default_factory=ConnectorsAndTasks)
    metadata_version: Int16 = 0
    metadata_bytes: bytes = b""


@dataclass
class ConnectGroupHeartbeatResponse:
    # error_code COMPUTE_ASSIGNMENT: this worker is chosen to compute the group's assignment;
    # such a reply is otherwise a full success reply (member id, epoch, interval, assignment).
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: Int32 = 0
    heartbeat_interval_ms: Int32 = 0
    assignment: ConnectGroupAssignment | None = None
    throttle_time_ms: Int32 = 0


# --------------------------------------------------------- ConnectGroupPrepareAssignment


@dataclass
class ConnectGroupPrepareAssignmentRequest:
    group_id: str
    member_id: str
    member_epoch: Int32


@dataclass
class ConnectPrepareAssignmentMember:
    member_id: str
    member_epoch: Int32
    instance_id: str | None
    assignor: PrepareAssignmentAssignor
    # The member's current target: what a sticky assignor starts from.
    connectors_and_tasks: ConnectorsAndTasks = field(default_factory=ConnectorsAndTasks)
    # The highest metadata version this member's assignor reads (Cohort's addition: the
    # chosen assignor writes each member's metadata at a version it reads).
    maximum_version: Int16 = 0


@dataclass
class ConnectorTasks:
    """A configured connector and how many tasks it has (tasks ``0..task_count-1``)."""

    name: str
    task_count: Int32


@dataclass
class ConnectGroupPrepareAssignmentResponse:
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    group_epoch: Int32 = -1
    assignor_name: str = ""
    members: list[ConnectPrepareAssignmentMember] = field(default_factory=list)
    connectors: list[ConnectorTasks] = field(default_factory=list)
    group_id: str = ""
    # The metadata versions every member understands (as for consumers).
    minimum_version: Int16 = -1
    maximum_version: Int16 = -1
    throttle_time_ms: Int32 = 0


# --------------------------------------------------------- ConnectGroupInstallAssignment


@dataclass
class ConnectInstallAssignmentMember:
    member_id: str
    error: Int8 = 0
    connectors_and_tasks: ConnectorsAndTasks = field(default_factory=ConnectorsAndTasks)
    metadata_version: Int16 = 0
    metadata_bytes: bytes = b""


@dataclass
class ConnectGroupInstallAssignmentRequest:
    group_id: str
    member_id: str
    member_epoch: Int32
    # The group epoch the assignment was computed for (from PrepareAssignment).
    group_epoch: Int32
    error: Int8 = 0
    members: list[ConnectInstallAssignmentMember] = field(default_factory=list)


@dataclass
class ConnectGroupInstallAssignmentResponse:
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    throttle_time_ms: Int32 = 0


# ------------------------------------------------------------------ ConnectGroupDescribe


@dataclass
class ConnectGroupDescribeRequest:
    group_ids: list[str]
    include_authorized_operations: bool = False


@dataclass
class ConnectDescribedMember:
    member_id: str
    instance_id: str | None
    member_epoch: Int32
    # What the worker runs now, and what the coordinator wants it to run.
    assignment: ConnectorsAndTasks = field(default_factory=ConnectorsAndTasks)
    target_assignment: ConnectorsAndTasks = field(default_factory=ConnectorsAndTasks)
    client_id: str = ""
    client_host: str = ""
    # Cohort's additions: the reconciler's view of the worker.
    member_state: str = "stable"
    pending_connectors_and_tasks: ConnectorsAndTasks = field(default_factory=ConnectorsAndTasks)


@dataclass
class ConnectDescribedGroup:
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    group_id: str = ""
    group_state: str = ""
    group_epoch: Int32 = -1
    assignment_epoch: Int32 = -1
    assignor_name: str = ""
    members: list[ConnectDescribedMember] = field(default_factory=list)
    # The group's configured connectors (from the metadata image), for a reader of describe.
    connectors: list[ConnectorTasks] = field(default_factory=list)
    authorized_operations: Int32 = -(2**31)


@dataclass
class ConnectGroupDescribeResponse:
    groups: list[ConnectDescribedGroup] = field(default_factory=list)
    throttle_time_ms: Int32 = 0
