"""The INVALID_REQUEST / UNSUPPORTED_ASSIGNOR checks of a ConnectGroupHeartbeat (seed 004).

Run before anything else, so a refused heartbeat changes nothing (invariant 6). The order is
the seed's list; what it leaves out is Kafka 4's consumer rule (a temporary static leave, -2,
needs an instance id; a (re)join owns nothing yet) plus the shape of ``ConnectorsAndTasks``.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.config import CoordinatorConfig
from protocol.connect.member import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from protocol.errors import invalid_request
from protocol.modern.validation import check_server_assignor, validate_assignor_list
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
    validate_assignor_list(req, nonempty_server=True)
    _validate_owned(req)
    check_server_assignor(req, config.group_connect_assignors)


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
