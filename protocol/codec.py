"""Records to bytes and back: msgpack, one version byte, schema-checked on the way in.

Layout of one encoded record::

    FORMAT_VERSION (1 byte)
    msgpack([key_type, [key fields...], value_version, [value fields...] | nil])

Fields are written positionally in declaration order, so the bytes stay small and a record's
shape is its dataclass. Decoding checks every field against the annotations and raises
``RecordDecodeError`` (a ``ValueError``) for anything else: truncated bytes, unknown versions,
unknown record types, wrong field counts or types. Nothing else escapes ``decode_record``.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin

import msgpack

from protocol.records import RECORD_SCHEMAS, Record

FORMAT_VERSION = 0
VALUE_VERSION = 0

_KEY_BY_TYPE: dict[int, type] = {k.TYPE: k for k in RECORD_SCHEMAS}


class RecordDecodeError(ValueError):
    """The bytes are not a record this version of Cohort wrote."""


def encode_record(record: Record) -> bytes:
    key_cls = type(record.key)
    if key_cls not in RECORD_SCHEMAS:
        raise TypeError(f"not a record key: {key_cls.__name__}")
    value = record.value
    if value is not None and type(value) is not RECORD_SCHEMAS[key_cls]:
        raise TypeError(f"{key_cls.__name__} takes {RECORD_SCHEMAS[key_cls].__name__} values")
    payload = [
        key_cls.TYPE,
        _to_wire(record.key),
        VALUE_VERSION,
        None if value is None else _to_wire(value),
    ]
    return bytes([FORMAT_VERSION]) + msgpack.packb(payload, use_bin_type=True)


def decode_record(data: bytes) -> Record:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise RecordDecodeError(f"expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if not data:
        raise RecordDecodeError("empty record")
    if data[0] != FORMAT_VERSION:
        raise RecordDecodeError(f"unknown record format version {data[0]}")
    try:
        payload = msgpack.unpackb(data[1:], raw=False, strict_map_key=True, use_list=True)
    except Exception as e:  # msgpack raises several unrelated types on bad input
        raise RecordDecodeError(f"not msgpack: {type(e).__name__}: {e}") from None
    if not isinstance(payload, list) or len(payload) != 4:
        raise RecordDecodeError("a record is a 4-element array")
    key_type, key_fields, value_version, value_fields = payload
    key_cls = _KEY_BY_TYPE.get(key_type) if type(key_type) is int else None
    if key_cls is None:
        raise RecordDecodeError(f"unknown record type {key_type!r}")
    if value_version != VALUE_VERSION or type(value_version) is not int:
        raise RecordDecodeError(f"unknown value version {value_version!r}")
    key = _from_wire(key_fields, key_cls, "key")
    value = (
        None if value_fields is None else _from_wire(value_fields, RECORD_SCHEMAS[key_cls], "value")
    )
    return Record(key, value)


def key_identity(key: object) -> tuple:
    """What makes two record keys the same key: the record type and the key's fields.

    Equal to ``peek_key``'s answer for the encoded record, so a compacted view can mix
    records it saw live with records it only read as bytes.
    """
    return (type(key).TYPE, *(getattr(key, f.name) for f in dataclasses.fields(key)))


def peek_key(data: bytes) -> tuple[tuple, bool]:
    """(key identity, is a tombstone) of an encoded record, without building the record:
    all that compaction needs, at the cost of one msgpack unpack."""
    if not isinstance(data, (bytes, bytearray)) or not data or data[0] != FORMAT_VERSION:
        raise RecordDecodeError("not a record of this format version")
    try:
        payload = msgpack.unpackb(data[1:], raw=False, strict_map_key=True, use_list=True)
        key_type, key_fields, _, value = payload
    except Exception as e:
        raise RecordDecodeError(f"not a record: {type(e).__name__}: {e}") from None
    if key_type not in _KEY_BY_TYPE or not isinstance(key_fields, list):
        raise RecordDecodeError(f"unknown record type {key_type!r}")
    return (key_type, *key_fields), value is None


# ------------------------------------------------------------------------------ internals


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _to_wire(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj):
        return [_to_wire(getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    if isinstance(obj, tuple):
        return [_to_wire(v) for v in obj]
    if isinstance(obj, dict):
        return {k: sorted(v) for k, v in sorted(obj.items())}
    return obj


def _from_wire(wire: Any, hint: Any, path: str) -> Any:
    return _decoder(hint)(wire, path)


@functools.cache
def _decoder(hint: Any) -> Callable[[Any, str], Any]:
    """A checking converter for ``hint``, built once per type: loading a partition decodes
    millions of records, and walking the annotations for each one would dominate it."""
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in get_args(hint) if a is not type(None)]
        inner_decode = _decoder(inner)
        return lambda wire, path: None if wire is None else inner_decode(wire, path)
    if origin is tuple:
        item = _decoder(get_args(hint)[0])

        def decode_tuple(wire: Any, path: str) -> tuple:
            if not isinstance(wire, list):
                raise RecordDecodeError(f"{path}: expected an array")
            return tuple(item(v, f"{path}[]") for v in wire)

        return decode_tuple
    if origin is dict:
        return _decode_partition_map
    if dataclasses.is_dataclass(hint):
        return _dataclass_decoder(hint)
    if hint in (int, str, bytes, bool):
        expected = "an int" if hint is int else hint.__name__

        def decode_scalar(wire: Any, path: str) -> Any:
            if type(wire) is not hint:
                raise RecordDecodeError(f"{path}: expected {expected}")
            return wire

        return decode_scalar
    return lambda wire, path: wire


def _dataclass_decoder(cls: type) -> Callable[[Any, str], Any]:
    hints = _hints(cls)
    fields = [(f.name, _decoder(hints[f.name])) for f in dataclasses.fields(cls)]
    count = len(fields)

    def decode_dataclass(wire: Any, path: str) -> Any:
        if not isinstance(wire, list) or len(wire) != count:
            raise RecordDecodeError(f"{path}: {cls.__name__} needs {count} fields")
        return cls(
            **{
                name: decode(v, path + "." + name)
                for (name, decode), v in zip(fields, wire, strict=True)
            }
        )

    return decode_dataclass


def _decode_partition_map(wire: Any, path: str) -> dict[str, tuple[int, ...]]:
    if not isinstance(wire, dict):
        raise RecordDecodeError(f"{path}: expected a map")
    out = {}
    for k, v in wire.items():
        if not isinstance(k, str) or not isinstance(v, list):
            raise RecordDecodeError(f"{path}: expected {{topic_id: [partitions]}}")
        if any(type(p) is not int for p in v):
            raise RecordDecodeError(f"{path}[{k}]: expected an int")
        out[k] = tuple(v)
    return out
