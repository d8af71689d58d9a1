"""Kafka request bodies written as tokens that know what they are: the wire fuzzer's encoder.

kio writes a request as bytes and forgets where each field went; a structure-aware mutation
(``wire_fuzz``) must find an array's count, a string's length or an entity's tagged fields to
change it. So requests are written here from the codec's schema
(``protocol.wire.codec.request_schema``: kio's, or an API row's own), field by field, as a
list of ``Token``s, each the bytes of one piece and what it is; the bytes of a valid body
are exactly kio's (``tests/actors/tools/test_wire_fuzz.py`` reads them back).
Pure: no randomness, no I/O.
"""

from __future__ import annotations

import dataclasses
import struct
import types
import typing
import uuid
from functools import cache
from typing import Any, NamedTuple

from protocol.wire.codec import request_schema as load_request_schema

INT_FORMATS = {"int8": ">b", "int16": ">h", "int32": ">i", "int64": ">q", "uint16": ">H",
                "uint32": ">I", "timedelta_i32": ">i", "timedelta_i64": ">q",
                "datetime_i64": ">q", "error_code": ">h"}


class Token(NamedTuple):
    """A piece of an encoded request and what it is: ``int`` (``info``: its struct format),
    ``count`` (flexible, the entries' token ranges or None for a null array), ``string`` and
    ``bytes`` (flexible, nullable, the value), ``tags`` (a tagged-field section), ``raw``."""

    kind: str
    data: bytes
    info: tuple = ()


class Shape(NamedTuple):
    name: str
    kafka_type: str | None
    entity: type | None
    nullable: bool
    array: bool
    tag: int | None


@cache
def schema(api_key: int, version: int) -> type:
    return load_request_schema(api_key, version)


@cache
def shapes(entity: type) -> tuple[Shape, ...]:
    out = []
    for f in dataclasses.fields(entity):
        hint, nullable = f.type, False
        if typing.get_origin(hint) in (typing.Union, types.UnionType):
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            hint, nullable = args[0], True
        array = typing.get_origin(hint) is tuple
        inner = typing.get_args(hint)[0] if array else hint
        out.append(Shape(f.name, f.metadata.get("kafka_type"),
                          inner if dataclasses.is_dataclass(inner) else None,
                          nullable, array, f.metadata.get("tag")))
    return tuple(out)


def bounds(fmt: str) -> tuple[int, int]:
    bits = struct.calcsize(fmt) * 8
    if fmt[-1].isupper():
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_prefix(kind: str, flexible: bool, n: int | None) -> bytes:
    """A string's or bytes' length (``None``: null) in the encoding of its field."""
    if flexible:
        return uvarint(0 if n is None else n + 1)
    fmt = ">h" if kind == "string" else ">i"
    return struct.pack(fmt, -1 if n is None else n)


def count_prefix(flexible: bool, n: int | None) -> bytes:
    if flexible:
        return uvarint(0 if n is None else n + 1)
    return struct.pack(">i", -1 if n is None else n)


def encode_entity(out: list[Token], entity: type, value: dict[str, Any]) -> None:
    """Append ``value``'s tokens, encoded as ``entity`` (a kio schema) says, to ``out``."""
    flexible = entity.__flexible__
    tagged = []
    for shape in shapes(entity):
        v = value[shape.name]
        if shape.tag is not None:
            if v is not None:
                tagged.append((shape.tag, shape, v))
            continue
        _encode_field(out, shape, v, flexible)
    if flexible:
        section = [uvarint(len(tagged))]
        for tag, shape, v in sorted(tagged, key=lambda t: t[0]):
            inner: list[Token] = []
            _encode_field(inner, shape._replace(nullable=False), v, flexible)
            payload = b"".join(t.data for t in inner)
            section += [uvarint(tag), uvarint(len(payload)), payload]
        out.append(Token("tags", b"".join(section)))


def _encode_field(out: list[Token], shape: Shape, v: Any, flexible: bool) -> None:
    if not shape.array:
        _encode_item(out, shape, v, flexible, shape.nullable)
        return
    if v is None:
        out.append(Token("count", count_prefix(flexible, None), (flexible, None)))
        return
    at = len(out)
    out.append(Token("raw", b""))  # the count, once the entries' places are known
    items = []
    for item in v:
        start = len(out)
        _encode_item(out, shape, item, flexible, False)
        items.append((start, len(out)))
    out[at] = Token("count", count_prefix(flexible, len(v)), (flexible, tuple(items)))


def _encode_item(out: list[Token], shape: Shape, v: Any, flexible: bool,
                 nullable: bool) -> None:
    if shape.entity is not None:
        if nullable:  # KIP-893's nullable struct: a marker byte first
            out.append(Token("raw", b"\xff" if v is None else b"\x01"))
        if v is not None:
            encode_entity(out, shape.entity, v)
        return
    kind = shape.kafka_type
    if kind in INT_FORMATS:
        fmt = INT_FORMATS[kind]
        out.append(Token("int", struct.pack(fmt, v), (fmt,)))
    elif kind == "bool":
        out.append(Token("int", b"\x01" if v else b"\x00", ("?",)))
    elif kind in ("string", "bytes", "records"):
        raw = v.encode() if isinstance(v, str) else v
        token_kind = "string" if kind == "string" else "bytes"
        prefix = length_prefix(token_kind, flexible, None if raw is None else len(raw))
        out.append(Token(token_kind, prefix + (raw or b""), (flexible, nullable, raw)))
    elif kind == "uuid":
        out.append(Token("raw", (v or uuid.UUID(int=0)).bytes))
    elif kind == "float64":
        out.append(Token("raw", struct.pack(">d", v)))
    else:
        raise ValueError(f"cannot encode kafka type {kind!r}")


def request_tokens(api_key: int, version: int, body: dict[str, Any],
                   correlation_id: int = 1, client_id: str | None = "fuzz") -> list[Token]:
    """The tokens of a whole request (header and body), without the frame's size."""
    request = schema(api_key, version)
    head = struct.pack(">hhi", api_key, version, correlation_id)
    raw = None if client_id is None else client_id.encode()
    head += length_prefix("string", False, None if raw is None else len(raw)) + (raw or b"")
    tokens = [Token("raw", head)]
    if request.__header_schema__.__flexible__:
        tokens.append(Token("tags", b"\x00"))
    encode_entity(tokens, request, body)
    return tokens


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload
