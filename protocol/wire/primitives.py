"""Kafka's primitive types read and written by hand, exactly as kio reads and writes them.

The hand-written codecs of the hot group APIs (``fast_requests``, ``fast_responses``) are
built from these. Each reader takes the frame and a position and returns the value and the
position after it; each writer appends to a ``bytearray``. They exist because kio's per-field
entity building costs more than the coordinator's own work for a one-partition commit, and
they must not differ from kio in any way a client could observe, so every edge case is kio's
(its native reader, ``rust/src/readers.rs`` and ``schema.rs``), not the spec's:

* an unsigned varint has at most 5 bytes (the 5th may carry any 7 bits: values to 2**35-1);
* a compact string or array's length is the varint minus one, 0 meaning null; a legacy
  string's is an int16 (-1 null, below that refused), a legacy array's an int32 (likewise);
* a null where the schema has a non-nullable string is refused (kio refuses it); so is a null
  where it has a non-nullable array (kio gives None, which no translation expects: the codec
  refuses it on both paths, as Kafka's parsers do, ``array_guard``);
* a boolean is the byte 0 or 1, anything else is refused;
* a UUID of sixteen zero bytes reads as None;
* strings must be valid UTF-8 (Python's strict codec and Rust's ``from_utf8`` agree).

Where kio would allocate before it finds out (an array claiming 2**32 entries makes its native
reader ask for 32 GiB and abort the process), these readers refuse first: an array cannot
hold more entries than there are bytes left, since every entry of the arrays read here takes
at least one byte (Kafka's own parsers refuse such an array the same way).

Any malformed input raises ``ValueError`` (``BadBody``), ``IndexError`` or ``struct.error``;
the codec turns each into ``MalformedRequest``.
"""

from __future__ import annotations

import struct
import uuid

from kio.schema.errors import ErrorCode
from kio.serial.errors import OutOfBoundValue

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
# Legacy strings and arrays' length prefixes (int16, int32) and the widest string Kafka writes.
MAX_LEGACY_STRING_BYTES = 2**15 - 1
_ZERO_UUID = bytes(16)
# The durations kio reads (it counts a ``timedelta_i64`` field's milliseconds in an int64 of
# microseconds, and refuses a value that overflows it): the bounds of such a field, in ms.
TIMEDELTA_MAX_MS = (2**63 - 1) // 1000
TIMEDELTA_MIN_MS = -TIMEDELTA_MAX_MS
# The error codes kio knows; kio writes any other as UNKNOWN_SERVER_ERROR (``entities.build``).
_KNOWN_ERRORS = frozenset(int(e.value) for e in ErrorCode)
_UNKNOWN_SERVER_ERROR = int(ErrorCode.unknown_server_error.value)


class BadBody(ValueError):
    """A request body kio would refuse."""


# ---------------------------------------------------------------------------------- readers


def uvarint(data: bytes, pos: int) -> tuple[int, int]:
    b = data[pos]
    if b < 0x80:
        return b, pos + 1
    value, shift = b & 0x7F, 7
    for i in range(1, 5):
        b = data[pos + i]
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos + i + 1
        shift += 7
    raise BadBody("a varint longer than 5 bytes")


def compact_string(data: bytes, pos: int) -> tuple[str, int]:
    value, pos = compact_nullable_string(data, pos)
    if value is None:
        raise BadBody("null where a string is required")
    return value, pos


def compact_nullable_string(data: bytes, pos: int) -> tuple[str | None, int]:
    n = data[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = uvarint(data, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    if end > len(data):
        raise BadBody("a string runs past the end of the frame")
    return data[pos:end].decode(), end


def legacy_string(data: bytes, pos: int) -> tuple[str, int]:
    (n,) = INT16.unpack_from(data, pos)
    if n < 0:
        raise BadBody("null where a string is required" if n == -1 else "negative length")
    end = pos + 2 + n
    if end > len(data):
        raise BadBody("a string runs past the end of the frame")
    return data[pos + 2 : end].decode(), end


def legacy_nullable_string(data: bytes, pos: int) -> tuple[str | None, int]:
    (n,) = INT16.unpack_from(data, pos)
    if n < 0:
        if n == -1:
            return None, pos + 2
        raise BadBody("negative length")
    end = pos + 2 + n
    if end > len(data):
        raise BadBody("a string runs past the end of the frame")
    return data[pos + 2 : end].decode(), end


def compact_array_length(data: bytes, pos: int) -> tuple[int | None, int]:
    """A nullable array's entry count (None: null), refused if more than the bytes left."""
    n = data[pos]
    if n < 0x80:
        pos += 1
    else:
        n, pos = uvarint(data, pos)
    if n == 0:
        return None, pos
    if n - 1 > len(data) - pos:
        raise BadBody(f"an array of {n - 1} entries in {len(data) - pos} bytes")
    return n - 1, pos


def compact_array_count(data: bytes, pos: int) -> tuple[int, int]:
    """A non-nullable array's entry count: a null is refused."""
    n, pos = compact_array_length(data, pos)
    if n is None:
        raise BadBody("null where an array is required")
    return n, pos


def legacy_array_count(data: bytes, pos: int) -> tuple[int, int]:
    n, pos = legacy_array_length(data, pos)
    if n is None:
        raise BadBody("null where an array is required")
    return n, pos


def legacy_array_length(data: bytes, pos: int) -> tuple[int | None, int]:
    (n,) = INT32.unpack_from(data, pos)
    pos += 4
    if n < 0:
        if n == -1:
            return None, pos
        raise BadBody("negative array length")
    if n > len(data) - pos:
        raise BadBody(f"an array of {n} entries in {len(data) - pos} bytes")
    return n, pos


def int32s(data: bytes, n: int, pos: int) -> tuple[list[int], int]:
    """``n`` int32s (an array's entries, its length already read)."""
    if n == 1:
        return [INT32.unpack_from(data, pos)[0]], pos + 4
    end = pos + 4 * n
    if end > len(data):
        raise BadBody("an array runs past the end of the frame")
    return list(struct.unpack_from(f">{n}i", data, pos)), end


def boolean(data: bytes, pos: int) -> tuple[bool, int]:
    b = data[pos]
    if b > 1:
        raise BadBody("a boolean that is neither 0 nor 1")
    return b == 1, pos + 1


def uuid_or_none(data: bytes, pos: int) -> tuple[uuid.UUID | None, int]:
    raw = data[pos : pos + 16]
    if len(raw) < 16:
        raise BadBody("a UUID runs past the end of the frame")
    return (None if raw == _ZERO_UUID else uuid.UUID(bytes=raw)), pos + 16


def timedelta_i64_ms(data: bytes, pos: int) -> tuple[int, int]:
    (ms,) = INT64.unpack_from(data, pos)
    if not TIMEDELTA_MIN_MS <= ms <= TIMEDELTA_MAX_MS:
        raise BadBody("a duration of more microseconds than an int64 holds")
    return ms, pos + 8


def no_tagged_fields(data: bytes, pos: int) -> int:
    """The end of a tagged-field section that must be empty: the hot schemas declare no
    tagged fields, and kio refuses a tag its schema lacks."""
    if data[pos] == 0:
        return pos + 1
    count, pos = uvarint(data, pos)
    if count:
        raise BadBody("a tagged field the schema does not declare")
    return pos


# ---------------------------------------------------------------------------------- writers
# Each takes the value as ``entities.build`` would coerce it (the fast encoders coerce first).


def put_uvarint(out: bytearray, n: int) -> None:
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def put_compact_string(out: bytearray, value: str | bytes | None) -> None:
    """A compact string or bytes (None: null; the caller refuses null where kio would)."""
    if value is None:
        out.append(0)
        return
    raw = value.encode() if type(value) is str else value
    put_uvarint(out, len(raw) + 1)
    out += raw


def put_legacy_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += b"\xff\xff"
        return
    raw = value.encode()
    if len(raw) > MAX_LEGACY_STRING_BYTES:
        raise OutOfBoundValue(f"String is too long for legacy string format ({len(raw)})")
    out += INT16.pack(len(raw))
    out += raw


def put_legacy_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += b"\xff\xff\xff\xff"
        return
    out += INT32.pack(len(value))
    out += value


def put_compact_array_length(out: bytearray, n: int | None) -> None:
    put_uvarint(out, 0 if n is None else n + 1)


def put_legacy_array_length(out: bytearray, n: int | None) -> None:
    out += INT32.pack(-1 if n is None else n)


# ------------------------------------------------------------------ coercions (entities.build)


def error_code(value: object) -> int:
    """An error code as kio writes it: Kafka's own, or UNKNOWN_SERVER_ERROR for any other."""
    code = int(value or 0)
    return code if code in _KNOWN_ERRORS else _UNKNOWN_SERVER_ERROR


def text(value: object) -> str:
    """A non-nullable string field: None is written as ""."""
    return "" if value is None else str(value)


def nullable_text(value: object) -> str | None:
    return None if value is None else str(value)


def blob(value: object) -> bytes:
    """A non-nullable bytes field: None is written as b""."""
    return b"" if value is None else bytes(value)
