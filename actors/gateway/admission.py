"""The gateway's bound on open client connections: Kafka's ``max.connections``, with idle
connections reclaimed for newcomers.

Each connection holds a socket, buffers and a coroutine in the gateway's one event loop, so
their number is bounded like any other queue: at most ``max_connections`` are open at once
(``GatewayOptions.max_connections``, default ``MAX_CONNECTIONS``). When a connection arrives at
the bound, the connection that has been idle longest (nothing owed to it, nothing read from
it: ``Slot.idle_since``), if idle for at least ``reclaim_idle_ms``, is closed to make room, as
Kafka's ``connections.max.idle.ms`` would close it later anyway (a client whose idle connection
is closed reconnects when it needs it). With none idle that long, the newcomer is closed at
once, before a byte of it is read, as Kafka's broker closes a connection over its quota (a
client sees the broker drop it and retries with backoff). So a thousand sockets opened and left
silent hold a listener for ``reclaim_idle_ms``, not for good; connections that are busy are
never closed for a newcomer. Each refusal and reclamation is counted (``refused``,
``reclaimed``, in the gateway's ``stats()``) and logged (the first, then every
``LOG_EVERY_REFUSALS``-th, so a client reconnecting in a loop cannot flood the log). A slot is
freed when its connection ends, however it ends, or when it is reclaimed.

A listener constructs its connections itself (``actors.gateway.broker``, ``actor``); a
``Connection`` finds the slot it holds in ``CURRENT_SLOT``, set in its own task by ``serve``.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

log = logging.getLogger(__name__)

# One event loop in one actor serves every client; past this many, start another listener.
# A coordinator of one group holds a connection per member (Kafka's default is unbounded):
# 1,000 KIP-848 consumers of one group at 1,000 here had their coordinator refusing and
# reclaiming members' connections while they joined (bench/upstream.py --stable).
MAX_CONNECTIONS = 10_000
LOG_EVERY_REFUSALS = 100
# A connection idle this long may be closed for a newcomer when the listener is full: longer
# than any heartbeat interval a client keeps its coordinator connection busy with (5 s).
RECLAIM_IDLE_MS = 10_000

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Reclaimable(Protocol):
    """What admission asks of a connection: since when it is idle, and to close it."""

    def idle_since(self) -> float | None:
        """The loop time since which nothing was owed to it or read from it; None if busy."""

    def reclaim(self, why: str) -> None:
        """Close at once (its slot is already freed)."""


class Slot:
    """One admitted connection's place; ``connection`` is set once the connection exists."""

    __slots__ = ("connection", "released")

    def __init__(self) -> None:
        self.connection: Reclaimable | None = None
        self.released = False


CURRENT_SLOT: contextvars.ContextVar[Slot | None] = contextvars.ContextVar(
    "admission_slot", default=None)


class Admission:
    """Admits a connection while fewer than ``max_connections`` are open, reclaiming the
    longest-idle one when full; closes the newcomer when none is idle enough.

    Guarantees ``0 <= open <= max_connections`` at every await point, and that every admitted
    connection's slot is released exactly once.
    """

    def __init__(self, max_connections: int = MAX_CONNECTIONS,
                 reclaim_idle_ms: int = RECLAIM_IDLE_MS) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections}")
        self.max_connections = max_connections
        self.reclaim_idle_ms = reclaim_idle_ms
        self.open = 0
        self.refused = 0
        self.reclaimed = 0
        self._tasks: set[asyncio.Task] = set()
        self._slots: set[Slot] = set()

    def accepting(self, serve: Serve) -> Serve:
        """A listener's callback for ``asyncio.start_server``: each connection admitted (or
        closed at once) and served by ``serve``, and tracked until it ends (``drop_all``)."""

        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            self._tasks.add(task)
            try:
                await self.serve(reader, writer, serve)
            finally:
                self._tasks.discard(task)

        return accept

    def drop_all(self) -> None:
        """End every connection being served (the listener is stopping)."""
        for task in list(self._tasks):
            task.cancel()

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                    serve: Serve) -> None:
        """``serve(reader, writer)`` if a slot is free (or freed by reclaiming an idle
        connection), else close the connection at once."""
        if self.open >= self.max_connections and not self._reclaim_one():
            self.refused += 1
            if (self.refused - 1) % LOG_EVERY_REFUSALS == 0:
                peer = writer.get_extra_info("peername")
                log.warning("refusing a connection from %s: %d open, none idle for %d ms, "
                            "max_connections=%d (%d refused so far)", peer[0] if peer else "?",
                            self.open, self.reclaim_idle_ms, self.max_connections,
                            self.refused)
            writer.close()
            return
        slot = Slot()
        self.open += 1
        self._slots.add(slot)
        CURRENT_SLOT.set(slot)  # this task's context only: the connection served here
        try:
            await serve(reader, writer)
        finally:
            self._release(slot)

    def _release(self, slot: Slot) -> None:
        if not slot.released:
            slot.released = True
            # The connection's timers keep the context that holds this slot: the slot must not
            # keep the connection, or the three are a cycle only the collector frees.
            slot.connection = None
            self._slots.discard(slot)
            self.open -= 1
            assert self.open >= 0

    def _reclaim_one(self) -> bool:
        """Close the connection idle longest, if idle for ``reclaim_idle_ms``; whether one
        was (its slot is free now)."""
        oldest, since = None, None
        for slot in self._slots:
            idle = slot.connection.idle_since() if slot.connection is not None else None
            if idle is not None and (since is None or idle < since):
                oldest, since = slot, idle
        now = asyncio.get_running_loop().time()
        if oldest is None or (now - since) * 1000 < self.reclaim_idle_ms:
            return False
        connection = oldest.connection
        self._release(oldest)
        self.reclaimed += 1
        if (self.reclaimed - 1) % LOG_EVERY_REFUSALS == 0:
            log.warning("listener full (max_connections=%d): closing a connection idle for "
                        "%.1f s for a newcomer (%d so far)", self.max_connections, now - since,
                        self.reclaimed)
        connection.reclaim(f"idle for {now - since:.1f} s and the listener is full")
        return True
