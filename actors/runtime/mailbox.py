"""An offsets partition's mailbox: what an entry is, how much it holds, and what it refuses.

The admission rule (``refusal``) is pure and bounded (TigerStyle): a partition that is not
serving, or whose mailbox or owed replies would pass their bounds, turns requests away with a
retriable Kafka error, never a hang.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from actors.runtime.controller import ControllerImage
from protocol.errors import Errors
from protocol.shard import GroupCoordinatorShard

# Bounds (TigerStyle): how much one turn takes from the mailbox, how big the mailbox grows.
MAX_REQUESTS_PER_TURN = 20_000
MAX_QUEUED_REQUESTS = 200_000
# Replies owed at once: requests in the mailbox plus those taken into a turn and not answered
# yet (``_waiting``). A classic JoinGroup or SyncGroup stays owed until its group completes
# the phase or a timer ends it (up to a rebalance timeout), so this bounds the delayed ones;
# a turn's own requests count too while it writes. Beyond it requests are refused with
# COORDINATOR_NOT_AVAILABLE, as a full mailbox refuses them: clients back off and retry, and
# the timers that end the waits run with no request arriving. Above MAX_QUEUED_REQUESTS, so
# that a full mailbox still has room for 50,000 delayed replies.
MAX_WAITING_REPLIES = 250_000


# What a partition that is not serving answers, by state ("recovering", "failed": not available).
STATE_REFUSALS = {
    "loading": Errors.COORDINATOR_LOAD_IN_PROGRESS,
    "fenced": Errors.NOT_COORDINATOR,
}


def refusal(state: str, queued: int, waiting: int, incoming: int) -> Errors | None:
    """Why a partition in ``state``, with ``queued`` requests in its mailbox and ``waiting``
    replies owed, turns away ``incoming`` more (all of them), or None to take them."""
    if state != "active":
        return STATE_REFUSALS.get(state, Errors.COORDINATOR_NOT_AVAILABLE)
    if queued + incoming > MAX_QUEUED_REQUESTS:
        return Errors.COORDINATOR_NOT_AVAILABLE
    if waiting + queued + incoming > MAX_WAITING_REPLIES:
        return Errors.COORDINATOR_NOT_AVAILABLE
    return None


@dataclass
class Event:
    """One mailbox entry: requests to apply (answered together), a new controller image, or
    a read of the shard (answered, like requests, only once the turn's records are durable)."""

    requests: list[object] = field(default_factory=list)
    image: ControllerImage | None = None
    query: Callable[[GroupCoordinatorShard], object] | None = None
    done: asyncio.Future | None = None
    # Requests' replies as they come: a delayed one (JoinGroup, SyncGroup) turns later.
    replies: list[object] = field(default_factory=list)
    remaining: int = 0
