"""The deadlines a classic group keeps, as typed timer keys.

A key says whose timer it is by its type, so the shard hands a due key to the classic rules
without parsing strings, and two rooms can never collide on a key.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ClassicTimer:
    group_id: str


@dataclass(frozen=True, slots=True)
class JoinDeadline(ClassicTimer):
    """The join phase ends: the initial delay, or the rebalance timeout, has passed."""


@dataclass(frozen=True, slots=True)
class SyncDeadline(ClassicTimer):
    """The sync phase ends: members that sent no SyncGroup by now are removed."""


@dataclass(frozen=True, slots=True)
class MemberSession(ClassicTimer):
    """A member's session: no heartbeat, join or sync by now removes it."""

    member_id: str


@dataclass(frozen=True, slots=True)
class PendingMemberExpiry(ClassicTimer):
    """A member id handed out with MEMBER_ID_REQUIRED is good for one session timeout."""

    member_id: str
