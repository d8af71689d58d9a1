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
At most ``MAX_IN_FLIGHT`` requests of a connection wait for replies (the reply queue,
``connection_replies``); past that, nothing more is read from it until one is written.

SASL, when configured, comes first: until the exchange completes only ApiVersions,
SaslHandshake and SaslAuthenticate are served. What ends a connection, and only that
connection (after the replies to what came before it are written): a frame size outside
[0, max_request_bytes], a truncated header, an unknown API key, an unsupported version (except
ApiVersions, answered in v0 with UNSUPPORTED_VERSION as KIP-511 asks), a body that does not
decode, a request before authentication, a failed authentication, or a handler's unexpected
error (logged).

Deadlines, as Kafka's broker keeps them: a connection with nothing owed to it and nothing read
from it for ``connections_max_idle_ms`` is closed (Kafka's ``connections.max.idle.ms``), and
so is one that has not completed SASL within ``authentication_timeout_ms`` of opening (however
busy it keeps itself with ApiVersions); until then a frame may be at most
``sasl_server_max_receive_bytes`` (Kafka's ``sasl.server.max.receive.size``, 512 KiB), refused
from its size prefix, before its body is read. A request's header is read and checked (its API,
version, and authentication) before its body is decoded: nothing is spent on the body of a
request the connection will refuse. A failed authentication is answered, and the connection
closed, after ``connection_failed_authentication_delay_ms`` (Kafka's
``connection.failed.authentication.delay.ms``), and a PLAIN password is hashed off the event
loop (``password_checks``). When the listener is full, an idle connection may be closed for a
newcomer (``admission``).

Backpressure: replies go to the socket through the transport's buffer; above
``WRITE_HIGH_WATER_BYTES`` the writer waits for the client to read (``drain``) and nothing more
is read from the client until it has, so a client that pipelines requests and never reads its
replies holds at most that buffer, ``MAX_IN_FLIGHT`` replies and one read's worth of requests.

A big request (``actors.runtime.offload``: over 16 KiB, or holding 512 array entries) has its
pure steps run off the event loop, one big request of the process at a time, and is served
alone, never pipelined: it waits on a thread before it reaches its mailbox, and a request read
after it must not overtake it. A frame over 16 KiB has its body read only once the process's
budget for big frames has room (``offload.BIG_PENDING_BYTES``, as Kafka's memory pool mutes a
connection until ``queued.max.request.bytes`` has room): however many clients send big frames
faster than they are served, the frames waiting hold at most that much; and one whose client
left while it waited for its turn is dropped, not served.

A connection owns the futures it made (the tasks running its requests, its own replies): when
it fails, it cancels those and only stops waiting for the others (a ``Pending`` future may be
shared by requests of several connections, as a partition's batched commits are).

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
import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import NamedTuple

from actors.gateway.admission import CURRENT_SLOT
from actors.gateway.connection_relay import CloseConnection as _Close
from actors.gateway.connection_relay import Relaying
from actors.gateway.connection_replies import ReplyQueue
from actors.gateway.deadlines import ConnectionDeadlines
from actors.gateway.dispatch import HANDLERS
from actors.gateway.password_checks import PASSWORD_CHECKS
from actors.gateway.serving import WireRequest
from actors.runtime.offload import (
    BIG,
    BIG_REQUEST_BYTES,
    BIG_REQUEST_ENTRIES,
    big_bytes,
    big_request,
    off_loop,
    pure,
)
from actors.upstream.relay import ClientRelay
from protocol.api import BY_API_KEY
from protocol.security.acls import ANONYMOUS
from protocol.security.plain import PasswordCheck
from protocol.security.sasl import SaslSession
from protocol.wire.codec import (
    RequestHead,
    UnsupportedVersion,
    WireError,
    decode_body,
    encode_response,
    holds_entries,
    read_request_head,
)
from protocol.wire.framing import FrameError, FrameReader
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
# A secret of this process: an unknown SCRAM user's salt is derived from it (stable for as
# long as the process lives, as a real user's salt is).
_MOCK_SALT_KEY = secrets.token_bytes(32)


class Pending(NamedTuple):
    """A request submitted already: ``done`` gets its reply, and ``encode(reply)`` is the
    response frame, made when the reply is written (no callback, no second future)."""

    done: asyncio.Future
    encode: Callable[[object], bytes | None]


# A request served: its encoded response frame, or None when Kafka sends none (acks=0); a
# ``Pending`` when the request is submitted already, else a coroutine to run.
Respond = Callable[[WireRequest], Awaitable[bytes | None] | Pending]


class Connection(Relaying, ConnectionDeadlines, ReplyQueue):
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
        self.respond = respond  # None: ``_gateway_respond`` (kept bound here: a cycle)
        self.pipelined = pipelined
        self.relay = relay
        # What goes to ``actors.upstream`` before decoding (none unless in front of one).
        self.relay_keys: frozenset[int] = getattr(core, "relay_keys", frozenset())
        peer = writer.get_extra_info("peername")
        self.client_host = peer[0] if peer else ""
        options = core.options
        mechanisms = options.sasl_mechanisms
        self.sasl = SaslSession(mechanisms, core.user, lambda: secrets.token_urlsafe(18),
                                _MOCK_SALT_KEY) if mechanisms else None
        self.principal = ANONYMOUS if self.sasl is None else None
        self.frames = FrameReader(options.max_request_bytes if self.principal is not None
                                  else options.sasl_server_max_receive_bytes)
        self._init_replies(writer)
        # Bytes of ``offload.big_bytes`` held for the big frame being read or served.
        self._reserved = 0
        # The client's end of the stream (it closed, or left): told by the reader's protocol
        # even while nothing is being read (``_client_left``).
        fed_eof = reader.feed_eof

        def feed_eof() -> None:
            fed_eof()
            self._client_left()

        reader.feed_eof = feed_eof  # type: ignore[method-assign]
        self._loop = asyncio.get_running_loop()
        self._last_active = self._loop.time()
        self._idle_s = options.connections_max_idle_ms / 1000
        self._authenticate_by = self._last_active + options.authentication_timeout_ms / 1000
        self._deadline = self._loop.call_at(self._next_deadline(), self._at_deadline)
        slot = CURRENT_SLOT.get()
        if slot is not None:
            slot.connection = self

    async def run(self) -> None:
        try:
            while True:
                if not self._flowing.is_set():  # replies unsent: read nothing more until sent
                    await self._flowing.wait()
                size = self.frames.next_size
                if size is not None and size > BIG_REQUEST_BYTES and not self._reserved:
                    # A big frame's body is read once the process has room for it: until
                    # then this connection reads nothing (``offload.BIG_PENDING_BYTES``).
                    self._reserved = await big_bytes().reserve(size)
                data = await self.reader.read(READ_CHUNK_BYTES)
                if not data:
                    return
                self._last_active = self._loop.time()
                for frame in self.frames.feed(data):
                    if self.reader.at_eof():
                        return  # the client has gone: what it left queued is not served
                    try:
                        await self._take(frame)
                    finally:
                        if len(frame) > BIG_REQUEST_BYTES:
                            self._release_big()
        except (_Close, FrameError) as e:
            log.info("closing %s: %s", self.client_host, e)
            with contextlib.suppress(_Close):  # failed already: nothing more to answer
                await self._written()  # what came before the bad frame is answered first
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client went away, or the listener is stopping
        finally:
            self._release_big()
            self._deadline.cancel()
            if self._draining is not None:
                self._draining.cancel()
            self.writer.close()
            del self.reader.feed_eof  # it holds this connection: a cycle (issue 30's GC passes)
            if self.relay is not None:
                self.relay.close()

    async def _take(self, frame: bytes) -> None:
        """Serve one frame in two steps: its header read and checked (API, version,
        authentication), then its body decoded and the request served; in front of an
        upstream, a frame that goes there is relayed between the two, undecoded."""
        if self.relay_keys and await self._relayed(frame):
            return
        head = await self._read_head(frame)
        if head is None:
            return
        size = len(head.frame)
        if size > BIG_REQUEST_BYTES:  # decoded off the loop too (``offload``)
            async with big_request():
                if self.reader.at_eof():
                    return  # the client left while it waited its turn: nobody to answer
                BIG.set(True)
                await self._serve(head, await off_loop(self._decoded, head), alone=True)
            return
        body = self._decoded(head)
        big = size >= BIG_REQUEST_ENTRIES and holds_entries(body, BIG_REQUEST_ENTRIES)
        BIG.set(big)
        if not big:
            await self._serve(head, body)
            return
        async with big_request():
            await self._serve(head, body, alone=True)

    def _release_big(self) -> None:
        if self._reserved:
            big_bytes().release(self._reserved)
            self._reserved = 0

    def _decoded(self, head: RequestHead) -> dict:
        try:
            return decode_body(head)
        except WireError as e:
            raise _Close(f"{type(e).__name__}: {e}") from None

    async def _serve(self, head: RequestHead, body: dict, alone: bool = False) -> None:
        key = head.header.api_key
        if key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            await self._written()
            await self._sasl(head, body)
            return
        self.core.count(key, head.header.api_version)
        req = WireRequest(head.header, body, self.principal or ANONYMOUS, self.client_host,
                          BY_API_KEY[key], self.relay.node_id if self.relay else None)
        if key in self.pipelined and not alone:
            await self._room_for_one()
            self._submit(req)
            return
        await self._written()  # muted: served alone, as Kafka's broker serves every request
        self._submit(req)
        await self._written()

    async def _read_head(self, frame: bytes) -> RequestHead | None:
        """The frame's header, if its body is to be decoded: its API and version served, and
        allowed before authentication if it has not completed (else ``_Close``). None when
        answered already (an ApiVersions newer than served gets the v0 fallback)."""
        try:
            head = read_request_head(frame)
        except UnsupportedVersion as e:
            if e.header.api_key != API_VERSIONS:
                raise _Close(str(e)) from None
            await self._reply_now("ApiVersions",
                                  encode_response(e.header, api_versions_body(35), version=0))
            return None
        except WireError as e:
            raise _Close(f"{type(e).__name__}: {e}") from None
        key = head.header.api_key
        if self.principal is None and key not in BEFORE_AUTHENTICATION:
            raise _Close(f"{api_name(key)} before SASL authentication completed")
        return head

    def _submit(self, req: WireRequest) -> None:
        # ``respond`` gives a ``Pending`` (the request is on its way to its mailbox already)
        # or a coroutine, run as a task: a task starts at once, in creation order, and a local
        # request reaches its mailbox before its first suspension. Either way, submission
        # order is mailbox order.
        self._check_failed()  # a failed connection submits nothing more
        reply = self.respond(req) if self.respond is not None else self._gateway_respond(req)
        if type(reply) is Pending:  # its future may be shared: not this connection's own
            self._owe(req.api.name, reply.done, reply.encode, owned=False)
        else:
            self._owe(req.api.name, self._loop.create_task(reply))

    # ---------------------------------------------------------------------- serving

    async def _gateway_respond(self, req: WireRequest) -> bytes | None:
        body = await HANDLERS[req.header.api_key](self.core, req)
        return None if body is None else await pure(encode_response, req.header, body)

    async def _sasl(self, head: RequestHead, body: dict) -> None:
        if self.sasl is None:  # no SASL on this listener: Kafka closes too
            raise _Close("SASL is not enabled on this listener")
        header = head.header
        if header.api_key == SASL_HANDSHAKE:
            reply = self.sasl.handshake(body)
        else:
            reply = self.sasl.authenticate(body)
            if isinstance(reply, PasswordCheck):  # PBKDF2: off the loop, in the host's turn
                reply = self.sasl.resume(reply, await PASSWORD_CHECKS.run(reply,
                                                                          self.client_host))
        if reply.close_after:  # Kafka's connection.failed.authentication.delay.ms
            await asyncio.sleep(self.core.options.connection_failed_authentication_delay_ms
                                / 1000)
        await self._reply_now(api_name(header.api_key), encode_response(header, reply.body))
        if reply.close_after:
            raise _Close(f"SASL failed: {reply.body.get('error_message') or reply.body}")
        if self.sasl.authenticated:
            self.principal = self.sasl.principal
            self.frames.max_bytes = self.core.options.max_request_bytes

