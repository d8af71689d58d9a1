"""A Connect worker's deadlines (``modern.sessions``), and the group's scheduled rebalance,
kept in step with the records; all of them typed timer keys (the shard routes a due one by its
type, ``ConnectTimer``).

Beyond the kernel's session and rebalance timeouts, the coordinator's own connect assignor may
ask for a later round (``ScheduledRebalance``): a target it writes re-arms it from the stored
assignor metadata, so a reloaded partition re-arms it too.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.connect.group import ConnectGroup
from protocol.connect.member import ConnectWorkerMember
from protocol.connect.records import ConnectGroupTargetAssignmentMetadataKey
from protocol.connect.target import next_scheduled_rebalance_ms
from protocol.modern.sessions import Fence, MemberDeadlines
from protocol.records import Record


@dataclass(frozen=True, slots=True)
class ConnectTimer:
    group_id: str


@dataclass(frozen=True, slots=True)
class ScheduledRebalance(ConnectTimer):
    """The coordinator's own connect assignor asked for a new round by now: work it held for
    a departed worker (scheduled.rebalance.max.delay.ms) or a revocation backoff is over."""


@dataclass(frozen=True, slots=True)
class ConnectMemberTimer(ConnectTimer):
    member_id: str


@dataclass(frozen=True, slots=True)
class WorkerSession(ConnectMemberTimer):
    """No heartbeat by now removes the worker (session timeout)."""


@dataclass(frozen=True, slots=True)
class WorkerRevocationDeadline(ConnectMemberTimer):
    """A worker asked to stop work that has not acknowledged by now is removed (rebalance
    timeout)."""


@dataclass(frozen=True, slots=True)
class AssignmentDeadline(ConnectMemberTimer):
    """The worker chosen to compute the group's assignment (client side) has not installed
    one by now: another worker gets the job (seed 004: "within rebalance.timeout.ms")."""


__all__ = ["Fence", "WorkerTimers"]


class WorkerTimers(MemberDeadlines):
    """Schedules, restarts and fires the workers' session and revocation deadlines."""

    group_type = "connect"
    SESSION = WorkerSession
    REVOCATION = WorkerRevocationDeadline
    SESSION_EXPIRED = "worker session timed out"
    REVOCATION_MISSED = "worker did not revoke within its rebalance timeout"

    def heartbeat_interval_ms(self) -> int:
        return self.ctx.config.group_connect_heartbeat_interval_ms

    def session_timeout_ms(self, group_id: str) -> int:
        return self.ctx.config.group_connect_session_timeout_ms

    def after_replay(
        self, group: ConnectGroup, record: Record, before: ConnectWorkerMember | None
    ) -> None:
        """The kernel's, and a target written by the coordinator's assignor re-arms the
        scheduled rebalance."""
        if type(record.key) is ConnectGroupTargetAssignmentMetadataKey:
            self._arm_scheduled_rebalance(group)
            return
        super().after_replay(group, record, before)

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
