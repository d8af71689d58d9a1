"""The gateway's bound on open client connections: Kafka's ``max.connections``.

Each connection holds a socket, buffers and a coroutine in the gateway's one event loop, so
their number is bounded like any other queue: at most ``max_connections`` are open at once
(``GatewayOptions.max_connections``, default ``MAX_CONNECTIONS``). A connection beyond the bound
is closed at once, before a byte of it is read, as Kafka's broker closes a connection over its
quota (a client sees the broker drop it and retries with backoff); each refusal is counted
(``refused``, in the gateway's ``stats()``) and logged (the first, then every
``LOG_EVERY_REFUSALS``-th, so a client reconnecting in a loop cannot flood the log). A slot is
freed when its connection ends, however it ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger(__name__)

# One event loop in one actor serves every client; past this many, start another listener.
MAX_CONNECTIONS = 1_000
LOG_EVERY_REFUSALS = 100

Serve = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


class Admission:
    """Admits a connection while fewer than ``max_connections`` are open; closes it otherwise.

    Guarantees ``0 <= open <= max_connections`` at every await point, and that every admitted
    connection's slot is released exactly once.
    """

    def __init__(self, max_connections: int = MAX_CONNECTIONS) -> None:
        if max_connections < 1:
            raise ValueError(f"max_connections must be at least 1, got {max_connections}")
        self.max_connections = max_connections
        self.open = 0
        self.refused = 0
        self._tasks: set[asyncio.Task] = set()

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
        """``serve(reader, writer)`` if a slot is free, else close the connection at once."""
        if self.open >= self.max_connections:
            self.refused += 1
            if (self.refused - 1) % LOG_EVERY_REFUSALS == 0:
                peer = writer.get_extra_info("peername")
                log.warning("refusing a connection from %s: %d open, max_connections=%d "
                            "(%d refused so far)", peer[0] if peer else "?", self.open,
                            self.max_connections, self.refused)
            writer.close()
            return
        self.open += 1
        try:
            await serve(reader, writer)
        finally:
            self.open -= 1
            assert self.open >= 0
