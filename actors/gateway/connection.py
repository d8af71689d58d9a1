"""One client connection: frames in, one request at a time, responses out in request order.

Kafka's broker mutes a connection from the moment it reads a request until its response is
sent, so a client's requests on one connection are served strictly in order; this does the
same (a long-poll JoinGroup holds its connection, as on Kafka; clients talk to a coordinator
on a connection of its own). SASL, when configured, comes first: until the exchange completes
only ApiVersions, SaslHandshake and SaslAuthenticate are served. What ends a connection, and
only that connection: a frame size outside [0, max_request_bytes], a truncated header, an
unknown API key, an unsupported version (except ApiVersions, answered in v0 with
UNSUPPORTED_VERSION as KIP-511 asks), a body that does not decode, a request before
authentication, a failed authentication, or a handler's unexpected error (logged).

A request the client sent behind one still being served is not served once the client has
closed the connection. A client closes when a request times out (librdkafka does, after a
heartbeat or commit waited longer than its timeout behind a request the gateway held while a
partition restarted), gives up on what it sent and sends anew on a new connection. Served
late, such a request would land after the newer ones: an OffsetCommit the client gave up on
would take the committed offset back below one it has since seen acknowledged.
"""

from __future__ import annotations

import asyncio
import logging
import secrets

from actors.gateway.core import GatewayCore, WireRequest
from actors.gateway.dispatch import HANDLERS
from protocol.api import BY_API_KEY
from protocol.security.acls import ANONYMOUS
from protocol.security.sasl import SaslSession
from protocol.wire.codec import UnsupportedVersion, WireError, decode_request, encode_response
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


class _Close(Exception):
    """End this connection (the reason is logged)."""


class Connection:
    def __init__(self, core: GatewayCore, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.core = core
        self.reader = reader
        self.writer = writer
        peer = writer.get_extra_info("peername")
        self.client_host = peer[0] if peer else ""
        self.frames = FrameReader(core.options.max_request_bytes)
        mechanisms = core.options.sasl_mechanisms
        self.sasl = SaslSession(mechanisms, core.user, lambda: secrets.token_urlsafe(18)) \
            if mechanisms else None
        self.principal = ANONYMOUS if self.sasl is None else None

    async def run(self) -> None:
        try:
            while True:
                data = await self.reader.read(READ_CHUNK_BYTES)
                if not data:
                    return
                for frame in self.frames.feed(data):
                    if self.reader.at_eof():
                        return  # the client has gone: what it left queued is not served
                    await self._serve(frame)
        except (_Close, FrameError) as e:
            log.info("closing %s: %s", self.client_host, e)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client went away, or the gateway is stopping
        finally:
            self.writer.close()

    async def _serve(self, frame: bytes) -> None:
        try:
            decoded = decode_request(frame)
        except UnsupportedVersion as e:
            if e.header.api_key != API_VERSIONS:
                raise _Close(str(e)) from None
            await self._send(encode_response(e.header, api_versions_body(35), version=0))
            return
        except WireError as e:
            raise _Close(f"{type(e).__name__}: {e}") from None
        key = decoded.header.api_key
        if self.principal is None and key not in BEFORE_AUTHENTICATION:
            raise _Close(f"{api_name(key)} before SASL authentication completed")
        if key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
            await self._sasl(decoded)
            return
        self.core.count(key, decoded.header.api_version)
        req = WireRequest(decoded.header, decoded.body, self.principal or ANONYMOUS,
                          self.client_host, BY_API_KEY[key])
        try:
            body = await HANDLERS[key](self.core, req)
            if body is not None:
                await self._send(encode_response(decoded.header, body))
        except (ConnectionError, _Close):
            raise
        except Exception as e:
            log.exception("%s from %s failed", api_name(key), self.client_host)
            raise _Close(f"{api_name(key)} failed: {e}") from None

    async def _sasl(self, decoded) -> None:
        if self.sasl is None:  # no SASL on this listener: Kafka closes too
            raise _Close("SASL is not enabled on this listener")
        if decoded.header.api_key == SASL_HANDSHAKE:
            reply = self.sasl.handshake(decoded.body)
        else:
            reply = self.sasl.authenticate(decoded.body)
        await self._send(encode_response(decoded.header, reply.body))
        if reply.close_after:
            raise _Close(f"SASL failed: {reply.body.get('error_message') or reply.body}")
        if self.sasl.authenticated:
            self.principal = self.sasl.principal

    async def _send(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()
