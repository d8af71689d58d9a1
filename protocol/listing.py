"""ListGroups: every group a partition hosts, of any type in the group-type table, filtered
by state and type. Each group's type and protocol type are its row's answers."""

from __future__ import annotations

from protocol import messages as m
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.group_states import state_key
from protocol.group_types import ALL_STATES, BY_NAME, type_of
from protocol.validation import check_types


def list_groups(ctx: ShardContext, req: m.ListGroupsRequest) -> m.ListGroupsResponse:
    check_types(req)
    states = {state_key(s) for s in req.states_filter}
    unknown = states - {state_key(s) for s in ALL_STATES}
    if unknown:
        raise CoordinatorError(Errors.INVALID_REQUEST, f"unknown group states {sorted(unknown)}")
    types = {t.lower() for t in req.types_filter}
    unknown = types - set(BY_NAME)
    if unknown:
        raise CoordinatorError(Errors.INVALID_REQUEST, f"unknown group types {sorted(unknown)}")
    listed = []
    for group_id in sorted(ctx.groups):
        g = ctx.groups[group_id]
        if (states and state_key(g.state) not in states) or (types and g.group_type not in types):
            continue
        protocol_type = type_of(g).list_protocol_type(g)
        listed.append(m.ListedGroup(group_id, protocol_type, g.state, g.group_type))
    return m.ListGroupsResponse(groups=listed)
