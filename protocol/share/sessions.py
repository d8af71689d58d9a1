"""A share group's deadlines: its typed timer keys (the shard routes a due one by its type,
``ShareTimer``: members' sessions, share-partitions' acquisition locks and initialisation)
and a member's session deadline (``modern.sessions``), kept in step with the records.

A share member has no rebalance timeout (it revokes nothing), so only the session deadline is
ever armed; its expiry removes the member and releases every record it holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.modern.sessions import MemberDeadlines


@dataclass(frozen=True, slots=True)
class ShareTimer:
    group_id: str


@dataclass(frozen=True, slots=True)
class ShareMemberTimer(ShareTimer):
    member_id: str


@dataclass(frozen=True, slots=True)
class ShareMemberSession(ShareMemberTimer):
    """No heartbeat by now removes the member (session timeout); its records are released."""


@dataclass(frozen=True, slots=True)
class ShareMemberRevocation(ShareMemberTimer):
    """The kernel's revocation deadline; never armed: a share member revokes nothing."""


@dataclass(frozen=True, slots=True)
class ShareInitialization(ShareTimer):
    """The group's share-partitions being initialised are ready (``initialization``)."""


@dataclass(frozen=True, slots=True)
class ShareLockExpiry(ShareTimer):
    """The earliest acquisition lock of one share-partition runs out by now."""

    topic_id: str
    partition: int


class ShareMemberTimers(MemberDeadlines):
    group_type = "share"
    SESSION = ShareMemberSession
    REVOCATION = ShareMemberRevocation
    SESSION_EXPIRED = "member session timed out"
    REVOCATION_MISSED = "member did not revoke"  # never: nothing is revoked

    def session_timeout_ms(self, group_id: str) -> int:
        return self.ctx.group_config(group_id).share_setting(self.ctx.config, "session_timeout_ms")

    def heartbeat_interval_ms(self, group_id: str) -> int:
        config = self.ctx.group_config(group_id)
        return config.share_setting(self.ctx.config, "heartbeat_interval_ms")

    def reset_session(self, group_id: str, member_id: str) -> None:
        deadline = self.ctx.now_ms + self.session_timeout_ms(group_id)
        self.ctx.timers.schedule(self.SESSION(group_id, member_id), deadline)
