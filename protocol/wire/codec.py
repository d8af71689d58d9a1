"""A Kafka request frame in, plain values out; plain values in, a response frame out.

The header is read by hand (it is four fields and, for flexible versions, tagged fields), so
that a frame too short for it is told apart from a body kio cannot decode; the body is
decoded and encoded by kio at the version the client asked for, through ``entities``. Every
way a frame can be wrong raises a ``WireError`` subclass naming what was wrong, so the
connection can answer or close for that client alone.
"""

from __future__ import annotations

import dataclasses
import io
import struct
from dataclasses import dataclass
from functools import cache
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from protocol.wire.entities import build, plain
from protocol.wire.framing import frame
from protocol.wire.versions import served, supports

_HEADER = struct.Struct(">hhi")
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
# A tagged-field section longer than this many fields is not a header a client wrote.
MAX_HEADER_TAGS = 64


class WireError(Exception):
    """A frame the gateway cannot serve."""


class TruncatedHeader(WireError):
    pass


class UnknownApi(WireError):
    pass


class UnsupportedVersion(WireError):
    def __init__(self, header: RequestHeader) -> None:
        super().__init__(f"API {header.api_key} version {header.api_version} is not supported")
        self.header = header


class MalformedRequest(WireError):
    pass


@dataclass(frozen=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


@dataclass(frozen=True, slots=True)
class EncodedBody:
    """A response body already written in its request's version, in pieces: framed as it is,
    kio skipped, each piece copied once (Fetch's, around cached record batches:
    ``protocol/wire/fetch_response.py``, proven equal to kio's bytes)."""

    parts: list[bytes]


@dataclass(frozen=True)
class Decoded:
    header: RequestHeader
    body: dict[str, Any]


def read_header(data: bytes) -> tuple[RequestHeader, int]:
    """The fixed header fields and where the rest starts; ``TruncatedHeader`` if it is cut."""
    if len(data) < _HEADER.size + 2:
        raise TruncatedHeader(f"a request header needs at least 10 bytes, got {len(data)}")
    api_key, api_version, correlation_id = _HEADER.unpack_from(data, 0)
    (n,) = _INT16.unpack_from(data, _HEADER.size)
    offset = _HEADER.size + 2
    client_id = None
    if n >= 0:
        if offset + n > len(data):
            raise TruncatedHeader("the client id runs past the end of the frame")
        try:
            client_id = data[offset : offset + n].decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedRequest("the client id is not UTF-8") from None
        offset += n
    elif n != -1:
        raise MalformedRequest(f"bad client id length {n}")
    return RequestHeader(api_key, api_version, correlation_id, client_id), offset


def decode_request(data: bytes) -> Decoded:
    data = bytes(data)  # kio reads only immutable buffers
    header, offset = read_header(data)
    if not served(header.api_key):
        raise UnknownApi(f"unknown API key {header.api_key}")
    if not supports(header.api_key, header.api_version):
        raise UnsupportedVersion(header)
    schema = _request_schema(header.api_key, header.api_version)
    if schema.__flexible__:
        offset = _skip_tagged_fields(data, offset)
    try:
        body, _ = _reader(schema)(data, offset)
    except Exception as e:  # kio's DecodeError, and anything a hostile frame provokes
        raise MalformedRequest(f"cannot decode the request body: {e}") from None
    return Decoded(header, plain(body))


def encode_response(header: RequestHeader, body: dict[str, Any] | EncodedBody,
                    version: int | None = None) -> bytes:
    """The framed response to ``header``'s request (at ``version``, default the request's)."""
    version = header.api_version if version is None else version
    schema = _response_schema(header.api_key, version)
    if isinstance(body, EncodedBody):
        head = _INT32.pack(header.correlation_id)
        if schema.__header_schema__.__flexible__:
            head += b"\x00"
        size = len(head) + sum(map(len, body.parts))
        return b"".join((_INT32.pack(size), head, *body.parts))
    buf = io.BytesIO()
    buf.write(_INT32.pack(header.correlation_id))
    if schema.__header_schema__.__flexible__:
        buf.write(b"\x00")  # no tagged fields in the response header
    _writer(schema)(buf, build(schema, body))
    return frame(buf.getvalue())


def response_fields(api_key: int, version: int) -> frozenset[str]:
    """The top-level field names of a response version (what a translation may set)."""
    return frozenset(f.name for f in dataclasses.fields(_response_schema(api_key, version)))


def _skip_tagged_fields(data: bytes, offset: int) -> int:
    try:
        count, offset = _uvarint(data, offset)
        if count > MAX_HEADER_TAGS:
            raise MalformedRequest(f"{count} tagged fields in a request header")
        for _ in range(count):
            _, offset = _uvarint(data, offset)
            size, offset = _uvarint(data, offset)
            offset += size
            if offset > len(data):
                raise TruncatedHeader("a header tagged field runs past the end of the frame")
    except IndexError:
        raise TruncatedHeader("the header's tagged fields are cut short") from None
    return offset


def _uvarint(data: bytes, offset: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        b = data[offset]
        offset += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, offset
        shift += 7
        if shift > 28:
            raise MalformedRequest("a varint longer than 5 bytes")


@cache
def _request_schema(api_key: int, version: int) -> type:
    return load_request_schema(api_key, version)


@cache
def _response_schema(api_key: int, version: int) -> type:
    return load_response_schema(api_key, version)


@cache
def _reader(schema: type):
    return entity_reader(schema)


@cache
def _writer(schema: type):
    return entity_writer(schema)
