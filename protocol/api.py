"""What each request is, in one table: its reply, its groups, its handler, its Kafka API key.

The shard dispatches through it, the runtime routes by it (``group_ids_of``), every refusal is
shaped by it (``error_response``), and the Kafka wire gateway maps API keys through it. A new
request type is one row here, not a change in four places.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from protocol import messages as m
from protocol import validation
from protocol.consumer.client_assignment import install_assignment, prepare_assignment
from protocol.consumer.describe import describe_groups
from protocol.errors import Errors
from protocol.listing import list_groups

# (shard, request) -> reply, or None while the reply is delayed (JoinGroup, SyncGroup).
Handler = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class PerGroupReply:
    """A request naming many groups answers per group: its reply's list field and entry type.
    An error reply always has an entry, even for unreadable ids."""

    list_field: str
    entry: type


@dataclass(frozen=True)
class Api:
    request: type
    response: type
    # Kafka's ApiKeys id; None for Cohort's requests that Kafka never shipped (seed 000's
    # PrepareAssignment / InstallAssignment, seed 004's Connect requests).
    api_key: int | None
    # The request field naming its groups; None when it names none (ListGroups).
    group_ids_field: str | None
    # None: answered by the shard's batch path (ConsumerGroupHeartbeat), not one by one.
    handler: Handler | None
    per_group: PerGroupReply | None = None


# fmt: off
_ROWS = (
    #   request                                   response                                  key   groups field    handler
    Api(m.ConsumerGroupHeartbeatRequest,          m.ConsumerGroupHeartbeatResponse,          68,  "group_id",     None),
    Api(m.ConsumerGroupDescribeRequest,           m.ConsumerGroupDescribeResponse,           69,  "group_ids",    describe_groups,
        PerGroupReply("groups", m.DescribedGroup)),
    Api(m.ConsumerGroupPrepareAssignmentRequest,  m.ConsumerGroupPrepareAssignmentResponse,  None, "group_id",     prepare_assignment),
    Api(m.ConsumerGroupInstallAssignmentRequest,  m.ConsumerGroupInstallAssignmentResponse,  None, "group_id",     install_assignment),
    Api(m.ConnectGroupHeartbeatRequest,           m.ConnectGroupHeartbeatResponse,           None, "group_id",     lambda s, r: s.connect.heartbeat(r)),
    Api(m.ConnectGroupPrepareAssignmentRequest,   m.ConnectGroupPrepareAssignmentResponse,   None, "group_id",     lambda s, r: s.connect.prepare_assignment(r)),
    Api(m.ConnectGroupInstallAssignmentRequest,   m.ConnectGroupInstallAssignmentResponse,   None, "group_id",     lambda s, r: s.connect.install_assignment(r)),
    Api(m.ConnectGroupDescribeRequest,            m.ConnectGroupDescribeResponse,            None, "group_ids",    lambda s, r: s.connect.describe(r),
        PerGroupReply("groups", m.ConnectDescribedGroup)),
    Api(m.ListGroupsRequest,                      m.ListGroupsResponse,                      16,  None,           list_groups),
    Api(m.JoinGroupRequest,                       m.JoinGroupResponse,                       11,  "group_id",     lambda s, r: s.classic.join(r)),
    Api(m.SyncGroupRequest,                       m.SyncGroupResponse,                       14,  "group_id",     lambda s, r: s.classic.sync(r)),
    Api(m.HeartbeatRequest,                       m.HeartbeatResponse,                       12,  "group_id",     lambda s, r: s.classic.heartbeat(r)),
    Api(m.LeaveGroupRequest,                      m.LeaveGroupResponse,                      13,  "group_id",     lambda s, r: s.classic.leave(r)),
    Api(m.DescribeGroupsRequest,                  m.DescribeGroupsResponse,                  15,  "groups",       lambda s, r: s.classic.describe(r),
        PerGroupReply("groups", m.DescribeGroupsResponseGroup)),
    Api(m.OffsetCommitRequest,                    m.OffsetCommitResponse,                    8,   "group_id",     lambda s, r: s.offsets.commit(r)),
    Api(m.OffsetFetchRequest,                     m.OffsetFetchResponse,                     9,   "group_id",     lambda s, r: s.offsets.fetch(r)),
    Api(m.OffsetDeleteRequest,                    m.OffsetDeleteResponse,                    47,  "group_id",     lambda s, r: s.offsets.delete(r)),
    Api(m.DeleteGroupsRequest,                    m.DeleteGroupsResponse,                    42,  "groups_names", lambda s, r: s.offsets.delete_groups(r),
        PerGroupReply("results", m.DeletableGroupResult)),
)
# fmt: on
APIS: dict[type, Api] = {api.request: api for api in _ROWS}
BY_API_KEY: dict[int, Api] = {a.api_key: a for a in APIS.values() if a.api_key is not None}
_PER_GROUP_FIELDS: dict[type, str] = {
    a.response: a.per_group.list_field for a in APIS.values() if a.per_group is not None
}


def api_of(request: object) -> Api | None:
    return APIS.get(type(request))


def group_ids_of(request: object) -> list[str]:
    """The groups a request speaks for, as routing needs them (well-formed ids only: a
    malformed one is left for the shard to refuse). ``ListGroups`` names none."""
    api = api_of(request)
    field = api.group_ids_field if api is not None else "group_id"
    if field is None:
        return []
    ids = getattr(request, field, None)
    if api is None or api.per_group is None:
        ids = [ids]
    elif not isinstance(ids, list):
        ids = []
    return [g for g in ids if type(g) is str]


def routing_error(request: object) -> str | None:
    """Why the runtime must refuse ``request`` before routing it (INVALID_REQUEST), or None:
    a request of no known type, or group ids that are not strings Kafka could carry (a
    megabyte-long id is refused without being hashed)."""
    api = api_of(request)
    if api is None:
        return f"unknown request type {type(request).__name__}"
    why = validation.routing_error(request, api.group_ids_field, api.per_group is not None)
    return None if why is None else f"malformed field {api.request.__name__}.{why}"


def reply_error_codes(response: object) -> list[int]:
    """Every error code a reply carries: one per group for a per-group reply (DescribeGroups,
    ConsumerGroupDescribe, DeleteGroups), else its own; what a retrying caller inspects."""
    field = _PER_GROUP_FIELDS.get(type(response))
    if field is not None:
        return [getattr(e, "error_code", Errors.NONE) for e in getattr(response, field, [])]
    return [getattr(response, "error_code", Errors.NONE)]


def error_response(req: object, error: Errors, message: str | None) -> object:
    """The reply type ``req`` expects, carrying ``error`` and ``message``: one rule for every
    refusal, whether the shard, the runtime or an ended wait gives it."""
    api = api_of(req)
    if api is None:
        return m.ErrorResponse(error_code=error, error_message=message)
    if api.per_group is not None:
        ids = getattr(req, api.group_ids_field)
        named = [g for g in ids if type(g) is str] if type(ids) is list else []
        entries = [
            api.per_group.entry(error_code=error, error_message=message, group_id=g)
            for g in named or [""]
        ]
        return api.response(**{api.per_group.list_field: entries})
    resp = api.response()
    resp.error_code = error
    if hasattr(resp, "error_message"):
        resp.error_message = message
    return resp
