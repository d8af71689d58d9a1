"""ListGroups: every group a partition hosts, of any type (``consumer``, ``classic``,
``connect``), filtered by state and type."""

from __future__ import annotations

from protocol import messages as m
from protocol.consumer.group import ConsumerGroup
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.group_states import ALL_STATES, state_key
from protocol.validation import check_types

GROUP_TYPES = ("consumer", "classic", "connect")


def list_groups(ctx: ShardContext, req: m.ListGroupsRequest) -> m.ListGroupsResponse:
    check_types(req)
    states = {state_key(s) for s in req.states_filter}
    unknown = states - {state_key(s) for s in ALL_STATES}
    if unknown:
        raise CoordinatorError(Errors.INVALID_REQUEST, f"unknown group states {sorted(unknown)}")
    types = {t.lower() for t in req.types_filter}
    unknown = types - set(GROUP_TYPES)
    if unknown:
        raise CoordinatorError(Errors.INVALID_REQUEST, f"unknown group types {sorted(unknown)}")
    listed = []
    for group_id in sorted(ctx.groups):
        g = ctx.groups[group_id]
        if (states and state_key(g.state) not in states) or (types and g.group_type not in types):
            continue
        protocol_type = "consumer" if isinstance(g, ConsumerGroup) else (g.protocol_type or "")
        listed.append(m.ListedGroup(group_id, protocol_type, g.state, g.group_type))
    return m.ListGroupsResponse(groups=listed)
