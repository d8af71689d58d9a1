"""A KIP-848 member's two deadlines (``modern.sessions``) as typed timer keys (the shard routes
a due one by its type, ``ConsumerTimer``), and its heartbeat interval.

The session timeout and heartbeat interval are the group's (dynamic group config over the
broker's), so every reply tells the member when to come back.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.modern.sessions import MemberDeadlines


@dataclass(frozen=True, slots=True)
class ConsumerTimer:
    group_id: str
    member_id: str


@dataclass(frozen=True, slots=True)
class MemberSession(ConsumerTimer):
    """No heartbeat by now fences the member (session timeout)."""


@dataclass(frozen=True, slots=True)
class RevocationDeadline(ConsumerTimer):
    """A member asked to revoke that has not acknowledged by now is fenced (rebalance timeout)."""


class MemberTimers(MemberDeadlines):
    """Schedules, restarts and fires the members' session and revocation deadlines."""

    group_type = "consumer"
    SESSION = MemberSession
    REVOCATION = RevocationDeadline
    SESSION_EXPIRED = "member session timed out"
    REVOCATION_MISSED = "member did not revoke within its rebalance timeout"

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
