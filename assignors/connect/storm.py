"""The storm guard: no burst of revoking rounds, as Kafka's exponential backoff.

Kafka Connect (KAFKA-12495) skips load-balancing revocations when the previous round also
revoked, and waits ``1 * 40^k`` ms (40 ms, 1.6 s, 64 s, ... capped at
``scheduled.rebalance.max.delay.ms``) before the ``k``-th consecutive revoking round. So a
train of workers joining one by one moves work at most a few times, not once per joiner.

Cohort's assignor returns final targets, so there is no mandatory follow-up round after a
revocation to tell "consecutive" from "later"; time does it instead. A round that wants to
move work at ``now`` may do so once the backoff of the rounds so far has passed since the
last revoking round; otherwise it moves nothing (free work is still handed out) and asks to
be rerun when the wait is over. A burst ends, and the count restarts, when a round finds
nothing to move after the current backoff has passed, or after a full maximum delay
without revocations. A maximum delay of 0 turns the guard off, as in Kafka.
"""

from __future__ import annotations

from dataclasses import dataclass

from assignors.connect.metadata import NO_TIME, StormGuard

BACKOFF_INITIAL_MS = 1
BACKOFF_MULTIPLIER = 40


def backoff_ms(revoking_rounds: int, max_delay_ms: int) -> int:
    """The wait after ``revoking_rounds`` revoking rounds in a burst."""
    if revoking_rounds <= 0 or max_delay_ms <= 0:
        return 0
    # Cap the exponent first: 40^k grows past any delay long before it overflows anything.
    exponent = min(revoking_rounds, 16)
    return min(max_delay_ms, BACKOFF_INITIAL_MS * BACKOFF_MULTIPLIER**exponent)


@dataclass(frozen=True)
class StormDecision:
    """Whether this round may move work, the guard to remember, and when to retry."""

    allow_moves: bool
    guard: StormGuard
    retry_at_ms: int = NO_TIME


def decide(guard: StormGuard, now_ms: int, wants_moves: bool, max_delay_ms: int) -> StormDecision:
    """Apply the guard to a round that does (or does not) want to move work."""
    if max_delay_ms <= 0:
        return StormDecision(wants_moves, StormGuard())  # guard off: nothing to remember
    guard = _settled(guard, now_ms, wants_moves, max_delay_ms)
    if not wants_moves:
        return StormDecision(False, guard)
    if guard.revoking_rounds:
        ready_at_ms = guard.last_revoke_ms + backoff_ms(guard.revoking_rounds, max_delay_ms)
        if now_ms < ready_at_ms:
            return StormDecision(False, guard, ready_at_ms)
    return StormDecision(True, StormGuard(guard.revoking_rounds + 1, now_ms))


def _settled(guard: StormGuard, now_ms: int, wants_moves: bool, max_delay_ms: int) -> StormGuard:
    """The guard with a finished burst forgotten."""
    if not guard.revoking_rounds:
        return guard
    quiet_ms = now_ms - guard.last_revoke_ms
    if quiet_ms >= max_delay_ms:
        return StormGuard()
    if not wants_moves and quiet_ms >= backoff_ms(guard.revoking_rounds, max_delay_ms):
        return StormGuard()
    return guard
