"""Records to bytes and back: msgpack, one version byte, schema-checked on the way in.

Layout of one encoded record (format 1)::

    FORMAT_VERSION (1 byte, 0x01)
    msgpack([key_type, key fields...])
    msgpack(bin(msgpack([value_version, value fields...]))) | msgpack(nil) for a tombstone

Fields are written positionally in declaration order (``protocol.record_fields``), so the bytes stay
small and a record's shape is its dataclass. The key comes first and whole, and the value
rides as an opaque blob behind it, for the load path: a restarted partition reads millions of
records, most of them overwritten later by a record with the same key. One msgpack call over a
whole batch (``split_records``) yields every key as a ready tuple (its identity for compaction)
and every value as bytes not yet decoded; only the values that survive compaction are ever
decoded (``decode_values``), offset commits in bulk (``offset_commits``).

Format 0 (``0x00`` + ``msgpack([key_type, [key fields...], value_version, [value fields...] |
nil])``) is still read, and rewritten in format 1 wherever it is compacted.

Decoding checks every field against the annotations and raises ``RecordDecodeError`` (a
``ValueError``) for anything else: truncated bytes, unknown versions, unknown record types,
wrong field counts or types. Nothing else escapes ``decode_record``.
"""

from __future__ import annotations

import functools
import operator
from typing import Any

import msgpack

from protocol.group_types import RECORD_SCHEMAS
from protocol.record_columns import columns_decoder
from protocol.record_fields import RecordDecodeError, decoder, encoder
from protocol.records import OffsetCommitKey, OffsetCommitValue, Record

__all__ = [
    "FORMAT_VERSION",
    "VALUE_VERSION",
    "RecordDecodeError",
    "decode_record",
    "decode_values",
    "encode_record",
    "key_identity",
    "offset_commits",
    "peek_key",
    "split_records",
    "split_records_typed",
]

FORMAT_VERSION = 1
LEGACY_FORMAT_VERSION = 0
VALUE_VERSION = 0

_KEY_BY_TYPE: dict[int, type] = {k.TYPE: k for k in RECORD_SCHEMAS}
_VALUE_BY_TYPE: dict[int, type] = {k.TYPE: v for k, v in RECORD_SCHEMAS.items()}
_KEY_TYPES = frozenset(_KEY_BY_TYPE)
_BLOB_TYPES = frozenset({bytes, type(None)})
_PREFIX = bytes([FORMAT_VERSION])
_PAIR = b"\x92"  # msgpack fixarray of 2: turns a record's key + value into one object
_FIRST, _SECOND, _THIRD, _FOURTH = (operator.itemgetter(i) for i in range(4))
_OFFSET_COMMIT = OffsetCommitKey.TYPE
# Values decoded per msgpack call in bulk: bounds the temporary stream, not the result.
BULK_CHUNK = 20_000


def encode_record(record: Record) -> bytes:
    key_cls = type(record.key)
    if key_cls not in RECORD_SCHEMAS:
        raise TypeError(f"not a record key: {key_cls.__name__}")
    value = record.value
    if value is not None and type(value) is not RECORD_SCHEMAS[key_cls]:
        raise TypeError(f"{key_cls.__name__} takes {RECORD_SCHEMAS[key_cls].__name__} values")
    # One packer for the record's three packs (``msgpack.packb`` makes one per call, and
    # making one costs twice what a pack does).
    pack = msgpack.Packer(use_bin_type=True).pack
    key = pack([key_cls.TYPE, *encoder(key_cls)(record.key)])
    blob = None if value is None else pack([VALUE_VERSION, *encoder(type(value))(value)])
    return _PREFIX + key + pack(blob)


def decode_record(data: bytes) -> Record:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise RecordDecodeError(f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if not data:
        raise RecordDecodeError("empty record")
    if data[0] == LEGACY_FORMAT_VERSION:
        return _decode_legacy(data)
    if data[0] != FORMAT_VERSION:
        raise RecordDecodeError(f"unknown record format version {data[0]}")
    key_fields, blob = _unpack_pair(data, use_list=True)
    key_cls = _key_class(key_fields)
    key = _key_decoder(key_cls)(key_fields[1:], "key")
    return Record(key, None if blob is None else _decode_value(key_cls.TYPE, blob))


def key_identity(key: object) -> tuple:
    """What makes two record keys the same key: the record type and the key's fields.

    Equal to ``peek_key``'s answer for the encoded record, so a compacted view can mix
    records it saw live with records it only read as bytes.
    """
    return (type(key).TYPE, *encoder(type(key))(key))


def peek_key(data: bytes) -> tuple[tuple, bool]:
    """(key identity, is a tombstone) of an encoded record, without decoding its value."""
    if not isinstance(data, (bytes, bytearray)) or not data:
        raise RecordDecodeError("not a record of this format version")
    if data[0] == LEGACY_FORMAT_VERSION:
        record = _decode_legacy(bytes(data))
        return key_identity(record.key), record.value is None
    if data[0] != FORMAT_VERSION:
        raise RecordDecodeError("not a record of this format version")
    key, blob = _unpack_pair(bytes(data), use_list=False)
    _key_class(key)
    return key, blob is None


# ------------------------------------------------------------------------------ bulk


def split_records(batch: list[bytes]) -> tuple[list[tuple], list[bytes | None], list[bytes]]:
    """(key identities, value blobs (None: a tombstone), the records in format 1) of a batch.

    The batch is decoded with one msgpack call: the records, laid end to end, are a stream of
    (version, key, value) objects. A batch that does not read that way (format 0 records, or
    damage) goes record by record, which checks and upgrades each one or raises
    ``RecordDecodeError``. A key's type is checked here, its fields when it is decoded.
    """
    keys, blobs, records, _ = split_records_typed(batch)
    return keys, blobs, records


def split_records_typed(
    batch: list[bytes],
) -> tuple[list[tuple], list[bytes | None], list[bytes], set[int]]:
    """``split_records`` and the set of the batch's record types (found while checking)."""
    if not batch:
        return [], [], [], set()
    try:
        if set(map(_FIRST, batch)) == {FORMAT_VERSION}:
            items = msgpack.unpackb(
                _array_header(3 * len(batch)) + b"".join(batch), raw=False, use_list=False
            )
            keys, blobs = list(items[1::3]), list(items[2::3])
            if (
                items[0::3] == (FORMAT_VERSION,) * len(batch)
                and set(map(type, keys)) == {tuple}
                and all(keys)  # no empty key
                and (types := set(map(_FIRST, keys))) <= _KEY_TYPES
                and set(map(type, blobs)) <= _BLOB_TYPES
            ):  # each check one pass in C: a batch of a thousand records costs microseconds
                return keys, blobs, batch, types
    except (ValueError, TypeError, IndexError, msgpack.UnpackException, RecordDecodeError):
        pass
    keys, blobs, records = _split_one_by_one(batch)
    return keys, blobs, records, set(map(_FIRST, keys))


def decode_values(key_type: int, blobs: list[bytes]) -> list[Any]:
    """The values of ``blobs`` (all of records of ``key_type``), with a few msgpack calls.

    Each chunk is decoded column by column (``record_columns``) and, should anything in it
    look unexpected, again value by value, which names the field at fault.
    """
    value_cls = _VALUE_BY_TYPE.get(key_type)
    if value_cls is None:
        raise RecordDecodeError(f"unknown record type {key_type!r}")
    decode = _value_decoder(value_cls)
    in_columns = columns_decoder(value_cls)
    out: list[Any] = []
    for start in range(0, len(blobs), BULK_CHUNK):
        chunk = blobs[start : start + BULK_CHUNK]
        stream = _array_header(len(chunk)) + b"".join(chunk)
        try:
            decoded = in_columns(
                list(msgpack.unpackb(stream, raw=False, strict_map_key=True, use_list=False)),
                VALUE_VERSION,
            )
        except Exception:  # damage somewhere in the chunk: found below, value by value
            decoded = None
        if decoded is not None:
            out += decoded
            continue
        try:
            wires = msgpack.unpackb(stream, raw=False, strict_map_key=True)
        except Exception:
            out += [_decode_value(key_type, blob) for blob in chunk]
            continue
        out += [decode(wire, "value") for wire in wires]
    return out


def offset_commits(
    keys: list[tuple], blobs: list[bytes | None]
) -> list[tuple[str, str, int, OffsetCommitValue | None]]:
    """(group id, topic, partition, value or None) of offset commit records given as
    ``split_records`` gives them, checked as ``decode_record`` checks them (the keys with a
    few C-level passes; any doubt, and each key is checked alone, naming the field)."""
    if keys and not (
        set(map(len, keys)) == {4}
        and set(map(_FIRST, keys)) == {_OFFSET_COMMIT}
        and set(map(type, map(_SECOND, keys))) == {str}
        and set(map(type, map(_THIRD, keys))) == {str}
        and set(map(type, map(_FOURTH, keys))) == {int}
    ):
        for key in keys:
            if (
                len(key) != 4
                or key[0] != _OFFSET_COMMIT
                or type(key[1]) is not str
                or type(key[2]) is not str
                or type(key[3]) is not int
            ):
                _key_decoder(_key_class(key))(list(key[1:]), "key")  # raises, naming the field
                raise RecordDecodeError(f"not an offset commit key: {key!r}")
    if None not in blobs:
        values = decode_values(_OFFSET_COMMIT, blobs)
        return list(zip(map(_SECOND, keys), map(_THIRD, keys), map(_FOURTH, keys), values,
                        strict=True))
    live = [blob for blob in blobs if blob is not None]
    decoded = iter(decode_values(_OFFSET_COMMIT, live))
    return [
        (key[1], key[2], key[3], None if blob is None else next(decoded))
        for key, blob in zip(keys, blobs, strict=True)
    ]


def decode_key(identity: tuple) -> object:
    """The key object of a key identity (as ``split_records`` or ``peek_key`` give them)."""
    return _key_decoder(_key_class(identity))(list(identity[1:]), "key")


def decode_value(key_type: int, blob: bytes | None) -> object | None:
    """One value blob as ``split_records`` gives it (None: a tombstone)."""
    return None if blob is None else _decode_value(key_type, blob)


# ------------------------------------------------------------------------------ internals


def _array_header(n: int) -> bytes:
    if n < 16:
        return bytes([0x90 | n])
    if n < 1 << 16:
        return b"\xdc" + n.to_bytes(2, "big")
    return b"\xdd" + n.to_bytes(4, "big")


def _unpack_pair(data: bytes, use_list: bool) -> tuple[Any, Any]:
    try:
        key, blob = msgpack.unpackb(
            _PAIR + data[1:], raw=False, strict_map_key=True, use_list=use_list
        )
    except Exception as e:  # msgpack raises several unrelated types on bad input
        raise RecordDecodeError(f"not msgpack: {type(e).__name__}: {e}") from None
    if blob is not None and type(blob) is not bytes:
        raise RecordDecodeError("a record's value is a msgpack blob or nil")
    return key, blob


def _key_class(key: Any) -> type:
    if not isinstance(key, (list, tuple)) or not key:
        raise RecordDecodeError("a record key is an array [key_type, key fields...]")
    key_type = key[0]
    key_cls = _KEY_BY_TYPE.get(key_type) if type(key_type) is int else None
    if key_cls is None:
        raise RecordDecodeError(f"unknown record type {key_type!r}")
    return key_cls


def _key_decoder(key_cls: type):
    return decoder(key_cls)


@functools.cache
def _value_decoder(value_cls: type):
    fields = decoder(value_cls)

    def decode(wire: Any, path: str) -> Any:
        if type(wire) is not list or not wire:
            raise RecordDecodeError(f"{path}: a value is an array [value_version, fields...]")
        version = wire[0]
        if version != VALUE_VERSION or type(version) is not int:
            raise RecordDecodeError(f"unknown value version {version!r}")
        return fields(wire[1:], path)

    return decode


def _decode_value(key_type: int, blob: bytes) -> Any:
    try:
        wire = msgpack.unpackb(blob, raw=False, strict_map_key=True)
    except Exception as e:
        raise RecordDecodeError(f"value is not msgpack: {type(e).__name__}: {e}") from None
    return _value_decoder(_VALUE_BY_TYPE[key_type])(wire, "value")


def _split_one_by_one(
    batch: list[bytes],
) -> tuple[list[tuple], list[bytes | None], list[bytes]]:
    keys: list[tuple] = []
    blobs: list[bytes | None] = []
    records: list[bytes] = []
    for data in batch:
        if isinstance(data, bytes) and data[:1] == _PREFIX:
            key, blob = _unpack_pair(data, use_list=False)
            _key_class(key)
        else:
            data = encode_record(decode_record(data))  # format 0: upgraded, checked
            key, blob = _unpack_pair(data, use_list=False)
        keys.append(key)
        blobs.append(blob)
        records.append(data)
    return keys, blobs, records


def _decode_legacy(data: bytes) -> Record:
    """Format 0: ``0x00 + msgpack([key_type, [key fields], value_version, [fields] | nil])``."""
    try:
        payload = msgpack.unpackb(data[1:], raw=False, strict_map_key=True, use_list=True)
    except Exception as e:
        raise RecordDecodeError(f"not msgpack: {type(e).__name__}: {e}") from None
    if not isinstance(payload, list) or len(payload) != 4:
        raise RecordDecodeError("a record is a 4-element array")
    key_type, key_fields, value_version, value_fields = payload
    key_cls = _KEY_BY_TYPE.get(key_type) if type(key_type) is int else None
    if key_cls is None:
        raise RecordDecodeError(f"unknown record type {key_type!r}")
    if value_version != VALUE_VERSION or type(value_version) is not int:
        raise RecordDecodeError(f"unknown value version {value_version!r}")
    key = decoder(key_cls)(key_fields, "key")
    if value_fields is None:
        return Record(key, None)
    return Record(key, decoder(RECORD_SCHEMAS[key_cls])(value_fields, "value"))
