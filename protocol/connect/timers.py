"""The deadlines of a Connect group, as typed timer keys (the shard routes them by type)."""

from __future__ import annotations

from dataclasses import dataclass


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
