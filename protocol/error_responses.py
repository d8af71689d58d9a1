"""The reply a request expects, carrying an error: one rule for every refusal.

The shard answers a refused request with it, the runtime answers with it when the shard cannot
take a request (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS), and the classic rules answer a
waiting JoinGroup or SyncGroup with it when the wait ends badly.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.errors import Errors

_RESPONSES: dict[type, type] = {
    m.ConsumerGroupHeartbeatRequest: m.ConsumerGroupHeartbeatResponse,
    m.ConsumerGroupPrepareAssignmentRequest: m.ConsumerGroupPrepareAssignmentResponse,
    m.ConsumerGroupInstallAssignmentRequest: m.ConsumerGroupInstallAssignmentResponse,
    m.ListGroupsRequest: m.ListGroupsResponse,
    m.JoinGroupRequest: m.JoinGroupResponse,
    m.SyncGroupRequest: m.SyncGroupResponse,
    m.HeartbeatRequest: m.HeartbeatResponse,
    m.LeaveGroupRequest: m.LeaveGroupResponse,
    m.OffsetCommitRequest: m.OffsetCommitResponse,
    m.OffsetFetchRequest: m.OffsetFetchResponse,
    m.OffsetDeleteRequest: m.OffsetDeleteResponse,
}

# Requests naming many groups answer per group: (the request's ids field, the response type,
# its list field, the entry type). An error always has an entry, even for unreadable ids.
_PER_GROUP: dict[type, tuple[str, type, str, type]] = {
    m.ConsumerGroupDescribeRequest: (
        "group_ids",
        m.ConsumerGroupDescribeResponse,
        "groups",
        m.DescribedGroup,
    ),
    m.DescribeGroupsRequest: (
        "groups",
        m.DescribeGroupsResponse,
        "groups",
        m.DescribeGroupsResponseGroup,
    ),
    m.DeleteGroupsRequest: (
        "groups_names",
        m.DeleteGroupsResponse,
        "results",
        m.DeletableGroupResult,
    ),
}


def error_response(req: object, error: Errors, message: str | None) -> object:
    """The reply type ``req`` expects, carrying ``error`` and ``message``."""
    per_group = _PER_GROUP.get(type(req))
    if per_group is not None:
        ids_field, response, list_field, entry = per_group
        ids = getattr(req, ids_field)
        named = [g for g in ids if isinstance(g, str)] if isinstance(ids, list) else []
        entries = [
            entry(error_code=error, error_message=message, group_id=g) for g in named or [""]
        ]
        return response(**{list_field: entries})
    resp = _RESPONSES.get(type(req), m.ErrorResponse)()
    resp.error_code = error
    if hasattr(resp, "error_message"):
        resp.error_message = message
    return resp
