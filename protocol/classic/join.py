"""JoinGroup: who may join a classic group, and when a join starts a rebalance.

Kafka's rules with KIP-394 (a dynamic member first learns its id), KIP-345 (a static member's
new process takes its old place) and KIP-800 (the join reason decides whether a known member
rejoining a Stable group rebalances it).
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.classic.lookup import (
    existing_member,
    protocols_of,
    rebalance_timeout_of,
)
from protocol.classic.rebalance import Rebalances
from protocol.classic.timers import MemberSession, PendingMemberExpiry
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.validation import check_types


class JoinRules:
    """Answers JoinGroup: at once (a lost reply resent, MEMBER_ID_REQUIRED, a static member
    back without a rebalance) or, in a rebalance, when the join phase completes."""

    def __init__(self, ctx: ShardContext, rebalances: Rebalances) -> None:
        self.ctx = ctx
        self.rebalances = rebalances

    def join(self, req: m.JoinGroupRequest) -> m.JoinGroupResponse | None:
        check_types(req)
        self._validate(req)
        existing = self.ctx.groups.get(req.group_id)
        if (existing is not None and existing.group_type == "consumer" and not req.member_id
                and req.protocol_type and req.protocols
                and self.ctx.migration.drop_if_empty(existing)):
            # A new member's join to an empty consumer group: it gives way to a new classic
            # group (only a join that will be accepted drops it: a refusal leaves no trace).
            existing = None
        host = self.ctx.classic_host(existing) if existing is not None else None
        if host is not None:  # classic members of a group of another type
            return host.join(existing, req)
        group = existing
        if group is None:
            if req.member_id:
                raise CoordinatorError(
                    Errors.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {req.group_id}.",
                )
            group = ClassicGroup(req.group_id, state_timestamp_ms=self.ctx.now_ms)
        if not group.supports(req.protocol_type, protocols_of(req)):
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                f"The group's members support no protocol in common with {req.member_id or 'the'}"
                f" joining member (protocol type {req.protocol_type!r}).",
            )
        if existing is None:
            # Written at once, as Kafka does, so the group outlives a failover from the start.
            self.ctx.groups[req.group_id] = group
            self.rebalances.persist(group)
        if not req.member_id:
            return self._join_unknown(group, req)
        return self._join_known(group, req)

    def _validate(self, req: m.JoinGroupRequest) -> None:
        cfg = self.ctx.config
        if not req.group_id:
            raise CoordinatorError(Errors.INVALID_GROUP_ID, "The group id must not be empty.")
        if (
            not cfg.group_min_session_timeout_ms
            <= req.session_timeout_ms
            <= (cfg.group_max_session_timeout_ms)
        ):
            raise CoordinatorError(
                Errors.INVALID_SESSION_TIMEOUT,
                f"The session timeout {req.session_timeout_ms} ms is outside the broker's "
                f"[{cfg.group_min_session_timeout_ms}, {cfg.group_max_session_timeout_ms}] ms.",
            )
        if req.rebalance_timeout_ms < -1:
            raise CoordinatorError(Errors.INVALID_REQUEST, "The rebalance timeout is negative.")
        if not req.protocol_type or not req.protocols:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                "A JoinGroup needs a protocol type and at least one protocol.",
            )
        if req.group_instance_id == "":
            raise CoordinatorError(Errors.INVALID_REQUEST, "The group instance id is empty.")
        if req.reason is not None and req.reason not in cg.JOIN_REASONS:
            raise CoordinatorError(
                Errors.INVALID_REQUEST,
                f"Unknown join reason {req.reason!r}; expected one of {list(cg.JOIN_REASONS)}.",
            )

    def _join_unknown(
        self, group: ClassicGroup, req: m.JoinGroupRequest
    ) -> m.JoinGroupResponse | None:
        iid = req.group_instance_id
        if iid is not None:
            new_id = self._new_member_id(iid, group)
            holder = group.member_by_instance(iid)
            if holder is not None:
                return self._static_rejoin(group, holder, new_id, req)
            self._check_size(group)
            return self._add_and_join(group, new_id, req)
        self._check_size(group)
        new_id = self._new_member_id(req.client_id or "consumer", group)
        # KIP-394: a member first learns its id, so a retried JoinGroup cannot add a ghost.
        group.pending_members.add(new_id)
        self.ctx.timers.schedule(
            PendingMemberExpiry(group.group_id, new_id), self.ctx.now_ms + req.session_timeout_ms
        )
        return m.JoinGroupResponse(
            error_code=Errors.MEMBER_ID_REQUIRED,
            error_message="The group requires a member id: rejoin with the one given.",
            member_id=new_id,
        )

    def _join_known(
        self, group: ClassicGroup, req: m.JoinGroupRequest
    ) -> m.JoinGroupResponse | None:
        mid = req.member_id
        if mid in group.pending_members:
            self._check_size(group)
            return self._add_and_join(group, mid, req)
        member = existing_member(group, mid, req.group_instance_id)
        if group.state == cg.PREPARING_REBALANCE:
            self._update(member, req)
            self._await_join(group, member, req)
            self.rebalances.maybe_complete_join(group)
            return None
        if group.state == cg.COMPLETING_REBALANCE:
            if member.matches(protocols_of(req)) and not group.loaded:
                self.rebalances.reset_session(group, member)
                return self.rebalances.join_response(group, member)  # its reply was lost: resend
            self._update(member, req)
            self._await_join(group, member, req)
            reason = "member rejoined after failover" if group.loaded else "member metadata changed"
            self.rebalances.prepare(group, reason, member)
            return None
        if group.state == cg.STABLE:
            cause = self._rebalance_cause(group, member, req)
            if cause is None:
                self.rebalances.reset_session(group, member)
                return self.rebalances.join_response(group, member, skip=mid == group.leader_id)
            self._update(member, req)
            self._await_join(group, member, req)
            self.rebalances.prepare(group, cause, member)
            return None
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {group.group_id}."
        )

    def _rebalance_cause(
        self, group: ClassicGroup, member: ClassicMember, req: m.JoinGroupRequest
    ) -> str | None:
        """KIP-800: does a known member rejoining a Stable group need a rebalance?

        Changed protocols always do (the reason ranks below the existing checks). Then the
        reason decides: ``restart`` never, ``upgrade`` always, ``topic_metadata_change`` when
        the leader says so. Without a reason, Kafka's rule: the leader rejoining does, a
        follower with unchanged metadata does not.
        """
        if not member.matches(protocols_of(req)):
            return "member metadata changed"
        if req.reason == cg.RESTART:
            return None
        if req.reason == cg.UPGRADE:
            return "member upgrade"
        if member.member_id == group.leader_id:
            if req.reason == cg.TOPIC_METADATA_CHANGE:
                return "topic metadata changed (leader)"
            return "leader rejoined"
        return None

    def _static_rejoin(
        self, group: ClassicGroup, old: ClassicMember, new_id: str, req: m.JoinGroupRequest
    ) -> m.JoinGroupResponse | None:
        """A static member back under a new member id takes its old place (KIP-345); the old
        id is fenced. In a Stable group with unchanged metadata no rebalance follows, unless
        the reason asks for one (KIP-800)."""
        changed = not old.matches(protocols_of(req))
        was_leader = old.member_id == group.leader_id
        for pending in (old.awaiting_join, old.awaiting_sync):
            if pending is not None:
                message = f"Another member took instance id {old.group_instance_id}."
                self.rebalances.fail(pending, Errors.FENCED_INSTANCE_ID, message)
        old.awaiting_join = old.awaiting_sync = None
        self.ctx.timers.cancel(MemberSession(group.group_id, old.member_id))
        member = group.replace_static(old.member_id, new_id)
        if group.state == cg.PREPARING_REBALANCE:
            self._update(member, req)
            self._await_join(group, member, req)
            self.rebalances.maybe_complete_join(group)
            return None
        cause: str | None = None
        if changed:
            cause = "static member rejoined with new metadata"
        elif req.reason == cg.UPGRADE:
            cause = "member upgrade"
        elif req.reason == cg.TOPIC_METADATA_CHANGE and was_leader:
            cause = "topic metadata changed (leader)"
        elif group.state == cg.COMPLETING_REBALANCE:
            # The leader may be assigning to the old id right now: start over (Kafka does).
            cause = "static member replaced during the sync phase"
        if cause is not None:
            self._update(member, req)
            self._await_join(group, member, req)
            self.rebalances.prepare(group, cause, member)
            return None
        # Same place, same assignment: persist the new id so the old one stays fenced.
        self._update(member, req, keep_protocols=True)
        self.rebalances.persist(group)
        self.rebalances.reset_session(group, member)
        return self.rebalances.join_response(group, member, skip=was_leader)

    def _add_and_join(self, group: ClassicGroup, member_id: str, req: m.JoinGroupRequest) -> None:
        group.pending_members.discard(member_id)
        self.ctx.timers.cancel(PendingMemberExpiry(group.group_id, member_id))
        member = ClassicMember(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=rebalance_timeout_of(req),
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=protocols_of(req),
            is_new=True,
        )
        group.add(member)
        group.new_member_added = True
        self._await_join(group, member, req)
        if group.state == cg.PREPARING_REBALANCE:
            self.rebalances.maybe_complete_join(group)
        else:
            self.rebalances.prepare(group, "new member joined", member)
        return None

    def _check_size(self, group: ClassicGroup) -> None:
        limit = self.ctx.config.group_max_size
        if len(group.members) >= limit:
            raise CoordinatorError(
                Errors.GROUP_MAX_SIZE_REACHED,
                f"The classic group has reached its maximum size of {limit} members.",
            )

    @staticmethod
    def _update(
        member: ClassicMember, req: m.JoinGroupRequest, keep_protocols: bool = False
    ) -> None:
        member.client_id = req.client_id or member.client_id
        member.client_host = req.client_host or member.client_host
        member.session_timeout_ms = req.session_timeout_ms
        member.rebalance_timeout_ms = rebalance_timeout_of(req)
        if not keep_protocols:
            member.protocols = protocols_of(req)

    def _await_join(
        self, group: ClassicGroup, member: ClassicMember, req: m.JoinGroupRequest
    ) -> None:
        if member.awaiting_join is not None and member.awaiting_join is not req:
            message = "A newer JoinGroup from the same member replaced this one."
            self.rebalances.fail(
                member.awaiting_join, Errors.REBALANCE_IN_PROGRESS, message, member
            )
        member.awaiting_join = req
        # Seed 003: no failure detection between a JoinGroup and its reply.
        self.ctx.timers.cancel(MemberSession(group.group_id, member.member_id))

    def _new_member_id(self, prefix: str, group: ClassicGroup) -> str:
        """Random ids can repeat (a reloaded shard may reuse its seed): never hand out one
        the group already uses."""
        while True:
            member_id = f"{prefix}-{self.ctx.new_member_id()}"
            if member_id not in group.members and member_id not in group.pending_members:
                return member_id
