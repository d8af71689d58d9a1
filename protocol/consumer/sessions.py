"""A KIP-848 member's two deadlines, kept in step with its records.

The session timeout fences a member that stops heartbeating; the rebalance timeout fences a
member asked to revoke partitions that does not acknowledge in time. Both are derived from
the records (``after_replay``), so a reloaded partition restarts every session from load time.
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import ConsumerGroupMember, MemberState
from protocol.consumer.timers import ConsumerTimer, MemberSession, RevocationDeadline
from protocol.context import ShardContext
from protocol.records import ConsumerGroupCurrentMemberAssignmentKey, Record


class MemberTimers:
    """Schedules, restarts and fires the members' session and revocation deadlines."""

    def __init__(self, ctx: ShardContext, fence: Callable[[ConsumerGroup, str, str], None]) -> None:
        self.ctx = ctx
        self._fence = fence

    def heartbeat_interval_ms(self, group_id: str, waiting: bool = False) -> int:
        """The interval a reply tells the member to wait before its next heartbeat.

        A member with a step waiting on it or for it (``waiting``) gets the short
        reconciliation interval, so the step is done within a fraction of the normal interval
        (a released partition reaches its new owner promptly); every other member gets the
        group's interval, so a stable group heartbeats no more than Kafka's would.
        """
        config = self.ctx.group_config(group_id)
        if waiting:
            return config.reconciliation_heartbeat_interval_ms(self.ctx.config)
        return config.effective_heartbeat_interval_ms(self.ctx.config)

    def session_timeout_ms(self, group_id: str) -> int:
        return self.ctx.group_config(group_id).effective_session_timeout_ms(self.ctx.config)

    def reset_session(self, group_id: str, member_id: str) -> None:
        timeout = self.session_timeout_ms(group_id)
        group = self.ctx.consumer_group(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is not None and member.metadata.classic_member_metadata is not None:
            timeout = member.metadata.classic_member_metadata.session_timeout_ms
        self.ctx.timers.schedule(MemberSession(group_id, member_id), self.ctx.now_ms + timeout)

    def on_timer(self, key: ConsumerTimer) -> None:
        group = self.ctx.consumer_group(key.group_id)
        member = group.members.get(key.member_id) if group is not None else None
        if member is None:
            return
        if isinstance(key, MemberSession):
            self._fence(group, key.member_id, "member session timed out")
        elif member.state is MemberState.UNREVOKED_PARTITIONS:
            self._fence(group, key.member_id, "member did not revoke within its rebalance timeout")

    def after_replay(
        self, group: ConsumerGroup, record: Record, before: ConsumerGroupMember | None
    ) -> None:
        """Keep the member timers in step with the records, for live events and loading alike.

        A member seen for the first time gets a session timer from now (so after a restart
        every session restarts from load time); entering UNREVOKED_PARTITIONS, or being asked
        to revoke something new, starts the rebalance timer; leaving that state stops it.
        """
        key = record.key
        member_id = getattr(key, "member_id", None)
        if member_id is None:
            return
        gid = group.group_id
        after = group.members.get(member_id)
        if after is None:
            self.ctx.timers.cancel(MemberSession(gid, member_id))
            self.ctx.timers.cancel(RevocationDeadline(gid, member_id))
            return
        if before is None and MemberSession(gid, member_id) not in self.ctx.timers:
            self.reset_session(gid, member_id)
        if not isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
            return
        if after.state is not MemberState.UNREVOKED_PARTITIONS:
            self.ctx.timers.cancel(RevocationDeadline(gid, member_id))
        elif (
            before is None
            or before.state is not MemberState.UNREVOKED_PARTITIONS
            or before.member_epoch != after.member_epoch
            or before.partitions_pending_revocation != after.partitions_pending_revocation
            or RevocationDeadline(gid, member_id) not in self.ctx.timers
        ):
            timeout = max(after.rebalance_timeout_ms, 0)
            self.ctx.timers.schedule(RevocationDeadline(gid, member_id), self.ctx.now_ms + timeout)
