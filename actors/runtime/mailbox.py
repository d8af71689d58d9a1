"""An offsets partition's mailbox: what an entry is, how much it holds, and what it refuses.

The admission rule (``refusal``) is pure and bounded (TigerStyle): a partition that is not
serving, or whose mailbox or owed replies would pass their bounds, turns requests away with a
retriable Kafka error, never a hang. Every entry counts against the bounds by its ``weight``:
a request one, a read of the shard (a query) one. Controller images take no entry: at most
one waits, the newest (``PartitionTurns.update_image``).
"""

from __future__ import annotations

import asyncio
import collections
import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from protocol.errors import Errors
from protocol.shard import GroupCoordinatorShard

# Bounds (TigerStyle): how much one turn takes from the mailbox, how big the mailbox grows
# (in ``Event.weight``: requests and queries).
MAX_REQUESTS_PER_TURN = 20_000
MAX_QUEUED_REQUESTS = 200_000
# Replies owed at once: requests in the mailbox plus those taken into a turn and not answered
# yet (``OwedReplies``). A classic JoinGroup or SyncGroup stays owed until its group completes
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
    """One mailbox entry: requests to apply (answered together), or a read of the shard
    (answered, like requests, only once the turn's records are durable)."""

    requests: list[object] = field(default_factory=list)
    query: Callable[[GroupCoordinatorShard], object] | None = None
    done: asyncio.Future | None = None
    # The requests were built by the Kafka wire codec in this process: well typed, so the
    # shard does not check them again (``GroupCoordinatorShard.handle_batch``'s ``checked``).
    typed: bool = False
    # Submitted while serving a big request (``offload.BIG``): the turn that takes it runs
    # the shard off the event loop.
    big: bool = False
    # Requests' replies as they come: a delayed one (JoinGroup, SyncGroup) turns later.
    replies: list[object] = field(default_factory=list)
    remaining: int = 0

    @property
    def weight(self) -> int:
        """What this entry counts against the mailbox's bounds: its requests, or one."""
        return len(self.requests) or 1


class Mailbox:
    """The entries waiting for a turn, in arrival order, and their weight (``queued``)."""

    def __init__(self) -> None:
        self._entries: collections.deque[Event] = collections.deque()
        self.queued = 0  # by ``Event.weight``

    def __bool__(self) -> bool:
        return bool(self._entries)

    def put(self, event: Event) -> None:
        self._entries.append(event)
        self.queued += event.weight

    def take(self) -> list[Event]:
        """One turn's entries: at least one, at most ``MAX_REQUESTS_PER_TURN`` by weight."""
        taken, count = [], 0
        while self._entries and (not taken or count < MAX_REQUESTS_PER_TURN):
            ev = self._entries.popleft()
            taken.append(ev)
            count += ev.weight
        self.queued -= count
        return taken

    def drain(self) -> list[Event]:
        """Every entry, taken at once (a failed partition answers them all)."""
        drained = list(self._entries)
        self._entries.clear()
        self.queued = 0
        return drained


class OwedReplies:
    """The replies owed to requests taken into a turn, matched to them by identity.

    A request is owed from the turn that takes it until a turn's records behind its reply are
    durable (``settle``) or the partition gives up on it (``refuse_all``); a classic JoinGroup
    or SyncGroup may stay owed over several turns. An event's future resolves once all its
    requests are answered, in their order.
    """

    def __init__(self) -> None:
        # id(request) -> (its event, its index in the event)
        self._owed: dict[int, tuple[Event, int]] = {}

    def __len__(self) -> int:
        return len(self._owed)

    def owe(self, event: Event) -> None:
        event.replies, event.remaining = [None] * len(event.requests), len(event.requests)
        for i, req in enumerate(event.requests):
            self._owed[id(req)] = (event, i)

    def settle(self, completed: list[tuple[object, object]]) -> None:
        """Hand out ``completed`` (request, reply) pairs, now durable; others are skipped."""
        for req, reply in completed:
            entry = self._owed.pop(id(req), None)
            if entry is not None:
                _answer(*entry, reply)

    def refuse_all(self, refuse: Callable[[object], object]) -> None:
        """Answer every owed request with ``refuse(request)``."""
        owed, self._owed = self._owed, {}
        for event, i in owed.values():
            _answer(event, i, refuse(event.requests[i]))


def distinct(requests: list[object]) -> list[object]:
    """``requests`` with each repeated object copied: replies are matched to requests by
    identity (``OwedReplies``), so the same object sent twice must be two requests."""
    seen: set[int] = set()
    out = []
    for req in requests:
        if id(req) in seen:
            req = copy.copy(req)
        seen.add(id(req))
        out.append(req)
    return out


def _answer(event: Event, i: int, reply: object) -> None:
    event.replies[i] = reply
    event.remaining -= 1
    if event.remaining == 0 and event.done is not None and not event.done.done():
        event.done.set_result(event.replies)


def merge_replies(replies: list[object], mine: list[int], answered: asyncio.Future,
                  done: asyncio.Future) -> None:
    """``answered`` gets ``replies``, the ones at ``mine`` filled from ``done``'s (a request
    list some of which were answered before the rest entered the mailbox)."""
    if answered.done():
        return
    for i, reply in zip(mine, done.result(), strict=True):
        replies[i] = reply
    answered.set_result(replies)
