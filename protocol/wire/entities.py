"""Between kio's typed message entities and plain values: one rule for every Kafka message.

kio (the codec) models each version of each Kafka message as its own frozen dataclass whose
fields carry Kafka's primitive types (``i32``, ``ErrorCode``, ``timedelta`` for ``*_ms``
fields, ``UUID`` for ids). The translation code should not care which version a client spoke,
so it works on *plain* values instead: dicts keyed by kio's field names, ints for times in
milliseconds and for error codes, ``UUID`` for ids, lists for arrays. ``plain`` turns any
entity into that form; ``build`` makes an entity of a given version from a plain dict, taking
only the fields that version has and a zero for any it leaves out, exactly as Kafka's
generated messages ignore fields a version lacks. A reply is therefore written once, as a
superset, and comes out right in every version.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
import uuid
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
# Kafka's numbers kio has no name for (Cohort's own 10001+ codes) travel as this one.
_FALLBACK_ERROR = ErrorCode.unknown_server_error


# Values that are already plain, by exact type: returned as they are (the hot path of decoding
# every request: most of a request's fields are these).
_PLAIN_TYPES = frozenset({int, str, bool, bytes, float, type(None)})


@cache
def _entity_fields(t: type) -> tuple[str, ...] | None:
    """The field names of dataclass type ``t`` (None if ``t`` is not one), read once a type."""
    return tuple(f.name for f in dataclasses.fields(t)) if dataclasses.is_dataclass(t) else None


def plain(value: Any) -> Any:
    """An entity (or a tuple of them, or a primitive) as plain Python values."""
    t = type(value)
    if t in _PLAIN_TYPES:
        return value
    names = _entity_fields(t)
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
    if isinstance(value, tuple):
        return [plain(v) for v in value]
    if isinstance(value, ErrorCode):
        return int(value.value)
    if isinstance(value, datetime.timedelta):
        return value // datetime.timedelta(milliseconds=1)
    if isinstance(value, datetime.datetime):
        return int((value - _EPOCH) // datetime.timedelta(milliseconds=1))
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bytes):
        return bytes(value)
    return value


def build(entity_type: type, data: dict[str, Any] | None) -> Any:
    """An entity of ``entity_type`` from ``data``: fields it lacks get their default or a
    zero; fields the type lacks are ignored."""
    data = data or {}
    kwargs = {}
    for f in _fields(entity_type):
        if f.name in data:
            kwargs[f.name] = _coerce(f, data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kwargs[f.name] = _coerce(f, None)
    return entity_type(**kwargs)


@cache
def _fields(entity_type: type) -> tuple[dataclasses.Field, ...]:
    return dataclasses.fields(entity_type)


def _coerce(f: dataclasses.Field, value: Any) -> Any:
    kafka_type = f.metadata.get("kafka_type")
    hint = f.type if not isinstance(f.type, str) else None
    nested, nullable, is_array = _shape(hint)
    if value is None and (nullable or kafka_type in ("records",)):
        return None
    if is_array:
        items = value or []
        if nested is not None:
            return _built_each(nested, items)
        return tuple(_scalar(kafka_type, item, False) for item in items)
    if nested is not None:
        return build(nested, value or {})
    return _scalar(kafka_type, value, nullable)


def _built_each(nested: type, items: list) -> tuple:
    """Each item built, an item repeated (the same object again: a reply naming one group for
    each of 100,000 repeated names) built once and repeated. The items are held while built:
    a sequence that makes its items on demand (``fast_metadata.UniformPartitions``) frees
    each one after use, and a freed item's id may come back for the next."""
    built: dict[int, Any] = {}
    out = []
    for item in list(items):
        entity = built.get(id(item))
        if entity is None:
            entity = built[id(item)] = build(nested, item)
        out.append(entity)
    return tuple(out)


def _scalar(kafka_type: str | None, value: Any, nullable: bool) -> Any:
    if value is None and nullable:
        return None
    if kafka_type == "error_code":
        return _error_code(value or 0)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=int(value or 0))
    if kafka_type == "datetime_i64":
        return None if value is None or value < 0 else _EPOCH + datetime.timedelta(
            milliseconds=int(value))
    if kafka_type == "uuid":
        return value if isinstance(value, uuid.UUID) else uuid.UUID(int=0)
    if kafka_type == "string":
        return "" if value is None else str(value)
    if kafka_type in ("bytes", "records"):
        return b"" if value is None else bytes(value)
    if kafka_type == "bool":
        return bool(value)
    if kafka_type == "float64":
        return float(value or 0.0)
    return int(value or 0)


def _error_code(code: int) -> ErrorCode:
    try:
        return ErrorCode(int(code))
    except ValueError:
        return _FALLBACK_ERROR


@cache
def _shape_of(hint: Any) -> tuple[type | None, bool, bool]:
    nullable = False
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(hint))
        hint = args[0] if len(args) == 1 else hint
        origin = typing.get_origin(hint)
    is_array = origin is tuple
    inner = typing.get_args(hint)[0] if is_array else hint
    nested = inner if isinstance(inner, type) and dataclasses.is_dataclass(inner) else None
    return nested, nullable, is_array


def _shape(hint: Any) -> tuple[type | None, bool, bool]:
    """(nested entity type or None, nullable, array) of a field's annotation."""
    if hint is None:
        return None, True, False
    try:
        return _shape_of(hint)
    except TypeError:  # an unhashable annotation: work it out uncached
        return _shape_of.__wrapped__(hint)
