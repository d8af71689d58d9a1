"""Fetch's response body written straight to bytes, around record batches already encoded.

A Fetch reply is mostly record batches the stream encoded once and caches
(``protocol/wire/stream.py``); what is left is a few fixed-size fields per partition. kio would
build an entity per partition and write it field by field (about 100 µs for eight partitions,
the most expensive thing the gateway did per fetch), so this writes those fields with one
``struct`` call per partition and hands the cached batches over as they are: the body comes
back as a list of pieces, the batches among them uncopied, and the codec joins them once into
the frame (``codec.EncodedBody``).

It reads the same plain dict kio's path reads (``protocol/wire/entities.py``), with the same
rules: a field left out takes its default (or zero), a None takes zero (null where the field is
nullable), an error code kio has no name for travels as UNKNOWN_SERVER_ERROR, and a tagged
field is written only when it differs from its default. ``tests/gateway/test_fetch_response.py``
proves the bytes equal kio's, for any such dict, at every version the gateway serves.
"""

from __future__ import annotations

import struct
from functools import cache

from kio.schema.errors import ErrorCode

# The versions written here: the Fetch row's (protocol/api.py). v13 names topics by id.
MIN_VERSION, MAX_VERSION = 4, 12
FLEXIBLE_FROM = 12  # compact lengths and tagged fields
_KNOWN_ERRORS = frozenset(int(e.value) for e in ErrorCode)
_UNKNOWN_SERVER_ERROR = int(ErrorCode.unknown_server_error.value)
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_NULL_LEGACY = _I32.pack(-1)
_NO_TAGS = b"\x00"
# The partition's tagged fields (v12), in tag order: (key, ((field, default), ...), format).
_TAGGED = (
    ("diverging_epoch", (("epoch", -1), ("end_offset", -1)), struct.Struct(">iq")),
    ("current_leader", (("leader_id", -1), ("leader_epoch", -1)), struct.Struct(">ii")),
    ("snapshot_id", (("end_offset", -1), ("epoch", -1)), struct.Struct(">qi")),
)
_ABORTED = struct.Struct(">qq")


def uvarint(n: int) -> bytes:
    """Kafka's unsigned varint: 7 bits a byte, low bits first."""
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@cache
def _partition_head(version: int) -> struct.Struct:
    """The fixed fields before a partition's aborted transactions: partition index, error
    code, high watermark, last stable offset, and from v5 the log start offset."""
    return struct.Struct(">ihqqq" if version >= 5 else ">ihqq")


def fetch_body_parts(version: int, body: dict) -> list[bytes]:
    """Fetch response ``body`` (plain values) in ``version``: the bytes kio would write, as
    pieces to join (each partition's ``records`` among them as given, not copied)."""
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(f"Fetch v{version} is not written here (v{MIN_VERSION}-v{MAX_VERSION})")
    flexible = version >= FLEXIBLE_FROM
    parts = [_I32.pack(int(body.get("throttle_time") or 0))]
    if version >= 7:
        parts.append(_I16.pack(_error(body.get("error_code"))))
        parts.append(_I32.pack(int(body.get("session_id", 0) or 0)))
    topics = body.get("responses") or ()
    parts.append(_count(len(topics), flexible))
    for topic in topics:
        name = topic.get("topic")
        name = b"" if name is None else str(name).encode()
        parts.append((uvarint(len(name) + 1) if flexible else _I16.pack(len(name))) + name)
        partitions = topic.get("partitions") or ()
        parts.append(_count(len(partitions), flexible))
        for p in partitions:
            _partition(parts, p, version, flexible)
        if flexible:
            parts.append(_NO_TAGS)
    if flexible:
        parts.append(_NO_TAGS)
    return parts


def _partition(parts: list[bytes], p: dict, version: int, flexible: bool) -> None:
    head = (int(p.get("partition_index") or 0), _error(p.get("error_code")),
            int(p.get("high_watermark") or 0), int(p.get("last_stable_offset", -1) or 0))
    if version >= 5:
        head += (int(p.get("log_start_offset", -1) or 0),)
    parts.append(_partition_head(version).pack(*head))
    aborted = p.get("aborted_transactions")
    if aborted is None:
        parts.append(b"\x00" if flexible else _NULL_LEGACY)
    else:
        parts.append(_count(len(aborted), flexible))
        for a in aborted:
            parts.append(_ABORTED.pack(int(a.get("producer_id") or 0),
                                       int(a.get("first_offset") or 0)))
            if flexible:
                parts.append(_NO_TAGS)
    if version >= 11:
        parts.append(_I32.pack(int(p.get("preferred_read_replica", -1) or 0)))
    records = p.get("records")
    if records is None:
        parts.append(b"\x00" if flexible else _NULL_LEGACY)
    else:
        parts.append(uvarint(len(records) + 1) if flexible else _I32.pack(len(records)))
        parts.append(records)
    if flexible:
        parts.append(_tagged_fields(p))


def _tagged_fields(p: dict) -> bytes:
    """The partition's tagged-field section: each tagged field that differs from its default
    (a field given as None or {} is its default entity, as kio builds it)."""
    tags = []
    for tag, (key, fields, layout) in enumerate(_TAGGED):
        if key not in p:
            continue
        given = p[key] or {}
        values = tuple(int(given.get(name, default) or 0) for name, default in fields)
        if values != tuple(default for _, default in fields):
            data = layout.pack(*values) + _NO_TAGS
            tags.append(uvarint(tag) + uvarint(len(data)) + data)
    return uvarint(len(tags)) + b"".join(tags) if tags else _NO_TAGS


def _count(n: int, flexible: bool) -> bytes:
    return uvarint(n + 1) if flexible else _I32.pack(n)


def _error(code: int | None) -> int:
    code = int(code or 0)
    return code if code in _KNOWN_ERRORS else _UNKNOWN_SERVER_ERROR
