"""A raw Kafka wire client for the differential tests: plain dicts in, plain dicts out.

The conformance runner must say exactly which bytes it sent, at which version, to Kafka and to
Cohort alike, with nothing between it and the broker deciding for it (a real client retries,
rejoins and fills fields in). So this client is the codec's own vocabulary turned around:
kio's request entities built from plain values (``protocol.wire.entities.build``), written
with a v1/v2 request header, and the reply read back into plain values (``plain``), with
kio's field names (``rebalance_timeout`` in milliseconds, error codes as ints, ``UUID`` ids).

One ``Connection`` is one socket with one request in flight at a time by default, but ``send``
and ``receive`` are split so a script can park a long-poll (a classic JoinGroup) and go on with
another member's connection, as Kafka's clients keep one connection per coordinator.
"""

from __future__ import annotations

import io
import socket
import struct
from collections import deque
from functools import cache
from typing import Any

from kio.serial import entity_reader, entity_writer

from protocol.wire.codec import request_schema as load_request_schema
from protocol.wire.codec import response_schema as load_response_schema
from protocol.wire.entities import build, plain
from protocol.wire.framing import frame
from protocol.wire.primitives import put_legacy_string

CLIENT_ID = "conformance"
TIMEOUT_S = 15.0  # one reply; a JoinGroup long-poll in these scripts ends well before
_INT32 = struct.Struct(">i")


@cache
def _request(api_key: int, version: int) -> tuple[type, Any, bool]:
    schema = load_request_schema(api_key, version)
    return schema, entity_writer(schema), schema.__flexible__


@cache
def _response(api_key: int, version: int) -> tuple[Any, bool]:
    schema = load_response_schema(api_key, version)
    # ApiVersions answers with a v0 header whatever the request's (KIP-511).
    flexible = schema.__header_schema__.__flexible__ and api_key != 18
    return entity_reader(schema), flexible


def encode_request(api_key: int, version: int, correlation_id: int, body: dict) -> bytes:
    """A framed request: header v1 (or v2 when the version is flexible) and ``body``, built
    as the version's kio entity (fields the version lacks are dropped, as Kafka's generated
    messages drop them)."""
    schema, write, flexible = _request(api_key, version)
    out = bytearray(struct.pack(">hhi", api_key, version, correlation_id))
    put_legacy_string(out, CLIENT_ID)
    if flexible:
        out.append(0)  # no tagged fields in the header
    buf = io.BytesIO()
    write(buf, build(schema, body))
    return frame(bytes(out) + buf.getvalue())


def decode_response(api_key: int, version: int, payload: bytes) -> tuple[int, dict]:
    """``(correlation_id, body)`` of a response frame's payload (its size already read)."""
    read, flexible = _response(api_key, version)
    (correlation_id,) = _INT32.unpack_from(payload, 0)
    offset = 4
    if flexible:
        if payload[offset] != 0:
            raise ValueError("tagged fields in a response header: not expected here")
        offset += 1
    return correlation_id, plain(read(payload, offset)[0])


class Connection:
    """One socket to one broker address; requests answered in the order they were sent."""

    def __init__(self, address: str, timeout_s: float = TIMEOUT_S) -> None:
        host, port = address.rsplit(":", 1)
        self.address = address
        self._sock = socket.create_connection((host, int(port)), timeout=timeout_s)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._correlation = 0
        self._waiting: deque[tuple[int, int, int]] = deque()  # (correlation, api, version)

    def send(self, api_key: int, version: int, body: dict) -> None:
        self._correlation += 1
        self._sock.sendall(encode_request(api_key, version, self._correlation, body))
        self._waiting.append((self._correlation, api_key, version))

    def receive(self) -> dict:
        """The reply to the oldest request sent and not yet received."""
        correlation, api_key, version = self._waiting.popleft()
        size = _INT32.unpack(self._read(4))[0]
        got, body = decode_response(api_key, version, self._read(size))
        if got != correlation:
            raise ValueError(f"reply to correlation {got}, expected {correlation}")
        return body

    def call(self, api_key: int, version: int, body: dict) -> dict:
        self.send(api_key, version, body)
        return self.receive()

    def _read(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self._sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError(f"{self.address} closed the connection")
            buf += chunk
        return bytes(buf)

    def close(self) -> None:
        self._sock.close()
