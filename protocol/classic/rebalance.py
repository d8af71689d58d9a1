"""The two phases of a classic rebalance, shared by every classic request and timer.

In the join phase (PreparingRebalance) every member's JoinGroup reply is *delayed*: it is
answered, through ``ctx.complete``, once every known member has rejoined or the rebalance
timeout has passed; meanwhile the member's failure detection is paused (seed 003). Completing
the join phase starts a generation, persisted with its membership as one record *before* the
replies go out (seed 003, failure point 4). In the sync phase (CompletingRebalance) followers'
SyncGroup replies wait for the leader's assignment (``sync``), which is persisted the same way.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.classic.records import GroupMetadataKey
from protocol.classic.subscriptions import subscribed_topic_names
from protocol.classic.timers import (
    ClassicTimer,
    JoinDeadline,
    MemberSession,
    PendingMemberExpiry,
    SyncDeadline,
)
from protocol.context import ShardContext
from protocol.errors import Errors
from protocol.records import Record, TopicMetadataEntry


class Rebalances:
    """Moves classic groups through their rebalance: what every classic rule calls."""

    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx

    # ------------------------------------------------------------------ the join phase

    def prepare(
        self, group: ClassicGroup, reason: str, member: ClassicMember | None = None
    ) -> None:
        """Start (or restart) a join phase, remembering why."""
        gid = group.group_id
        if group.state == cg.COMPLETING_REBALANCE:
            for each in group.members.values():  # Kafka's resetAndPropagateAssignmentWithError
                each.assignment = b""
            self.fail_pending_syncs(group)
        self.ctx.timers.cancel(SyncDeadline(gid))
        was_empty = group.state == cg.EMPTY
        group.transition_to(cg.PREPARING_REBALANCE, self.ctx.now_ms)
        self.ctx.history.remember(
            gid,
            group.generation_id,
            reason,
            self.ctx.now_ms,
            member.member_id if member is not None else None,
            member.group_instance_id if member is not None else None,
        )
        timeout = group.rebalance_timeout_ms()
        delay = min(self.ctx.config.group_initial_rebalance_delay_ms, timeout)
        if was_empty and delay > 0:
            # An empty group waits a little for more members, so they join in one rebalance.
            group.initial_delay = True
            group.initial_delay_remaining_ms = timeout - delay
            group.new_member_added = False
            self.ctx.timers.schedule(JoinDeadline(gid), self.ctx.now_ms + delay)
            return
        group.initial_delay = False
        self.ctx.timers.schedule(JoinDeadline(gid), self.ctx.now_ms + timeout)
        self.maybe_complete_join(group)

    def maybe_complete_join(self, group: ClassicGroup) -> None:
        if group.state == cg.PREPARING_REBALANCE and not group.initial_delay and group.all_joined():
            self.complete_join(group)

    def complete_join(self, group: ClassicGroup) -> None:
        """End the join phase: drop who did not rejoin, start the next generation, persist
        it, and only then (the runtime holds replies until the record is durable) answer."""
        gid = group.group_id
        self.ctx.timers.cancel(JoinDeadline(gid))
        for member in [mem for mem in group.members.values() if mem.awaiting_join is None]:
            self.drop(group, member)
        group.generation_id += 1
        group.loaded = False
        group.initial_delay = False
        if not group.members:
            group.transition_to(cg.EMPTY, self.ctx.now_ms)
            group.protocol_name = None
            group.leader_id = None
            group.topics = ()
            self.persist(group)
            return
        group.protocol_name = group.select_protocol()
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        # Members keep their last assignment until the leader's SyncGroup brings new ones (a
        # rebalance interrupting this phase clears them: ``prepare``), as Kafka's do.
        group.transition_to(cg.COMPLETING_REBALANCE, self.ctx.now_ms)
        group.topics = self.subscribed_topics(group)
        self.persist(group)
        for member in group.members.values():
            request, member.awaiting_join = member.awaiting_join, None
            member.is_new = False
            self.ctx.complete(request, self.join_response(group, member))
            self.reset_session(group, member)
        self.ctx.timers.schedule(SyncDeadline(gid), self.ctx.now_ms + group.rebalance_timeout_ms())

    def join_response(
        self, group: ClassicGroup, member: ClassicMember, skip: bool = False
    ) -> m.JoinGroupResponse:
        """The generation as ``member`` sees it: the leader gets every member's metadata."""
        leader = member.member_id == group.leader_id
        return m.JoinGroupResponse(
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            skip_assignment=skip,
            member_id=member.member_id,
            members=[
                m.JoinGroupResponseMember(
                    mem.member_id, mem.group_instance_id, mem.metadata_for(group.protocol_name)
                )
                for mem in group.members.values()
            ]
            if leader
            else [],
        )

    def fail_pending_syncs(self, group: ClassicGroup) -> None:
        for member in group.members.values():
            if member.awaiting_sync is not None:
                request, member.awaiting_sync = member.awaiting_sync, None
                self.reset_session(group, member)  # it gets a full session to rejoin
                message = "The group began another rebalance: rejoin."
                self.fail(request, Errors.REBALANCE_IN_PROGRESS, message)

    # ------------------------------------------------------------------ members

    def drop(self, group: ClassicGroup, member: ClassicMember) -> None:
        """Remove a member; a reply it still waits for is answered UNKNOWN_MEMBER_ID."""
        group.remove(member.member_id)
        self.ctx.timers.cancel(MemberSession(group.group_id, member.member_id))
        for pending in (member.awaiting_join, member.awaiting_sync):
            if pending is not None:
                message = "The member was removed from the group."
                self.fail(pending, Errors.UNKNOWN_MEMBER_ID, message, member)
        member.awaiting_join = member.awaiting_sync = None

    def after_removal(self, group: ClassicGroup, reason: str, member: ClassicMember | None) -> None:
        """A member is gone: a settled group rebalances, a joining one may now be complete."""
        if group.state in (cg.STABLE, cg.COMPLETING_REBALANCE):
            self.prepare(group, reason, member)
        else:
            self.maybe_complete_join(group)

    def reset_session(self, group: ClassicGroup, member: ClassicMember) -> None:
        self.ctx.timers.schedule(
            MemberSession(group.group_id, member.member_id),
            self.ctx.now_ms + member.session_timeout_ms,
        )

    def fail(
        self, pending: object, error: Errors, message: str, member: ClassicMember | None = None
    ) -> None:
        """End a waiting JoinGroup or SyncGroup with an error (a JoinGroup keeps telling
        the member its id)."""
        reply = self.ctx.error_reply(pending, error, message)
        if member is not None and isinstance(reply, m.JoinGroupResponse):
            reply.member_id = member.member_id
        self.ctx.complete(pending, reply)

    # ------------------------------------------------------------------ records & metadata

    def persist(self, group: ClassicGroup) -> None:
        self.ctx.emit(Record(GroupMetadataKey(group.group_id), group.to_record()))

    def subscribed_topics(self, group: ClassicGroup) -> tuple[TopicMetadataEntry, ...]:
        """The metadata of the topics the members subscribe to, as the generation saw it."""
        names = subscribed_topic_names(group, strict=False) or set()
        entries = []
        for name in sorted(names):
            t = self.ctx.image.topic_by_name(name)
            if t is not None:
                entries.append(
                    TopicMetadataEntry(t.topic_id, t.name, t.num_partitions, t.racks_digest())
                )
        return tuple(entries)

    # ------------------------------------------------------------------ timers

    def on_timer(self, key: ClassicTimer) -> None:
        group = self.ctx.group_of(key.group_id, "classic")
        if group is None:
            return
        if isinstance(key, JoinDeadline):
            self._on_join_deadline(group)
        elif isinstance(key, SyncDeadline):
            self._on_sync_deadline(group)
        elif isinstance(key, MemberSession):
            member = group.members.get(key.member_id)
            if member is None or member.awaiting_join is not None:
                return
            if member.awaiting_sync is not None:
                # Waiting on the leader's assignment counts as alive (Kafka's rule).
                self.reset_session(group, member)
                return
            self.drop(group, member)
            self.after_removal(group, "member session timed out", member)
        elif isinstance(key, PendingMemberExpiry):
            group.pending_members.discard(key.member_id)
            self.maybe_complete_join(group)

    def _on_join_deadline(self, group: ClassicGroup) -> None:
        if group.state != cg.PREPARING_REBALANCE:
            return
        if group.initial_delay:
            if group.new_member_added and group.initial_delay_remaining_ms > 0:
                # Members keep arriving: wait a little longer, within the rebalance timeout.
                delay = min(
                    self.ctx.config.group_initial_rebalance_delay_ms,
                    group.initial_delay_remaining_ms,
                )
                group.initial_delay_remaining_ms -= delay
                group.new_member_added = False
                self.ctx.timers.schedule(JoinDeadline(group.group_id), self.ctx.now_ms + delay)
                return
            group.initial_delay = False
        self.complete_join(group)

    def _on_sync_deadline(self, group: ClassicGroup) -> None:
        if group.state != cg.COMPLETING_REBALANCE:
            return
        laggards = [mem for mem in group.members.values() if mem.awaiting_sync is None]
        for member in laggards:
            self.drop(group, member)
        self.prepare(group, "members did not send SyncGroup in time")
