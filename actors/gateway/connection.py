"""One client connection: frames in, requests served, responses out in request order.

Kafka's broker mutes a connection from the moment it reads a request until its response is
sent, so a client's requests on one connection are served strictly in order. Clients
nonetheless pipeline (librdkafka keeps thousands of asynchronous commits in flight on its
coordinator connection), and serving them one at a time makes each wait for its own turn and
fsync. So a connection *pipelines* the requests its listener answers within the turn that
applies them (``pipelined``: commits, offset fetches, heartbeats): each is submitted as soon as
it is read, in order, and their replies are written in request order. Applying them is
equivalent to serving them one at a time, because they reach their partition's mailbox in the
order they were read, and a turn applies its requests in mailbox order. Every other request
(a JoinGroup that waits for its rebalance, a Metadata, SASL) is served as Kafka serves it:
after every earlier reply was written, and with nothing read behind it until its own reply is.
At most ``MAX_IN_FLIGHT`` requests of a connection wait for replies; past that, nothing more
is read from it until one is written.

SASL, when configured, comes first: until the exchange completes only ApiVersions,
SaslHandshake and SaslAuthenticate are served. What ends a connection, and only that
connection (after the replies to what came before it are written): a frame size outside
[0, max_request_bytes], a truncated header, an unknown API key, an unsupported version (except
ApiVersions, answered in v0 with UNSUPPORTED_VERSION as KIP-511 asks), a body that does not
decode, a request before authentication, a failed authentication, or a handler's unexpected
error (logged).

A request read after the client closed the connection is not served. A client closes when a
request times out (librdkafka does, after a heartbeat or commit waited longer than its timeout
behind a request held while a partition restarted), gives up on what it sent and sends anew on
a new connection. Served late, such a request would land after the newer ones: an OffsetCommit
the client gave up on would take the committed offset back below one it has since seen
acknowledged. (What was submitted before the close is in its partition's mailbox ahead of
anything the client sends on a new connection, so it cannot land after those.)
"""

from __future__ import annotations

import asyncio
import collections
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from actors.gateway.dispatch import HANDLERS
from actors.gateway.serving import WireRequest
from actors.upstream.relay import ClientRelay, goes_upstream
from protocol.api import BY_API_KEY
from protocol.security.acls import ANONYMOUS
from protocol.security.sasl import SaslSession
from protocol.wire.codec import (
    Decoded,
    UnsupportedVersion,
    WireError,
    decode_request,
    encode_response,
    read_header,
)
from protocol.wire.framing import FrameError, FrameReader
from protocol.wire.upstream import TXN_OFFSET_COMMIT, txn_offset_commit_refusal
from protocol.wire.versions import (
    API_VERSIONS,
    BEFORE_AUTHENTICATION,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    api_name,
    api_versions_body,
)

log = logging.getLogger(__name__)

READ_CHUNK_BYTES = 64 << 10
# Requests of one connection submitted and not yet answered, at most (librdkafka's default
# max.in.flight is 1,000,000; the bound keeps a client from queueing without end).
MAX_IN_FLIGHT = 1_000


class Pending(NamedTuple):
    """A request submitted already: ``done`` gets its reply, and ``encode(reply)`` is the
    response frame, made when the reply is written (no callback, no second future)."""

    done: asyncio.Future
    encode: Callable[[object], bytes | None]


# A request served: its encoded response frame, or None when Kafka sends none (acks=0); a
# ``Pending`` when the request is submitted already, else a coroutine to run.
Respond = Callable[[WireRequest], Awaitable[bytes | None] | Pending]


class _Close(Exception):
    """End this connection (the reason is logged)."""


class Connection:
    def __init__(self, core, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 respond: Respond | None = None,
                 pipelined: frozenset[int] = frozenset(),
                 relay: ClientRelay | None = None) -> None:
        """``core``: the listener's ``Serving`` (options, users, counts); ``respond``: how a
        request is served (default: the gateway's handlers); ``pipelined``: the API keys
        submitted without waiting for earlier replies (see the module docstring); ``relay``:
        where the data and topic APIs go in front of an upstream (``core.relay_keys``), each
        frame relayed as it came, pipelined, its reply written in request order."""
        self.core = core
        self.reader = reader
        self.writer = writer
        self.respond = respond if respond is not None else self._gateway_respond
        self.pipelined = pipelined
        self.relay = relay
        peer = writer.get_extra_info("peername")
        self.client_host = peer[0] if peer else ""
        self.frames = FrameReader(core.options.max_request_bytes)
        mechanisms = core.options.sasl_mechanisms
        self.sasl = SaslSession(mechanisms, core.user, lambda: secrets.token_urlsafe(18)) \
            if mechanisms else None
        self.principal = ANONYMOUS if self.sasl is None else None
        # Replies owed, in request order: (the request's name, its future reply, what makes
        # the frame of that reply, or None when the future gives the frame); at most
        # MAX_IN_FLIGHT. ``_more``: something was added; ``_idle``: nothing is owed.
        self._owed: collections.deque[tuple[str, asyncio.Future, Callable | None]] = \
            collections.deque()
        self._more, self._idle, self._room = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self._idle.set()
        self._failed: str | None = None

    async def run(self) -> None:
        replier = asyncio.get_running_loop().create_task(self._write_replies())
        try:
            while True:
                data = await self.reader.read(READ_CHUNK_BYTES)
                if not data:
                    return
                for frame in self.frames.feed(data):
                    if self.reader.at_eof():
                        return  # the client has gone: what it left queued is not served
                    await self._take(frame)
        except (_Close, FrameError) as e:
            log.info("closing %s: %s", self.client_host, e)
            await self._written()  # what came before the bad frame is answered first
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client went away, or the listener is stopping
        finally:
            replier.cancel()
            self.writer.close()
            if self.relay is not None:
                self.relay.close()

    async def _take(self, frame: bytes) -> None:
        if self.core.relay_keys and await self._relayed(frame):
            return
        try:
            decoded = decode_request(frame)
        except UnsupportedVersion as e:
            if e.header.api_key != API_VERSIONS:
                raise _Close(str(e)) from None
            await self._reply_now("ApiVersions",
                                  encode_response(e.header, api_versions_body(35), version=0))
            return
        except WireError as e:
            raise _Close(f"{type(e).__name__}: {e}") from None
        key = decoded.header.api_key
        if self.principal is None and key not in BEFORE_AUTHENTICATION:
            raise _Close(f"{api_name(key)} before SASL authentication completed")
        if key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            await self._written()
            await self._sasl(decoded)
            return
        self.core.count(key, decoded.header.api_version)
        req = WireRequest(decoded.header, decoded.body, self.principal or ANONYMOUS,
                          self.client_host, BY_API_KEY[key])
        if key in self.pipelined:
            await self._room_for_one()
            self._submit(req)
            return
        await self._written()  # muted: served alone, as Kafka's broker serves every request
        self._submit(req)
        await self._written()

    async def _relayed(self, frame: bytes) -> bool:
        """Relay ``frame`` upstream if it goes there (``actors.upstream.relay``): its header
        read, its body left as it is; False if Cohort serves it."""
        try:
            header, _ = read_header(frame)
        except WireError as e:
            raise _Close(f"{type(e).__name__}: {e}") from None
        if not goes_upstream(header, frame, self.core.relay_keys):
            return False
        if self.principal is None:
            raise _Close(f"API {header.api_key} before SASL authentication completed")
        self.core.count(header.api_key, header.api_version)
        if header.api_key == TXN_OFFSET_COMMIT:  # refused, by a coordinator or a broker alike
            try:
                reply = txn_offset_commit_refusal(frame)
            except Exception as e:
                raise _Close(f"TxnOffsetCommit that does not decode: {e}") from None
            await self._reply_now("TxnOffsetCommit", reply)
            return True
        await self._room_for_one()
        self._check_failed()
        task = asyncio.get_running_loop().create_task(self.relay.forward(header, frame))
        self._owe(f"api-{header.api_key} (relayed)", task)
        return True

    def _submit(self, req: WireRequest) -> None:
        # ``respond`` gives a ``Pending`` (the request is on its way to its mailbox already)
        # or a coroutine, run as a task: a task starts at once, in creation order, and a local
        # request reaches its mailbox before its first suspension. Either way, submission
        # order is mailbox order.
        self._check_failed()  # a failed connection submits nothing more
        reply = self.respond(req)
        if type(reply) is Pending:
            self._owe(req.api.name, reply.done, reply.encode)
        else:
            self._owe(req.api.name, asyncio.get_running_loop().create_task(reply))

    async def _reply_now(self, name: str, data: bytes) -> None:
        await self._room_for_one()
        done = asyncio.get_running_loop().create_future()
        done.set_result(data)
        self._owe(name, done)
        await self._written()

    async def _room_for_one(self) -> None:
        """Wait until fewer than ``MAX_IN_FLIGHT`` replies are owed: nothing more is read until
        one is written."""
        while len(self._owed) >= MAX_IN_FLIGHT:
            self._room.clear()
            await self._room.wait()
            self._check_failed()

    def _owe(self, name: str, reply: asyncio.Future,
             encode: Callable[[object], bytes | None] | None = None) -> None:
        self._owed.append((name, reply, encode))
        self._idle.clear()
        self._more.set()

    async def _written(self) -> None:
        """Wait until every reply owed so far is written (or the connection failed)."""
        await self._idle.wait()
        self._check_failed()

    def _check_failed(self) -> None:
        if self._failed is not None:
            raise _Close(self._failed)

    async def _write_replies(self) -> None:
        """Write the owed replies in request order, each once it is ready, and every reply
        already ready behind it in the same write. A request that failed unexpectedly fails
        the connection: what is still owed is dropped, and the reader, woken from any wait,
        closes."""
        while True:
            if not self._owed:
                self._idle.set()
                self._more.clear()
                await self._more.wait()
                continue
            frames: list[bytes] = []
            try:
                await asyncio.wait([self._owed[0][1]])
                while self._owed and self._owed[0][1].done() and self._failed is None:
                    name, reply, encode = self._owed.popleft()
                    if reply.cancelled():
                        raise RuntimeError("its handler was cancelled")
                    data = reply.result() if encode is None else encode(reply.result())
                    if data is not None:
                        frames.append(data)
                if frames:
                    self.writer.write(b"".join(frames))
                    if not self._owed:
                        await self.writer.drain()
            except asyncio.CancelledError:
                raise
            except ConnectionError as e:  # the client's, or the upstream's going away
                self._fail(f"{type(e).__name__}: {e}")
            except Exception as e:
                log.exception("%s from %s failed", name, self.client_host)
                self._fail(f"{name} failed: {e}")
            self._room.set()

    def _fail(self, why: str) -> None:
        """Drop what is owed and close: the reader, woken, ends the connection."""
        self._failed = why
        for _, reply, _ in self._owed:
            if not reply.done():
                reply.cancel()
        self._owed.clear()
        self.writer.close()

    async def _gateway_respond(self, req: WireRequest) -> bytes | None:
        body = await HANDLERS[req.header.api_key](self.core, req)
        return None if body is None else encode_response(req.header, body)

    async def _sasl(self, decoded: Decoded) -> None:
        if self.sasl is None:  # no SASL on this listener: Kafka closes too
            raise _Close("SASL is not enabled on this listener")
        if decoded.header.api_key == SASL_HANDSHAKE:
            reply = self.sasl.handshake(decoded.body)
        else:
            reply = self.sasl.authenticate(decoded.body)
        await self._reply_now(api_name(decoded.header.api_key),
                              encode_response(decoded.header, reply.body))
        if reply.close_after:
            raise _Close(f"SASL failed: {reply.body.get('error_message') or reply.body}")
        if self.sasl.authenticated:
            self.principal = self.sasl.principal
