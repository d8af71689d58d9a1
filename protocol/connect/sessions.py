"""A Connect worker's deadlines, and the group's scheduled rebalance, kept in step with the
records.

The session timeout removes a worker that stops heartbeating; the rebalance timeout removes a
worker asked to stop work that does not acknowledge in time; the coordinator's own connect
assignor may ask for a later round (``ScheduledRebalance``). All are derived from the records
(``after_replay``), so a reloaded partition restarts every session from load time and
re-arms the scheduled rebalance from the stored assignor metadata.
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.connect.group import ConnectGroup
from protocol.connect.member import ConnectWorkerMember, WorkerState
from protocol.connect.target import next_scheduled_rebalance_ms
from protocol.connect.timers import ScheduledRebalance, WorkerRevocationDeadline, WorkerSession
from protocol.context import ShardContext
from protocol.records import (
    ConnectGroupCurrentMemberAssignmentKey,
    ConnectGroupTargetAssignmentMetadataKey,
    Record,
)

Fence = Callable[[ConnectGroup, str, str], None]


class WorkerTimers:
    """Schedules, restarts and fires the workers' session and revocation deadlines."""

    def __init__(self, ctx: ShardContext, fence: Fence) -> None:
        self.ctx = ctx
        self._fence = fence

    def heartbeat_interval_ms(self) -> int:
        return self.ctx.config.group_connect_heartbeat_interval_ms

    def reset_session(self, group_id: str, member_id: str) -> None:
        """From now; a classic worker (online migration) keeps its JoinGroup's timeout."""
        timeout = self.ctx.config.group_connect_session_timeout_ms
        group = self.ctx.groups.get(group_id)
        member = group.members.get(member_id) if isinstance(group, ConnectGroup) else None
        if member is not None and member.metadata.classic_member_metadata is not None:
            timeout = member.metadata.classic_member_metadata.session_timeout_ms
        self.ctx.timers.schedule(WorkerSession(group_id, member_id), self.ctx.now_ms + timeout)

    def on_timer(self, key: WorkerSession | WorkerRevocationDeadline) -> None:
        group = self.ctx.groups.get(key.group_id)
        if not isinstance(group, ConnectGroup):
            return
        member = group.members.get(key.member_id)
        if member is None:
            return
        if isinstance(key, WorkerSession):
            self._fence(group, key.member_id, "worker session timed out")
        elif member.state is WorkerState.UNREVOKED:
            self._fence(group, key.member_id, "worker did not revoke within its rebalance timeout")

    def after_replay(
        self, group: ConnectGroup, record: Record, before: ConnectWorkerMember | None
    ) -> None:
        """A worker seen for the first time gets a session from now; entering UNREVOKED (or
        being asked to stop something new) starts its rebalance timer, leaving it stops it; a
        target written by the coordinator's assignor re-arms the scheduled rebalance."""
        key = record.key
        gid = group.group_id
        if isinstance(key, ConnectGroupTargetAssignmentMetadataKey):
            self._arm_scheduled_rebalance(group)
            return
        member_id = getattr(key, "member_id", None)
        if member_id is None:
            return
        after = group.members.get(member_id)
        if after is None:
            self.ctx.timers.cancel(WorkerSession(gid, member_id))
            self.ctx.timers.cancel(WorkerRevocationDeadline(gid, member_id))
            return
        if before is None and WorkerSession(gid, member_id) not in self.ctx.timers:
            self.reset_session(gid, member_id)
        if not isinstance(key, ConnectGroupCurrentMemberAssignmentKey):
            return
        deadline = WorkerRevocationDeadline(gid, member_id)
        if after.state is not WorkerState.UNREVOKED:
            self.ctx.timers.cancel(deadline)
        elif (
            before is None
            or before.state is not WorkerState.UNREVOKED
            or before.member_epoch != after.member_epoch
            or before.pending_revocation != after.pending_revocation
            or deadline not in self.ctx.timers
        ):
            timeout = max(after.rebalance_timeout_ms, 0)
            self.ctx.timers.schedule(deadline, self.ctx.now_ms + timeout)

    def _arm_scheduled_rebalance(self, group: ConnectGroup) -> None:
        key = ScheduledRebalance(group.group_id)
        choice = group.assignor(self.ctx.config.default_connect_assignor)
        now = self.ctx.now_ms
        at_ms = None if choice.client_side else next_scheduled_rebalance_ms(group.target, now)
        if at_ms is None:
            self.ctx.timers.cancel(key)
        else:
            # Bounded by the delay: a deadline read from another clock (a coordinator moved
            # hosts) costs at most one early recomputation, never an endless hold. At least a
            # millisecond ahead, so a round can never ask to be rerun in the same instant.
            config = self.ctx.group_config(group.group_id)
            cap = config.effective_scheduled_rebalance_max_delay_ms(self.ctx.config)
            self.ctx.timers.schedule(key, max(now + 1, min(at_ms, now + cap)))
