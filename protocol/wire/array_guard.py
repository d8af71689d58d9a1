"""Refuse, before kio reads a request body, an array claiming more entries than bytes left,
and a null where the schema says an array is never null.

kio's native reader reserves room for an array's entries before it reads them: a compact
array's length is a varint of up to 2**35, so a 20-byte frame claiming 2**32 entries makes it
ask for 32 GiB and the process aborts (a Rust allocation failure is not an exception), which
would take the gateway down for every client. Kafka's own parsers refuse such an array
("Tried to allocate a collection of size N, but there are only M bytes remaining"); this walk
applies the same rule for every request kio decodes (the hot ones are read by hand,
``fast_requests``, under the same rules). kio also reads a null (length -1) where the schema
has a non-nullable array and gives None, which no translation expects (a commit's topics
would fail the gateway's handler with a TypeError); Kafka's parsers refuse it ("non-nullable
field topics was serialized as null"), and so does this walk.

The walk follows kio's reading exactly (``rust/src/schema.rs``: field order, null markers,
tagged fields read by their schema), without building anything. It refuses only an array too
long for the bytes left, which kio would refuse too (it runs out of bytes) or die on, and a
null non-nullable array; anything else it cannot read it leaves to kio, which refuses it at
the same place.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from functools import cache

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from protocol.wire.primitives import INT16, INT32, uvarint

Step = Callable[[bytes, int], int]

_FIXED = {
    "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1, "uint16": 2, "uint32": 4,
    "uint64": 8, "float64": 8, "bool": 1, "uuid": 16, "error_code": 2, "timedelta_i32": 4,
    "timedelta_i64": 8, "datetime_i64": 8,
}


class ArrayTooLong(Exception):
    """An array claims more entries than the bytes left in the frame."""


class NullArray(Exception):
    """A null where the schema has an array that is never null."""


class _Unreadable(Exception):
    """kio refuses the body at this point (before any array it might die on)."""


def check_arrays(schema: type, data: bytes, offset: int) -> None:
    """Raise ``ArrayTooLong`` if reading ``data`` from ``offset`` as ``schema`` meets an array
    claiming more entries than bytes left, ``NullArray`` if it meets a null where the schema
    has an array that is never null; return otherwise."""
    try:
        _entity(schema, False)(data, offset)
    except (_Unreadable, IndexError, ValueError, struct.error):
        return  # kio stops here too, with its own error


@cache
def _entity(entity_type: type, nullable: bool) -> Step:
    flexible = entity_type.__flexible__
    steps: list[Step] = []
    tagged: dict[int, Step] = {}
    for f in dataclasses.fields(entity_type):
        tag = get_field_tag(f)
        step = _field(f, flexible, tagged=tag is not None)
        if tag is None:
            steps.append(step)
        else:
            tagged[tag] = step

    def walk(data: bytes, pos: int) -> int:
        if nullable:
            if data[pos] == 0xFF:  # int8 -1: a null struct
                return pos + 1
            pos += 1
        for step in steps:
            pos = step(data, pos)
        if flexible:
            count, pos = uvarint(data, pos)
            for _ in range(count):
                tag, pos = uvarint(data, pos)
                _, pos = uvarint(data, pos)  # kio ignores the size: it reads the field
                step = tagged.get(tag)
                if step is None:
                    raise _Unreadable(f"unknown tag {tag}")
                pos = step(data, pos)
        return pos

    return walk


def _field(f: dataclasses.Field, flexible: bool, tagged: bool) -> Step:
    kind = classify_field(f)
    if isinstance(kind, EntityField):
        inner = _entity(kind.type_, is_optional(f))
    elif isinstance(kind, EntityTupleField):
        inner = _entity(kind.type_, False)
    else:
        nullable = is_optional(f) and not tagged and not isinstance(kind, PrimitiveTupleField)
        inner = _primitive(get_schema_field_type(f), flexible, nullable)
    if not kind.is_array:
        return inner
    return _array(inner, flexible, nullable=tagged or is_optional(f))


def _primitive(kafka_type: str, flexible: bool, nullable: bool) -> Step:
    size = _FIXED.get(kafka_type)
    if size is not None:
        return lambda data, pos: pos + size
    if flexible:
        return lambda data, pos: _compact_sized(data, pos, nullable)
    if kafka_type == "string":
        return lambda data, pos: _legacy_sized(data, pos, INT16, 2, nullable)
    return lambda data, pos: _legacy_sized(data, pos, INT32, 4, nullable)


def _compact_sized(data: bytes, pos: int, nullable: bool) -> int:
    n, pos = uvarint(data, pos)
    if n == 0 and not nullable:
        raise _Unreadable("null string")
    return pos + max(n - 1, 0)


def _legacy_sized(data: bytes, pos: int, prefix, width: int, nullable: bool) -> int:
    (n,) = prefix.unpack_from(data, pos)
    if n < -1 or (n == -1 and not nullable):
        raise _Unreadable("bad length")
    return pos + width + max(n, 0)


def _array(item: Step, flexible: bool, nullable: bool) -> Step:
    def walk(data: bytes, pos: int) -> int:
        if flexible:
            n, pos = uvarint(data, pos)
            count = n - 1  # -1: null
        else:
            (count,) = INT32.unpack_from(data, pos)
            pos += 4
            if count < -1:
                raise _Unreadable("negative array length")
        if count == -1 and not nullable:
            raise NullArray("null where an array is required")
        if count > len(data) - pos:
            raise ArrayTooLong(f"an array of {count} entries in {len(data) - pos} bytes")
        for _ in range(count):
            pos = item(data, pos)
        return pos

    return walk
