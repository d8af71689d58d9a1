"""Heartbeat, LeaveGroup and DescribeGroups: a classic member staying, going, and being seen.

A heartbeat keeps a member's session and tells it to rejoin while the group rebalances; a
leave (batched, by member id or instance id) removes members and rebalances what remains.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.classic.lookup import existing_member, group_for, illegal_generation
from protocol.classic.rebalance import Rebalances
from protocol.classic.timers import PendingMemberExpiry
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.validation import check_types


class MembershipRules:
    """Answers Heartbeat, LeaveGroup and DescribeGroups for classic groups (and hands a
    consumer group's classic members to the migration rules)."""

    def __init__(self, ctx: ShardContext, rebalances: Rebalances) -> None:
        self.ctx = ctx
        self.rebalances = rebalances

    def heartbeat(self, req: m.HeartbeatRequest) -> m.HeartbeatResponse:
        check_types(req)
        group = group_for(self.ctx.groups, req.group_id, req.member_id)
        host = self.ctx.classic_host(group)
        if host is not None:  # classic members of a group of another type
            return host.heartbeat(group, req)
        member = existing_member(group, req.member_id, req.group_instance_id)
        if group.state == cg.EMPTY:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID, f"Group {group.group_id} has no members."
            )
        if req.generation_id != group.generation_id:
            raise illegal_generation(req.generation_id, group)
        if member.awaiting_join is None:
            self.rebalances.reset_session(group, member)
        if group.state == cg.PREPARING_REBALANCE:
            return m.HeartbeatResponse(
                error_code=Errors.REBALANCE_IN_PROGRESS,
                error_message="The group is rebalancing: rejoin.",
            )
        return m.HeartbeatResponse()

    def leave(self, req: m.LeaveGroupRequest) -> m.LeaveGroupResponse:
        check_types(req)
        if not req.group_id:
            raise CoordinatorError(Errors.INVALID_GROUP_ID, "The group id must not be empty.")
        if not req.members:
            raise CoordinatorError(
                Errors.INVALID_REQUEST, "A LeaveGroup names at least one member."
            )
        group = self.ctx.groups.get(req.group_id)
        host = self.ctx.classic_host(group) if group is not None else None
        if host is not None:  # classic members of a group of another type
            return host.leave(group, req)
        if group is None:  # Kafka: the request succeeds, each member is unknown
            return m.LeaveGroupResponse(members=[
                m.LeaveGroupResponseMember(x.member_id, x.group_instance_id,
                                           Errors.UNKNOWN_MEMBER_ID)
                for x in req.members
            ])
        results = []
        left: list[tuple[ClassicMember, str | None]] = []
        for identity in req.members:
            error = self._leave_one(group, identity, left)
            results.append(
                m.LeaveGroupResponseMember(identity.member_id, identity.group_instance_id, error)
            )
        if left:
            member, reason = left[0]
            self.rebalances.after_removal(
                group, f"member left the group: {reason or 'no reason given'}", member
            )
        else:
            self.rebalances.maybe_complete_join(group)  # a pending member's leave may end it
        return m.LeaveGroupResponse(members=results)

    def _leave_one(self, group: ClassicGroup, identity: m.MemberIdentity, left: list) -> Errors:
        mid, iid = identity.member_id, identity.group_instance_id
        if iid is None and mid in group.pending_members:
            group.pending_members.discard(mid)
            self.ctx.timers.cancel(PendingMemberExpiry(group.group_id, mid))
            return Errors.NONE
        if iid is not None:
            holder = group.static_members.get(iid)
            if holder is None:
                return Errors.UNKNOWN_MEMBER_ID
            if mid and mid != holder:
                return Errors.FENCED_INSTANCE_ID
            mid = holder
        member = group.members.get(mid)
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        self.rebalances.drop(group, member)
        left.append((member, identity.reason))
        return Errors.NONE

    def describe(self, req: m.DescribeGroupsRequest) -> m.DescribeGroupsResponse:
        check_types(req)
        out = []
        for gid in req.groups:
            group = self.ctx.groups.get(gid)
            history = [m.RebalanceCause(**vars(c)) for c in self.ctx.history.of(gid)]
            if group is not None:  # in its type's shape (the group-type table's row)
                out.append(self.ctx.describe_classic(group, history))
            elif gid in self.ctx.offset_only_groups():  # Kafka's simple group
                out.append(m.DescribeGroupsResponseGroup(
                    group_id=gid, group_state=cg.EMPTY, generation_id=0,
                    rebalance_history=history))
            else:
                out.append(
                    m.DescribeGroupsResponseGroup(
                        error_code=Errors.GROUP_ID_NOT_FOUND,
                        error_message=f"Group {gid} not found.",
                        group_id=gid,
                        group_state=cg.DEAD,
                    )
                )
        return m.DescribeGroupsResponse(groups=out)

