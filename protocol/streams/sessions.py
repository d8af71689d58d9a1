"""A streams group's timers and settings.

Timer keys (the shard routes a due timer by its base type, ``StreamsTimer``): a member's
session and revocation deadlines (``modern.sessions``) and the group's initial rebalance delay.
Settings are Kafka 4.4's ``group.streams.*`` broker defaults, overridden per group by the group
configs ``streams.session.timeout.ms``, ``streams.heartbeat.interval.ms``,
``streams.num.standby.replicas``, ``streams.initial.rebalance.delay.ms`` and
``streams.assignment.interval.ms`` (KIP-1263) when the group's
``GroupConfig`` carries them (an attribute ``streams_<name>``; None or absent: the default).
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol.modern.sessions import MemberDeadlines


def setting(ctx, group_id: str, name: str) -> int:
    """A streams group's ``name``: its group config when set, else the broker's
    (``CoordinatorConfig.group_streams_<name>``, Kafka 4.4's ``group.streams.*`` defaults)."""
    override = getattr(ctx.group_config(group_id), f"streams_{name}", None)
    if override is not None:
        return override
    return getattr(ctx.config, f"group_streams_{name}")


@dataclass(frozen=True, slots=True)
class StreamsTimer:
    group_id: str


@dataclass(frozen=True, slots=True)
class StreamsMemberTimer(StreamsTimer):
    member_id: str


@dataclass(frozen=True, slots=True)
class StreamsMemberSession(StreamsMemberTimer):
    """No heartbeat by now removes the member."""


@dataclass(frozen=True, slots=True)
class StreamsMemberRevocation(StreamsMemberTimer):
    """Tasks to revoke not revoked by now (the member's rebalance timeout) removes it."""


@dataclass(frozen=True, slots=True)
class StreamsInitialDelay(StreamsTimer):
    """The initial rebalance delay of a group that was empty ends: tasks are assigned."""


class StreamsMemberTimers(MemberDeadlines):
    group_type = "streams"
    SESSION = StreamsMemberSession
    REVOCATION = StreamsMemberRevocation
    SESSION_EXPIRED = "member session timed out"
    REVOCATION_MISSED = "member did not revoke its tasks in time"

    def session_timeout_ms(self, group_id: str) -> int:
        return setting(self.ctx, group_id, "session_timeout_ms")

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return setting(self.ctx, group_id, "heartbeat_interval_ms")

    def reset_session(self, group_id: str, member_id: str) -> None:
        deadline = self.ctx.now_ms + self.session_timeout_ms(group_id)
        self.ctx.timers.schedule(self.SESSION(group_id, member_id), deadline)
