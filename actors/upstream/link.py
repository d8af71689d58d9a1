"""One connection from Cohort to one upstream broker, authenticated as Cohort itself.

Kafka answers a connection's requests in the order it sent them, so a link matches replies to
requests first in, first out (and checks the correlation ids agree): a relayed frame keeps the
client's own correlation id, and the reply goes back to the client as it came. Cohort's own
requests (Metadata polls, topic admin) use the same link with ids of its own.

The link speaks to the upstream as Cohort's principal (``sasl.username``), never as the client:
the client authenticated to Cohort, and Cohort's ACLs decided what it may do.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import hashlib
import hmac
import itertools
import logging
import secrets
import struct
from collections.abc import Mapping
from typing import Any

from actors.upstream.settings import UpstreamSettings
from protocol.wire.upstream import (
    API_VERSIONS,
    correlation_of_reply,
    decode_reply,
    encode_request,
)

log = logging.getLogger(__name__)

SASL_HANDSHAKE, SASL_AUTHENTICATE = 17, 36
CONNECT_TIMEOUT_S = 10.0
# Cohort's own requests (Metadata polls, topic admin) give up after this long: an upstream that
# stops answering must not hold the controller's change lock or a Metadata reply for ever. The
# link is closed then (its replies could no longer be matched to what is sent next).
REQUEST_TIMEOUT_S = 10.0
# A reply larger than this is not one a broker sends (Kafka's fetch.max.bytes is 55 MiB).
MAX_REPLY_BYTES = 256 << 20
_INT32 = struct.Struct(">i")
# How much of a reply the link buffers before it stops reading the socket: a Fetch reply runs
# to megabytes, and asyncio's default (64 KiB, paused at twice that) would pause and resume
# the socket a dozen times a reply.
READ_BUFFER_BYTES = 8 << 20


class UpstreamUnavailable(ConnectionError):
    """The upstream broker cannot be reached, or refused Cohort's credentials."""


class UpstreamLink:
    """A connection to one upstream broker: ``relay`` frames, ``call`` Cohort's own requests."""

    def __init__(self, host: str, port: int, settings: UpstreamSettings,
                 client_id: str = "cohort") -> None:
        self.host, self.port = host, port
        self.settings = settings
        self.client_id = settings.get("client.id") or client_id
        self.versions: dict[int, tuple[int, int]] = {}
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pending: collections.deque[tuple[int, asyncio.Future]] = collections.deque()
        self._ids = itertools.count(1 << 30)
        self._reading: asyncio.Task | None = None
        self.closed: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def open(self, timeout_s: float = CONNECT_TIMEOUT_S) -> UpstreamLink:
        """Connect, learn the broker's API versions, authenticate; ``UpstreamUnavailable``
        naming the address when any step fails."""
        try:
            tls = self.settings.tls_context(self.host)
            self._reader, self._writer = await asyncio.wait_for(asyncio.open_connection(
                self.host, self.port, ssl=tls, server_hostname=self.host if tls else None,
                limit=READ_BUFFER_BYTES), timeout_s)
            self._reading = asyncio.get_running_loop().create_task(self._read_replies())
            reply = await asyncio.wait_for(self.call(API_VERSIONS, 3, {
                "client_software_name": "cohort", "client_software_version": "0.1.0"}),
                timeout_s)
            if reply["error_code"] != 0:
                raise UpstreamUnavailable(f"ApiVersions answered error {reply['error_code']}")
            self.versions = {k["api_key"]: (k["min_version"], k["max_version"])
                             for k in reply["api_keys"]}
            if self.settings.sasl_mechanism is not None:
                await asyncio.wait_for(self._authenticate(), timeout_s)
        except (OSError, TimeoutError, asyncio.TimeoutError, UpstreamUnavailable) as e:
            self.close(str(e))
            raise UpstreamUnavailable(
                f"cannot reach the upstream broker {self.address} ({type(e).__name__}: {e}); "
                "check --upstream and --upstream-config") from None
        return self

    # ------------------------------------------------------------------ requests

    def relay(self, frame: bytes, expects_reply: bool = True) -> asyncio.Future | None:
        """Send a client's framed request as it is; the future gets the framed reply (None
        when the request gets no reply: Produce with acks=0)."""
        if self.closed is not None:
            raise UpstreamUnavailable(f"the link to {self.address} is closed: {self.closed}")
        future = None
        if expects_reply:
            future = asyncio.get_running_loop().create_future()
            self._pending.append((_INT32.unpack_from(frame, 8)[0], future))
        self._writer.write(frame)
        return future

    async def call(self, api_key: int, version: int, body: Mapping[str, Any]) -> dict:
        """One of Cohort's own requests; its reply as plain values."""
        reply = await self.call_framed(api_key, version, body)
        return decode_reply(api_key, version, reply[4:])

    async def call_framed(self, api_key: int, version: int, body: Mapping[str, Any]) -> bytes:
        """One of Cohort's own requests; its reply as the upstream framed it."""
        frame = encode_request(api_key, version, next(self._ids), self.client_id, body)
        try:
            reply = await asyncio.wait_for(self.relay(frame), REQUEST_TIMEOUT_S)
        except (TimeoutError, asyncio.TimeoutError):
            self.close(f"no reply to API {api_key} within {REQUEST_TIMEOUT_S:.0f} s")
            raise UpstreamUnavailable(f"the upstream broker {self.address} did not answer "
                                      f"API {api_key} within {REQUEST_TIMEOUT_S:.0f} s") from None
        return reply

    async def drain(self) -> None:
        """Wait while the socket's buffer is full (backpressure toward the client)."""
        if self._writer is not None:
            await self._writer.drain()

    def version_of(self, api_key: int, highest: int) -> int:
        """The highest version of ``api_key`` both this broker and Cohort (``highest``) speak."""
        lo, hi = self.versions.get(api_key, (0, -1))
        if hi < 0 or lo > highest:
            raise UpstreamUnavailable(
                f"the upstream broker {self.address} does not serve API {api_key} at a "
                f"version Cohort speaks (its range {lo}..{hi}, Cohort's up to {highest})")
        return min(hi, highest)

    async def _read_replies(self) -> None:
        try:
            while True:
                head = await self._reader.readexactly(4)
                (size,) = _INT32.unpack(head)
                if not 4 <= size <= MAX_REPLY_BYTES:
                    raise UpstreamUnavailable(f"a reply of {size} bytes")
                frame = head + await self._reader.readexactly(size)
                if not self._pending:
                    raise UpstreamUnavailable("a reply to no request")
                expected, future = self._pending.popleft()
                got = correlation_of_reply(frame[4:])
                if got != expected:
                    raise UpstreamUnavailable(f"reply {got} came for request {expected}")
                if not future.done():
                    future.set_result(frame)
        except asyncio.CancelledError:
            raise
        except (OSError, asyncio.IncompleteReadError, UpstreamUnavailable) as e:
            self.close(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)

    def close(self, why: str = "closed") -> None:
        """Close the link; every request still waiting fails with ``UpstreamUnavailable``."""
        if self.closed is not None:
            return
        self.closed = why
        if self._reading is not None and self._reading is not asyncio.current_task():
            self._reading.cancel()
        if self._writer is not None:
            self._writer.close()
        while self._pending:
            _, future = self._pending.popleft()
            if not future.done():
                future.set_exception(UpstreamUnavailable(
                    f"the upstream broker {self.address} went away: {why}"))

    # -------------------------------------------------------------------- SASL

    async def _authenticate(self) -> None:
        mechanism = self.settings.sasl_mechanism
        shake = await self.call(SASL_HANDSHAKE, 1, {"mechanism": mechanism})
        if shake["error_code"] != 0:
            raise UpstreamUnavailable(f"the upstream does not take SASL {mechanism} "
                                      f"(it offers {shake.get('mechanisms')})")
        user = self.settings.get("sasl.username") or ""
        password = self.settings.get("sasl.password") or ""
        if mechanism == "PLAIN":
            await self._sasl_step(f"\0{user}\0{password}".encode())
            return
        scram = _ScramClient(user, password, "sha512" if mechanism.endswith("512") else "sha256")
        server_first = await self._sasl_step(scram.first())
        server_final = await self._sasl_step(scram.final(server_first))
        if not scram.verify(server_final):
            raise UpstreamUnavailable("the upstream's SCRAM server signature does not match")

    async def _sasl_step(self, data: bytes) -> bytes:
        reply = await self.call(SASL_AUTHENTICATE, 2, {"auth_bytes": data})
        if reply["error_code"] != 0:
            raise UpstreamUnavailable(
                f"the upstream refused Cohort's credentials (sasl.username="
                f"{self.settings.get('sasl.username')!r}): {reply.get('error_message')}")
        return reply.get("auth_bytes") or b""


class _ScramClient:
    """RFC 5802's client side, as Kafka's SCRAM-SHA-256/512 expect it."""

    def __init__(self, user: str, password: str, digest: str) -> None:
        self.user, self.password, self.digest = user, password, digest
        nonce = secrets.token_urlsafe(18)
        self.bare = f"n={user.replace('=', '=3D').replace(',', '=2C')},r={nonce}"
        self.server_signature = b""

    def first(self) -> bytes:
        return f"n,,{self.bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode()
        attrs = dict(part.split("=", 1) for part in text.split(","))
        salted = hashlib.pbkdf2_hmac(self.digest, self.password.encode(),
                                     base64.b64decode(attrs["s"]), int(attrs["i"]))
        mac = lambda key, msg: hmac.new(key, msg, self.digest).digest()  # noqa: E731
        client_key = mac(salted, b"Client Key")
        without_proof = f"c=biws,r={attrs['r']}"
        auth = f"{self.bare},{text},{without_proof}".encode()
        signature = mac(hashlib.new(self.digest, client_key).digest(), auth)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self.server_signature = mac(mac(salted, b"Server Key"), auth)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> bool:
        return server_final == b"v=" + base64.b64encode(self.server_signature)
