"""One connection from Cohort to one upstream broker, authenticated as Cohort itself.

Kafka answers a connection's requests in the order it sent them, so a link matches replies to
requests first in, first out (and checks the correlation ids agree): a relayed frame keeps the
client's own correlation id, and the reply goes back to the client as it came. Cohort's own
requests (Metadata polls, topic admin) use the same link with ids of its own.

The link reads its socket as an ``asyncio.Protocol`` (``_ReplyCutter``): each reply is cut from
the bytes (``FrameReader``, size prefix kept) in the callback that received them and its future
resolved there, with no task between the socket and the connection waiting for it. A stream
reader and a reading task cost the relay two more passes of the event loop and ~20 µs of
Python per reply: a third of what a produce's round trip through Cohort added
(``bench/upstream.py``).

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
from collections.abc import Callable, Mapping
from typing import Any

from actors.upstream.settings import UpstreamSettings
from protocol.wire.framing import FrameError, FrameReader
from protocol.wire.upstream import (
    API_VERSIONS,
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
        self._transport: asyncio.Transport | None = None
        self._socket: _ReplyCutter | None = None
        # Requests sent and not answered, oldest first: (correlation id, the reply's future,
        # what to call once it is resolved).
        self._pending: collections.deque[
            tuple[int, asyncio.Future, Callable[[], object] | None]] = collections.deque()
        self._ids = itertools.count(1 << 30)
        self.closed: str | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    async def open(self, timeout_s: float = CONNECT_TIMEOUT_S) -> UpstreamLink:
        """Connect, learn the broker's API versions, authenticate; ``UpstreamUnavailable``
        naming the address when any step fails."""
        try:
            tls = self.settings.tls_context(self.host)
            self._transport, self._socket = await asyncio.wait_for(
                asyncio.get_running_loop().create_connection(
                    lambda: _ReplyCutter(self), self.host, self.port, ssl=tls,
                    server_hostname=self.host if tls else None), timeout_s)
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

    def relay(self, frame: bytes, expects_reply: bool = True,
              then: Callable[[], object] | None = None) -> asyncio.Future | None:
        """Send a client's framed request as it is; the future gets the framed reply (None
        when the request gets no reply: Produce with acks=0), and ``then`` is called right
        after it is resolved (with the reply, or failed)."""
        if self.closed is not None:
            raise UpstreamUnavailable(f"the link to {self.address} is closed: {self.closed}")
        future = None
        if expects_reply:
            future = asyncio.get_running_loop().create_future()
            self._pending.append((_INT32.unpack_from(frame, 8)[0], future, then))
        self._transport.write(frame)
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

    @property
    def writing_paused(self) -> bool:
        """Whether the socket's buffer is full (``drain`` would wait)."""
        return self._socket is not None and self._socket.paused

    async def drain(self) -> None:
        """Wait while the socket's buffer is full (backpressure toward the client)."""
        if self._socket is not None:
            await self._socket.drain()

    def version_of(self, api_key: int, highest: int) -> int:
        """The highest version of ``api_key`` both this broker and Cohort (``highest``) speak."""
        lo, hi = self.versions.get(api_key, (0, -1))
        if hi < 0 or lo > highest:
            raise UpstreamUnavailable(
                f"the upstream broker {self.address} does not serve API {api_key} at a "
                f"version Cohort speaks (its range {lo}..{hi}, Cohort's up to {highest})")
        return min(hi, highest)

    def _replied(self, frame: bytes) -> None:
        """A reply frame (size prefix included) from the socket: the oldest request's."""
        if not self._pending:
            raise UpstreamUnavailable("a reply to no request")
        expected, future, then = self._pending[0]
        got = _INT32.unpack_from(frame, 4)[0]
        if got != expected:
            raise UpstreamUnavailable(f"reply {got} came for request {expected}")
        self._pending.popleft()
        if not future.done():
            future.set_result(frame)
        if then is not None:
            _call(then)

    def close(self, why: str = "closed") -> None:
        """Close the link; every request still waiting fails with ``UpstreamUnavailable``."""
        if self.closed is not None:
            return
        self.closed = why
        if self._transport is not None:
            self._transport.close()
        while self._pending:
            _, future, then = self._pending.popleft()
            if not future.done():
                future.set_exception(UpstreamUnavailable(
                    f"the upstream broker {self.address} went away: {why}"))
            if then is not None:
                _call(then)

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


def _call(then: Callable[[], object]) -> None:
    """What a relayed request's sender asked to be called once its reply is resolved: its
    error is logged, never raised into the socket's callback (asyncio would close the link)."""
    try:
        then()
    except Exception:
        log.exception("after an upstream reply")


class _ReplyCutter(asyncio.Protocol):
    """A link's socket: reply frames cut from the bytes as they arrive and handed to the link
    (``_replied``) in the same callback; the transport's write buffer, for ``drain``."""

    def __init__(self, link: UpstreamLink) -> None:
        self.link = link
        self._frames = FrameReader(MAX_REPLY_BYTES, min_bytes=4, sized=True)
        self._paused: asyncio.Future | None = None

    def data_received(self, data: bytes) -> None:
        try:
            for frame in self._frames.feed(data):
                self.link._replied(frame)
        except FrameError as e:
            self.link.close(f"a reply of {e.size} bytes")
        except UpstreamUnavailable as e:
            self.link.close(str(e))

    def eof_received(self) -> bool:
        self.link.close("IncompleteReadError: the upstream closed the connection")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.link.close(f"{type(exc).__name__}: {exc}" if exc is not None
                        else "the upstream closed the connection")
        self.resume_writing()

    @property
    def paused(self) -> bool:
        return self._paused is not None

    def pause_writing(self) -> None:
        if self._paused is None:
            self._paused = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        paused, self._paused = self._paused, None
        if paused is not None and not paused.done():
            paused.set_result(None)

    async def drain(self) -> None:
        if self._paused is not None:
            await asyncio.shield(self._paused)


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
