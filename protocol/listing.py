"""ListGroups: every group a partition hosts, of any type in the group-type table, filtered
by state and type. Each group's type and protocol type are its row's answers. A group known
only by its offsets is Kafka's simple group: EMPTY, classic, no protocol type. A filter naming
an unknown state or type matches nothing (Kafka answers an empty list, not an error)."""

from __future__ import annotations

from protocol import messages as m
from protocol.context import ShardContext
from protocol.group_states import state_key
from protocol.group_types import SIMPLE_GROUP_STATE, SIMPLE_GROUPS, type_of
from protocol.validation import check_types


def list_groups(ctx: ShardContext, req: m.ListGroupsRequest) -> m.ListGroupsResponse:
    check_types(req)
    states = {state_key(s) for s in req.states_filter}
    types = {t.lower() for t in req.types_filter}
    entries = [
        (gid, type_of(g).list_protocol_type(g), g.state, g.group_type)
        for gid, g in ctx.groups.items()
    ] + [(gid, "", SIMPLE_GROUP_STATE, SIMPLE_GROUPS.name) for gid in ctx.offset_only_groups()]
    return m.ListGroupsResponse(groups=[
        m.ListedGroup(*entry) for entry in sorted(entries)
        if not (states and state_key(entry[2]) not in states)
        and not (types and entry[3] not in types)
    ])
