"""The deadlines a KIP-848 member keeps, as typed timer keys (the shard routes by type)."""

from __future__ import annotations

from dataclasses import dataclass


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
