"""The rules of KIP-848 consumer groups: heartbeats, leaving, fencing, timers, assignment.

This is the consumer half of Kafka's ``GroupMetadataManager``. Every decision becomes records,
which the shard replays at once (``ctx.emit``), so the in-memory state is always exactly what
the log would rebuild. A heartbeat is handled in three steps so that many of them can share one
target-assignment computation (``handle_batch``):

1. ``admit``: validate, find or create the member, check its epoch, apply its changes. A leave,
   a fence or an error is answered here.
2. ``finish_turn``: once per turn, bump the epoch of every group that changed and recompute
   its target assignment (``target_assignment.EpochTurn``). Members' deadlines: ``sessions``.
3. ``complete``: reconcile the member toward its target and build its reply.

What every modern group shares (static membership, the lost-response rule, size and assignor
checks, member records, leave and fence) is the kernel's (``protocol.modern.rules``); this
module adds the consumer's subscription triggers, the three steps and the migration hooks.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace

from protocol import messages as m
from protocol import partitions as pm
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.heartbeat_changes import (
    apply_request,
    assignment_changed,
    is_full,
    subscription_changed,
)
from protocol.consumer.member import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConsumerGroupMember,
    MemberState,
)
from protocol.consumer.records import ConsumerGroupMemberMetadataKey
from protocol.consumer.sessions import ConsumerTimer, MemberTimers
from protocol.consumer.target_assignment import EpochTurn
from protocol.consumer.unconfirmed import UnconfirmedAssignments
from protocol.consumer.validation import validate_heartbeat
from protocol.consumer.wake_ups import WakeUps
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.modern.reconciler import reconcile_partitions
from protocol.modern.rules import ModernRules
from protocol.records import Record

log = logging.getLogger(__name__)

# A member in one of these states has a step in progress: partitions to give up (and
# acknowledge), or partitions it waits for another member to release. It is told to come back
# at the short reconciliation interval until the step is done (``MemberTimers``).
STEP_WAITING = (MemberState.UNREVOKED_PARTITIONS, MemberState.UNRELEASED_PARTITIONS)


@dataclass
class Admitted:
    """A heartbeat that passed step 1 and waits for the turn's target assignment."""

    request: m.ConsumerGroupHeartbeatRequest
    group_id: str
    member_id: str
    before: ConsumerGroupMember | None  # the member as it was before this heartbeat
    owned: pm.PartitionMap | None
    send_assignment: bool  # join or full request: the reply carries the assignment regardless


class ConsumerGroupRules(ModernRules):
    """Every KIP-848 heartbeat, leave, fence and metadata change, in the three steps above;
    and the member changes online migration asks for (``ConsumerMembersPort``)."""

    GROUP, ASSIGNMENT = ConsumerGroup, m.HeartbeatAssignment

    def __init__(self, ctx: ShardContext) -> None:
        super().__init__(ctx)
        self.turn = self.epoch_turn = EpochTurn(ctx)
        self.sessions = MemberTimers(ctx, self.fence)
        self.wake_ups = WakeUps()  # whom a turn gives a reason to heartbeat now
        self.unconfirmed = UnconfirmedAssignments()  # told, not yet heard holding it

    # ------------------------------------------------------------------ step 1: admit

    def admit(
        self, req: m.ConsumerGroupHeartbeatRequest
    ) -> Admitted | m.ConsumerGroupHeartbeatResponse:
        validate_heartbeat(req, self.ctx.config)
        if req.member_epoch == JOIN_EPOCH:
            self.ctx.migration.before_consumer_heartbeat(req)  # a classic group converts first
        group = self.group_of(req.group_id)
        if group is None and req.group_id in self.ctx.groups:
            other = self.ctx.groups[req.group_id].group_type
            raise CoordinatorError(
                Errors.GROUP_ID_NOT_FOUND,
                f"Group {req.group_id} is a {other} group, not a consumer group.",
            )
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group, req)
        owned = pm.from_wire(req.topic_partitions) if req.topic_partitions is not None else None
        if req.member_epoch == JOIN_EPOCH:
            return self._join(group, req)
        member = self.existing_member(group, req.group_id, req.member_id, req.instance_id)
        assert group is not None
        if req.member_epoch != member.member_epoch and not self.lost_response(
            member, req.member_epoch, None if owned is None else pm.pairs(owned)
        ):
            self.fence(group, member.member_id, "member fenced: stale epoch")
            return m.ConsumerGroupHeartbeatResponse(
                error_code=Errors.FENCED_MEMBER_EPOCH,
                error_message=(
                    f"The consumer group member has a smaller or larger member epoch "
                    f"({req.member_epoch}) than the one known by the group coordinator "
                    f"({member.member_epoch}). The member must abandon all its partitions "
                    "and rejoin."
                ),
            )
        if req.member_epoch != member.member_epoch:
            # A lost response (accepted above): what the member owned at its previous epoch
            # says nothing of the assignment it may be taking up right now, so it releases
            # nothing until it reports at its current epoch.
            owned = None
        self._update_member(group, member, req)
        return Admitted(req, req.group_id, member.member_id, member, owned, is_full(req))

    def _join(self, group: ConsumerGroup | None, req: m.ConsumerGroupHeartbeatRequest) -> Admitted:
        holder = self.static_holder(group, req.member_id, req.instance_id)
        if holder is not None:
            assert group is not None
            return self._replace_static_member(group, holder, req)
        existing = group.members.get(req.member_id) if group is not None and req.member_id else None
        if existing is not None:
            # A member rejoining under its own id (it lost its state): it owns nothing now.
            self._update_member(group, existing, req)
            return Admitted(req, req.group_id, existing.member_id, existing, {}, True)
        self.check_size(group)
        member_id = req.member_id or self._fresh_member_id(group)
        member = apply_request(ConsumerGroupMember(member_id), req)
        self.check_client_assignors(group, member)
        self.emit_new_member(req.group_id, member)
        self.turn.mark(req.group_id, "new member joined", member)
        self.sessions.reset_session(req.group_id, member_id)
        return Admitted(req, req.group_id, member_id, None, {}, True)

    def _fresh_member_id(self, group: ConsumerGroup | None) -> str:
        while True:
            member_id = self.ctx.new_member_id()
            if group is None or member_id not in group.members:
                return member_id

    def _replace_static_member(
        self, group: ConsumerGroup, old: ConsumerGroupMember, req: m.ConsumerGroupHeartbeatRequest
    ) -> Admitted:
        """A static member back from a temporary leave takes its old place, without a rebalance."""
        new_id = req.member_id or self._fresh_member_id(group)
        new = apply_request(replace(old, member_id=new_id), req).updated(
            classic_member_metadata=None
        )
        self.check_client_assignors(group, new, replacing=old.member_id)
        gid = group.group_id
        self.take_place(group, old, new)
        if subscription_changed(old, new):
            self.turn.mark(gid, "static member rejoined with changes", new)
        self.sessions.reset_session(gid, new_id)
        return Admitted(req, gid, new_id, None, {}, True)

    def _update_member(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        req: m.ConsumerGroupHeartbeatRequest,
    ) -> None:
        self._store(group, member, apply_request(member, req))

    def _store(
        self, group: ConsumerGroup, member: ConsumerGroupMember, updated: ConsumerGroupMember
    ) -> None:
        """Persist a member's changed metadata (a rebalance if its subscription changed)."""
        if updated.metadata != member.metadata:
            self.check_client_assignors(group, updated)
            self.emit_metadata(group.group_id, updated)
            if subscription_changed(member, updated):
                self.turn.mark(group.group_id, "member subscription changed", updated)
        if group.group_epoch > group.assignment_epoch:
            # A target that could not be computed earlier is retried (a steady heartbeat of a
            # group whose target is current touches nothing).
            self.turn.mark(group.group_id, None)
        self.sessions.reset_session(group.group_id, member.member_id)

    def _leave(
        self, group: ConsumerGroup | None, req: m.ConsumerGroupHeartbeatRequest
    ) -> m.ConsumerGroupHeartbeatResponse:
        member = self.leave(group, req)
        # No interval: a member that left has nothing to heartbeat for (Kafka's reply is 0).
        return m.ConsumerGroupHeartbeatResponse(
            member_id=member.member_id, member_epoch=req.member_epoch, heartbeat_interval_ms=0
        )

    def fence(self, group: ConsumerGroup, member_id: str, reason: str = "member removed") -> None:
        """Remove a member (it left, was fenced or timed out) and trigger a rebalance; a group
        left with classic members only converts back to a classic group (seed 002).

        With no assignment interval the turn computes the new target (seed 002: "B leaves;
        the coordinator computes a new target"). With one (KIP-1263), the target is left to
        the group's next heartbeat, as Kafka 4.4's fence leaves it, so the interval counts
        from that heartbeat's computation; a group left empty gets its empty target at once
        (docs/decisions.md, "Assignment interval of consumer groups")."""
        member = group.members.get(member_id)
        gid = group.group_id
        self.remove_member_records(gid, member_id)
        self.ctx.classic_members.forget(gid, member_id)
        self.turn.mark(gid, reason, member, compute=self.turn.computes_at_fence(group))
        self.ctx.migration.maybe_downgrade(group)

    # ------------------------------------------------- for classic members (migration)

    def add_member(self, group: ConsumerGroup, member_id: str, fields: dict) -> ConsumerGroupMember:
        """A classic member joining a converted group: its records, a bump, a session."""
        self.check_size(group)
        member = ConsumerGroupMember(member_id).updated(**fields)
        gid = group.group_id
        self.emit_new_member(gid, member)
        self.turn.mark(gid, "new member joined", member)
        self.sessions.reset_session(gid, member_id)
        return member

    def update_member(
        self, group: ConsumerGroup, member: ConsumerGroupMember, fields: dict
    ) -> ConsumerGroupMember:
        updated = member.updated(**fields)
        self._store(group, member, updated)
        return updated

    def replace_member(
        self, group: ConsumerGroup, old: ConsumerGroupMember, new_id: str, fields: dict
    ) -> ConsumerGroupMember:
        """A static member's new process (new member id) takes the old one's place and
        assignment; the old id is gone, so its process is fenced."""
        new = replace(old, member_id=new_id).updated(**fields)
        gid = group.group_id
        self.take_place(group, old, new)
        changed = subscription_changed(old, new)
        self.turn.mark(gid, "static member rejoined with changes" if changed else None, new)
        self.sessions.reset_session(gid, new_id)
        return new

    def touch_session(self, group_id: str, member_id: str) -> None:
        self.sessions.reset_session(group_id, member_id)

    # ---------------------------------------------------------------- step 3: complete

    def complete(self, a: Admitted) -> m.ConsumerGroupHeartbeatResponse:
        group = self.group_of(a.group_id)
        assert group is not None
        member = group.members[a.member_id]
        self.wake_ups.answered(a.group_id, a.member_id)
        new = reconcile_partitions(
            member, group.assignment_epoch, group.target_of(a.member_id), a.owned, group.owner_of
        )
        if new != member:
            self.emit_assignment(a.group_id, new)
        choice = group.assignor(self.ctx.config)
        compute = (
            choice.client_side
            and choice.chosen_member_id == new.member_id
            and group.group_epoch > group.assignment_epoch
        )
        resp = m.ConsumerGroupHeartbeatResponse(
            member_id=new.member_id,
            member_epoch=new.member_epoch,
            heartbeat_interval_ms=self.sessions.heartbeat_interval_ms(
                a.group_id, waiting=compute or new.state in STEP_WAITING
            ),
            should_compute_assignment=compute,
        )
        key = (a.group_id, new.member_id)
        send = a.send_assignment or assignment_changed(a.before, new)
        # A steady heartbeat (nothing owned stated, nothing owed) converts nothing.
        if send or a.owned is not None or key in self.unconfirmed:
            reported = pm.pairs(a.owned) if a.owned is not None else None
            assigned = new.assigned_units
            if send or self.unconfirmed.resend(key, reported, assigned):
                resp.assignment = self.assignment(group, new)
                self.unconfirmed.sent(key, reported, assigned, whole=a.send_assignment)
        return resp

    # ------------------------------------------------------- step 2, timers, replay

    def finish_turn(self) -> None:
        self.turn.finish()

    def on_timer(self, key: ConsumerTimer) -> None:
        self.sessions.on_timer(key)

    def after_replay(
        self, group: ConsumerGroup, record: Record, before: ConsumerGroupMember | None
    ) -> None:
        self.sessions.after_replay(group, record, before)
        self.wake_ups.after_replay(group, record, before)
        if record.value is None and type(record.key) is ConsumerGroupMemberMetadataKey:
            self.unconfirmed.forget((record.key.group_id, record.key.member_id))

    def on_metadata(self, groups: list[ConsumerGroup]) -> None:
        """New topic metadata: bump every group whose subscribed slice changed."""
        for group in groups:
            if (
                group.members
                and group.subscription_entries(self.ctx.image) != group.subscription_metadata
            ):
                self.turn.mark(group.group_id, "topic metadata changed")
