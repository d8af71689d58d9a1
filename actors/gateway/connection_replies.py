"""A connection's replies, owed in request order (``actors.gateway.connection``'s module
docstring says when each is owed): written as each becomes ready, by callbacks rather than a
writing task (a relayed reply in the very callback of the upstream link that read it), with
backpressure toward a client that does not read, and the connection failed when a request
fails unexpectedly. Mixed into ``Connection``, whose ``writer``, ``client_host``, ``_loop`` and
``_last_active`` it uses; its own module so the connection's reading and serving fit in one
reader's mind.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable

from actors.gateway.connection_relay import CloseConnection as _Close

log = logging.getLogger("actors.gateway.connection")

# Requests of one connection submitted and not yet answered, at most (librdkafka's default
# max.in.flight is 1,000,000; the bound keeps a client from queueing without end).
MAX_IN_FLIGHT = 1_000
# Reply bytes a connection leaves in its transport's buffer before it waits for the client
# to read them (and reads nothing more meanwhile); one write adds at most this much.
WRITE_HIGH_WATER_BYTES = 256 << 10


class ReplyQueue:
    """The replies a connection owes, and how they are written (see the module docstring)."""

    def _init_replies(self, writer: asyncio.StreamWriter) -> None:
        # Replies owed, in request order: (the request's name, its future reply, what makes
        # the frame of that reply or None when the future gives the frame, whether this
        # connection owns the future, whether whoever resolves the future calls ``_flush``
        # itself: a relayed reply's link); at most MAX_IN_FLIGHT. ``_idle``: nothing is owed;
        # ``_room``: a reply was written; ``_flowing``: the transport's buffer is below its
        # high-water mark. ``_watched``: the head's future, once ``_flush`` asked it to call
        # back when done; ``_draining``: the task waiting for the client to read.
        self._owed: collections.deque[
            tuple[str, asyncio.Future, Callable | None, bool, bool]] = collections.deque()
        self._idle, self._room = asyncio.Event(), asyncio.Event()
        self._flowing = asyncio.Event()
        self._watched: asyncio.Future | None = None
        self._draining: asyncio.Task | None = None
        self._idle.set()
        self._flowing.set()
        self._failed: str | None = None
        writer.transport.set_write_buffer_limits(high=WRITE_HIGH_WATER_BYTES)

    async def _reply_now(self, name: str, data: bytes) -> None:
        self._check_failed()
        await self._room_for_one()
        done = self._loop.create_future()
        done.set_result(data)
        self._owe(name, done)
        await self._written()

    def _has_room(self) -> bool:
        return len(self._owed) < MAX_IN_FLIGHT and self._flowing.is_set()

    async def _room_for_one(self) -> None:
        """Wait until fewer than ``MAX_IN_FLIGHT`` replies are owed and the transport's
        buffer is below its high-water mark: nothing more is read until then."""
        while not self._has_room():
            self._room.clear()
            await (self._room.wait() if self._flowing.is_set() else self._flowing.wait())
            self._check_failed()

    def _owe(self, name: str, reply: asyncio.Future,
             encode: Callable[[object], bytes | None] | None = None, owned: bool = True,
             tells: bool = False) -> None:
        """Owe ``reply``'s frame, after those owed already; ``tells``: whoever resolves the
        future calls ``_flush`` right after (else ``_flush`` asks the future to call back)."""
        self._owed.append((name, reply, encode, owned, tells))
        self._idle.clear()
        if len(self._owed) == 1:  # else the head is watched, or waits for the client to read
            self._flush()

    async def _written(self) -> None:
        """Wait until every reply owed so far is written (or the connection failed)."""
        await self._idle.wait()
        self._check_failed()

    def _check_failed(self) -> None:
        if self._failed is not None:
            raise _Close(self._failed)

    def _flush(self) -> None:
        """Write the owed replies ready at the head of ``_owed``, in request order, every one
        ready behind the first in the same write (up to ``WRITE_HIGH_WATER_BYTES`` a write);
        then have the first not ready call back when it is done (``_head_done``). Callbacks,
        not a writing task: a relayed reply is written in the pass of the event loop after
        the upstream's bytes came, with no task woken between them (a task cost a produce's
        round trip through Cohort a pass and ~15 µs of Python), and a relayed reply, whose
        link calls this at once, in the very callback that read it. Above the transport's
        high-water mark, nothing more is written or read until the client has read
        (``_drain``). A request that failed unexpectedly fails the connection: what is still
        owed is dropped, and the reader, woken from any wait, closes."""
        while self._failed is None and self._flowing.is_set():
            if not self._owed:
                self._idle.set()
                return
            name, reply, _, _, tells = self._owed[0]
            if not reply.done():
                if not tells and self._watched is not reply:
                    self._watched = reply
                    reply.add_done_callback(self._head_done)
                return
            try:
                frames = self._ready_frames()
                if frames:
                    self.writer.write(b"".join(frames) if len(frames) > 1 else frames[0])
                    self._last_active = self._loop.time()
            except ConnectionError as e:  # the client's, or the upstream's going away
                self._fail(f"{type(e).__name__}: {e}")
            except Exception as e:
                log.exception("%s from %s failed", name, self.client_host)
                self._fail(f"{name} failed: {e}")
            self._room.set()
            if self.writer.transport.get_write_buffer_size() > WRITE_HIGH_WATER_BYTES:
                self._flowing.clear()
                self._draining = self._loop.create_task(self._drain())

    def _head_done(self, reply: asyncio.Future) -> None:
        """The watched head's reply is done (an event-loop callback)."""
        if reply is self._watched:
            self._watched = None
            self._flush()

    async def _drain(self) -> None:
        """Wait for the client to read what the transport holds, then write on."""
        try:
            await self.writer.drain()
        except ConnectionError as e:
            self._fail(f"{type(e).__name__}: {e}")
            return
        self._flowing.set()
        self._room.set()
        self._flush()

    def _ready_frames(self) -> list[bytes]:
        """The frames of the replies ready at the head of ``_owed`` (taken off it), up to
        ``WRITE_HIGH_WATER_BYTES`` in all."""
        frames: list[bytes] = []
        size = 0
        while (self._owed and self._owed[0][1].done() and self._failed is None
               and size < WRITE_HIGH_WATER_BYTES):
            name, reply, encode, _, _ = self._owed.popleft()
            if reply.cancelled():
                raise RuntimeError(f"{name}: its handler was cancelled")
            data = reply.result() if encode is None else encode(reply.result())
            if data is not None:
                frames.append(data)
                size += len(data)
        return frames

    def _client_left(self) -> None:
        """The client closed its end: what it is owed is dropped and the connection closes,
        as Kafka's broker closes a channel whose read ends. Waiting for a reply nobody will
        read would hold the connection, its slot, and the request's work: a partition's
        forwarded request kept its Ray call to the gateway, arguments and all, pending until
        the gateway answered, while the wire fuzzer's clients gave up after a second and
        sent more (a partition's memory grew 0.5 MiB/s with them; issue 30)."""
        if self._failed is None:
            self._fail("the client closed its end")

    def _fail(self, why: str) -> None:
        """Drop what is owed and close: the reader, woken, ends the connection. Only the
        futures this connection owns are cancelled; a shared one is only no longer awaited."""
        if self._failed is None:
            self._failed = why
        for _, reply, _, owned, _ in self._owed:
            if not owned:
                continue
            if not reply.done():
                reply.cancel()
            elif not reply.cancelled():
                reply.exception()  # a relay that failed with the client: seen, not logged
        self._owed.clear()
        self._idle.set()
        self._flowing.set()
        self._room.set()
        self.writer.close()

    @property
    def reading_paused(self) -> bool:
        """Whether the connection reads nothing now because its replies wait for the client
        to read them (the transport's buffer is above ``WRITE_HIGH_WATER_BYTES``)."""
        return not self._flowing.is_set()
