"""A Kafka request frame in, plain values out; plain values in, a response frame out.

The header is read by hand (it is four fields and, for flexible versions, tagged fields), so
that a frame too short for it is told apart from a body kio cannot decode. The body is decoded
and encoded at the version the client asked for (the entity of a version kio lacks is the API
row's own, ``request_schema``): by hand for the APIs that dominate group
traffic (``fast_requests``, ``fast_responses``: OffsetCommit, OffsetFetch, Heartbeat,
ConsumerGroupHeartbeat, and the classic rebalance's responses), by kio through ``entities``
for every other. Both give the same plain values and the same bytes; kio is the oracle the
hand-written codecs are tested against (``decode_request_with_kio``,
``encode_response_with_kio``). Every way a frame can be wrong raises a ``WireError`` subclass
naming what was wrong, so the connection can answer or close for that client alone.

Reading a request is two steps, so that nothing is spent on a body before the connection has
decided to serve it: ``read_request_head`` (the header; the API and version checked against the
table) and ``decode_body``. A connection checks authentication between the two (Kafka's SASL
rule: nothing but ApiVersions and SASL before it completes); ``decode_request`` is both at once.

What a decoded body guarantees, whichever decoder read it (the shard trusts it: a request the
codec built needs no ``check_types`` again, ``protocol.validation``): its values have the types
and widths of the schema, every string fits Kafka's int16 length (``MAX_STRING_BYTES``: Kafka's
parsers refuse a longer compact string too), and it holds at most ``MAX_REQUEST_ENTRIES`` array
entries in all. The last two are enforced here (``_bounds_error``), not by the decoders.
"""

from __future__ import annotations

import dataclasses
import io
import struct
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any, NamedTuple

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from protocol.api import BY_API_KEY
from protocol.types import MAX_REQUEST_ENTRIES, MAX_STRING_BYTES
from protocol.validation import string_error
from protocol.wire.array_guard import check_arrays
from protocol.wire.entities import build, plain
from protocol.wire.fast_metadata import METADATA, metadata
from protocol.wire.fast_requests import DECODERS
from protocol.wire.fast_responses import ENCODERS, offset_commit_reply
from protocol.wire.framing import frame
from protocol.wire.versions import served, supports

# The hand-written response encoders: the hot group APIs' and Metadata's (fast_metadata).
_BODY_ENCODERS = {**ENCODERS, METADATA: metadata}
_HEADER = struct.Struct(">hhi")
_SIZE_AND_CORRELATION = struct.Struct(">ii")
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


class RequestHeader(NamedTuple):
    """A request's header fields (a tuple: made for every frame, so made cheaply)."""

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


class Decoded(NamedTuple):
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


class RequestHead(NamedTuple):
    """A request frame whose header is read and whose API and version are served, its body
    not decoded yet: what a connection checks (authentication, the API) before it spends
    anything on the body, and what a relay could pass on undecoded (``frame`` is the whole
    payload, ``body_offset`` where the body starts in it)."""

    header: RequestHeader
    frame: bytes
    body_offset: int


def read_request_head(data: bytes) -> RequestHead:
    """The frame's header, its API and version checked against the API table (``UnknownApi``,
    ``UnsupportedVersion``), and its tagged fields skipped; the body is not touched."""
    if type(data) is not bytes:
        data = bytes(data)  # kio reads only immutable buffers
    header, offset = read_header(data)
    flexible = _FLEXIBLE.get((header.api_key, header.api_version))
    if flexible is None:
        if not served(header.api_key):
            raise UnknownApi(f"unknown API key {header.api_key}")
        if not supports(header.api_key, header.api_version):
            raise UnsupportedVersion(header)
        flexible = _FLEXIBLE[header.api_key, header.api_version] = \
            _request_schema(header.api_key, header.api_version).__flexible__
    if flexible:
        offset = _skip_tagged_fields(data, offset)
    return RequestHead(header, data, offset)


def decode_body(head: RequestHead, fast: bool = True) -> dict[str, Any]:
    """The body of ``head``'s frame as plain values (see the module docstring for what it
    guarantees); ``MalformedRequest`` if it does not decode or breaks a bound. ``fast``: the
    hand-written decoder where there is one (else kio for every API, the oracle)."""
    header, data = head.header, head.frame
    decode = _PLANS.get((header.api_key, header.api_version, fast))
    if decode is None:
        decode = _PLANS[header.api_key, header.api_version, fast] = \
            _plan(header.api_key, header.api_version, fast)
    try:
        body = decode(data, head.body_offset, header.api_version)
    except Exception as e:  # kio's DecodeError, an ArrayTooLong, anything a hostile frame provokes
        raise MalformedRequest(f"cannot decode the request body: {e}") from None
    if len(data) > _BOUNDED_BYTES:
        why = _bounds_error(body)
        if why is not None:
            raise MalformedRequest(why)
    return body


def decode_request(data: bytes) -> Decoded:
    """The frame's header and body as plain values: ``read_request_head`` then
    ``decode_body``; a ``WireError`` if it cannot be served."""
    head = read_request_head(data)
    return Decoded(head.header, decode_body(head))


def decode_request_with_kio(data: bytes) -> Decoded:
    """``decode_request`` with kio for every API: the oracle of the hand-written decoders."""
    head = read_request_head(data)
    return Decoded(head.header, decode_body(head, fast=False))


def encode_response(header: RequestHeader, body: dict[str, Any] | EncodedBody,
                    version: int | None = None) -> bytes:
    """The framed response to ``header``'s request (at ``version``, default the request's)."""
    version = header.api_version if version is None else version
    if isinstance(body, EncodedBody):
        return _framed(header, body, version)
    encode = _BODY_ENCODERS.get(header.api_key)
    if encode is None:
        return encode_response_with_kio(header, body, version)
    out = _response_head(header, version)
    encode(out, body, version)
    return _sized(out)


def encode_commit_reply(header: RequestHeader, reply: object, body: dict[str, Any]) -> bytes:
    """``encode_response(header, offsets.commit_response(reply, body))`` for an OffsetCommit
    request decoded into ``body``, written straight from Cohort's ``reply``."""
    out = _response_head(header, header.api_version)
    offset_commit_reply(out, reply, body, header.api_version)
    return _sized(out)


def _response_head(header: RequestHeader, version: int) -> bytearray:
    """A response frame up to its body: a size to fill in (``_sized``), the correlation id,
    and the header's tagged fields (none) if it is flexible. Refuses a version kio lacks."""
    out = bytearray(_SIZE_AND_CORRELATION.pack(0, header.correlation_id))
    if _response_schema(header.api_key, version).__header_schema__.__flexible__:
        out.append(0)
    return out


def _sized(out: bytearray) -> bytes:
    _INT32.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def _framed(header: RequestHeader, body: EncodedBody, version: int) -> bytes:
    """A body written already (``EncodedBody``), framed as it is."""
    head = _INT32.pack(header.correlation_id)
    if _response_schema(header.api_key, version).__header_schema__.__flexible__:
        head += b"\x00"
    size = len(head) + sum(map(len, body.parts))
    return b"".join((_INT32.pack(size), head, *body.parts))


def encode_body(api_key: int, version: int, body: dict[str, Any]) -> EncodedBody:
    """``body`` written once in ``version``, to be framed for any number of requests: for a
    reply that never changes (ApiVersions', asked on every new connection), or is kept while
    its answer holds (Metadata's)."""
    encode = _BODY_ENCODERS.get(api_key)
    if encode is not None:
        out = bytearray()
        encode(out, body, version)
        return EncodedBody([bytes(out)])
    schema = _response_schema(api_key, version)
    buf = io.BytesIO()
    _writer(schema)(buf, build(schema, body))
    return EncodedBody([buf.getvalue()])


def encode_response_with_kio(header: RequestHeader, body: dict[str, Any],
                             version: int | None = None) -> bytes:
    """``encode_response`` through kio for every API: the oracle of the hand-written encoders."""
    version = header.api_version if version is None else version
    schema = _response_schema(header.api_key, version)
    if isinstance(body, EncodedBody):
        return _framed(header, body, version)
    buf = io.BytesIO()
    buf.write(_INT32.pack(header.correlation_id))
    if schema.__header_schema__.__flexible__:
        buf.write(b"\x00")  # no tagged fields in the response header
    _writer(schema)(buf, build(schema, body))
    return frame(buf.getvalue())


# (API key, version) -> whether its header is flexible, and (API key, version, hand-written
# allowed) -> its body decoder: for the keys and versions served only (the table bounds both).
_FLEXIBLE: dict[tuple[int, int], bool] = {}
_PLANS: dict[tuple[int, int, bool], Callable[[bytes, int, int], dict]] = {}


def _plan(api_key: int, version: int, fast: bool) -> Callable[[bytes, int, int], dict]:
    schema = _request_schema(api_key, version)
    decode = DECODERS.get(api_key) if fast else None
    if decode is None:
        read = _reader(schema)

        def decode(data: bytes, offset: int, version: int) -> dict:
            check_arrays(schema, data, offset)
            return plain(read(data, offset)[0])

    return decode


# A frame this short can break neither bound: a longer string needs more bytes, and every
# array entry of a request takes at least one byte (tests/gateway/test_fast_codec.py checks
# this of every schema served), so more than MAX_REQUEST_ENTRIES entries need more bytes too.
_BOUNDED_BYTES = min(MAX_STRING_BYTES, MAX_REQUEST_ENTRIES)
# A string of at most this many characters fits MAX_STRING_BYTES whatever they are (UTF-8
# takes at most four bytes a character), so only longer ones are measured.
_SHORT_CHARS = MAX_STRING_BYTES // 4


def _bounds_error(body: dict[str, Any]) -> str | None:
    """Why ``body`` breaks a bound every request keeps (a string longer than Kafka's int16
    length, more than ``MAX_REQUEST_ENTRIES`` array entries in all), or None."""
    entries, stack = 0, [body]
    while stack:
        value = stack.pop()
        t = type(value)
        if t is dict:
            stack.extend(value.values())
        elif t is list:
            entries += len(value)
            if entries > MAX_REQUEST_ENTRIES:
                return f"the request holds more than {MAX_REQUEST_ENTRIES} array entries"
            stack.extend(value)
        elif t is str and len(value) > _SHORT_CHARS:
            why = string_error(value)
            if why is not None:
                return f"a string field is {why}"
    return None


def holds_entries(body: dict[str, Any], n: int) -> bool:
    """Whether ``body``'s arrays hold at least ``n`` entries in all (counting stops there):
    what makes a short frame costly to serve, its reply holding an entry per entry."""
    entries, stack = 0, [body]
    while stack:
        value = stack.pop()
        t = type(value)
        if t is dict:
            stack.extend(value.values())
        elif t is list:
            entries += len(value)
            if entries >= n:
                return True
            stack.extend(value)
    return False


def response_fields(api_key: int, version: int) -> frozenset[str]:
    """The top-level field names of a response version (what a translation may set)."""
    return frozenset(f.name for f in dataclasses.fields(_response_schema(api_key, version)))


def _skip_tagged_fields(data: bytes, offset: int) -> int:
    if offset < len(data) and data[offset] == 0:
        return offset + 1  # none: what every client sends
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


def _own_schemas(api_key: int, version: int) -> tuple[type, type] | None:
    """The row's own entities of a version kio lacks (``Api.own_schemas``), or None."""
    api = BY_API_KEY.get(api_key)
    return None if api is None or api.own_schemas is None else api.own_schemas.get(version)


@cache
def request_schema(api_key: int, version: int) -> type:
    """The request entity of ``api_key`` at ``version``: the API row's own where kio lacks
    the version (``Api.own_schemas``), else kio's."""
    own = _own_schemas(api_key, version)
    return own[0] if own is not None else load_request_schema(api_key, version)


@cache
def response_schema(api_key: int, version: int) -> type:
    """The response entity of ``api_key`` at ``version`` (as ``request_schema``)."""
    own = _own_schemas(api_key, version)
    return own[1] if own is not None else load_response_schema(api_key, version)


_request_schema, _response_schema = request_schema, response_schema


@cache
def _reader(schema: type):
    return entity_reader(schema)


@cache
def _writer(schema: type):
    return entity_writer(schema)
