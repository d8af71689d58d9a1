"""SyncGroup: the sync phase, where followers wait for the leader's assignment.

The leader's SyncGroup carries every member's assignment; it is persisted with the generation
before any follower's delayed reply is released (seed 003, failure point 4).
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.classic.lookup import existing_member, group_for, illegal_generation
from protocol.classic.rebalance import Rebalances
from protocol.classic.timers import SyncDeadline
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.validation import check_types


class SyncRules:
    """Answers SyncGroup: at once in a Stable group, else when the leader's assignment lands."""

    def __init__(self, ctx: ShardContext, rebalances: Rebalances) -> None:
        self.ctx = ctx
        self.rebalances = rebalances

    def sync(self, req: m.SyncGroupRequest) -> m.SyncGroupResponse | None:
        check_types(req)
        group = group_for(self.ctx.groups, req.group_id, req.member_id)
        host = self.ctx.classic_host(group)
        if host is not None:  # classic members of a group of another type
            return host.sync(group, req)
        member = existing_member(group, req.member_id, req.group_instance_id)
        if req.generation_id != group.generation_id:
            raise illegal_generation(req.generation_id, group)
        if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or (
            req.protocol_name is not None and req.protocol_name != group.protocol_name
        ):
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                f"The group uses protocol {group.protocol_type}/{group.protocol_name}.",
            )
        if group.state == cg.PREPARING_REBALANCE:
            raise CoordinatorError(Errors.REBALANCE_IN_PROGRESS, "The group is rebalancing.")
        if group.state == cg.STABLE:
            self.rebalances.reset_session(group, member)
            return _sync_response(group, member)
        if group.state != cg.COMPLETING_REBALANCE:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID, f"Group {group.group_id} has no generation running."
            )
        self.rebalances.reset_session(group, member)
        if member.awaiting_sync is not None and member.awaiting_sync is not req:
            message = "A newer SyncGroup from the same member replaced this one."
            self.rebalances.fail(member.awaiting_sync, Errors.REBALANCE_IN_PROGRESS, message)
        member.awaiting_sync = req
        if member.member_id == group.leader_id:
            self._install(group, req)
        return None

    def _install(self, group: ClassicGroup, req: m.SyncGroupRequest) -> None:
        """The leader's assignment: persist it, then answer everyone waiting."""
        assignments: dict[str, bytes] = {}
        for a in req.assignments:
            assignments.setdefault(a.member_id, a.assignment)
        for mem in group.members.values():
            mem.assignment = assignments.get(mem.member_id, b"")
        group.transition_to(cg.STABLE, self.ctx.now_ms)
        self.ctx.timers.cancel(SyncDeadline(group.group_id))
        self.rebalances.persist(group)
        for mem in group.members.values():
            if mem.awaiting_sync is not None:
                request, mem.awaiting_sync = mem.awaiting_sync, None
                self.ctx.complete(request, _sync_response(group, mem))


def _sync_response(group: ClassicGroup, member: ClassicMember) -> m.SyncGroupResponse:
    return m.SyncGroupResponse(
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        assignment=member.assignment,
    )
