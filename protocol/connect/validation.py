"""The INVALID_REQUEST / UNSUPPORTED_ASSIGNOR checks of a ConnectGroupHeartbeat (seed 004).

Run before anything else, so a refused heartbeat changes nothing (invariant 6). The order is
the seed's list; what it leaves out is Kafka 4's consumer rule (a temporary static leave, -2,
needs an instance id; a (re)join owns nothing yet) plus the shape of ``ConnectorsAndTasks``.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.config import CoordinatorConfig
from protocol.connect.member import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from protocol.errors import CoordinatorError, Errors, invalid_request
from protocol.validation import check_types


def validate_heartbeat(req: m.ConnectGroupHeartbeatRequest, config: CoordinatorConfig) -> None:
    check_types(req)
    if not req.group_id:
        raise invalid_request("GroupId can't be empty.")
    if not req.member_id:
        raise invalid_request("MemberId can't be empty: a worker chooses its own member id.")
    if req.member_epoch < LEAVE_EPOCH and not (
        req.member_epoch == STATIC_LEAVE_EPOCH and req.instance_id
    ):
        raise invalid_request(
            "MemberEpoch must be >= -1 (-2, a temporary leave, only with an InstanceId)."
        )
    if req.instance_id is not None and not req.instance_id:
        raise invalid_request("InstanceId can't be empty.")
    if req.member_epoch == JOIN_EPOCH and req.rebalance_timeout_ms <= 0:
        raise invalid_request("RebalanceTimeoutMs must be larger than zero in the first heartbeat.")
    if req.rebalance_timeout_ms != -1 and req.rebalance_timeout_ms <= 0:
        raise invalid_request("RebalanceTimeoutMs must be -1 (unchanged) or larger than zero.")
    _validate_assignors(req)
    _validate_owned(req)
    if (
        req.server_assignor is not None
        and req.server_assignor not in config.group_connect_assignors
    ):
        raise CoordinatorError(
            Errors.UNSUPPORTED_ASSIGNOR,
            f"ServerAssignor {req.server_assignor!r} is not supported; "
            f"supported: {', '.join(config.group_connect_assignors)}.",
        )


def _validate_assignors(req: m.ConnectGroupHeartbeatRequest) -> None:
    if req.server_assignor is not None and req.client_assignors is not None:
        raise invalid_request("ServerAssignor and ClientAssignors cannot be used together.")
    if req.server_assignor is not None and not req.server_assignor:
        raise invalid_request("ServerAssignor can't be empty.")
    names = set()
    for a in req.client_assignors or ():
        if not a.name:
            raise invalid_request("Assignor.Name must be non-empty.")
        if a.name in names:
            raise invalid_request(f"Assignor {a.name!r} is listed twice.")
        names.add(a.name)
        if a.minimum_version < -1:
            raise invalid_request("Assignor.MinimumVersion must be >= -1.")
        if a.maximum_version < 0 or a.maximum_version < a.minimum_version:
            raise invalid_request(
                "Assignor.MaximumVersion must be >= 0 and >= Assignor.MinimumVersion."
            )
        if not a.minimum_version <= a.metadata_version <= a.maximum_version:
            raise invalid_request(
                "Assignor.Version must be >= Assignor.MinimumVersion "
                "and <= Assignor.MaximumVersion."
            )


def _validate_owned(req: m.ConnectGroupHeartbeatRequest) -> None:
    owned = req.connectors_and_tasks
    if owned is None:
        return
    if req.member_epoch == JOIN_EPOCH and (owned.connectors or owned.tasks):
        raise invalid_request("ConnectorsAndTasks must be empty when (re-)joining.")
    if any(not c for c in owned.connectors):
        raise invalid_request("ConnectorsAndTasks.Connectors can't contain an empty name.")
    for t in owned.tasks:
        if not t.connector:
            raise invalid_request("ConnectorsAndTasks.Tasks can't name an empty connector.")
        if t.task < 0:
            raise invalid_request("ConnectorsAndTasks.Tasks must have task ids >= 0.")
