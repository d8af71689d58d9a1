"""Record dataclasses to msgpack-ready lists and back, every field checked on the way in.

A record's key or value travels as the list of its fields in declaration order; a partition
map as ``{topic_id: [partitions]}`` with sorted keys and partitions, so equal state is equal
bytes. Decoding checks each field against its annotation and raises ``RecordDecodeError``
naming the field (``value.assigned_partitions[t]: expected an int``) for anything else.

Why the converters are generated (as ``dataclasses`` generates ``__init__``): a restarted
partition decodes every record that survives compaction before it serves again, so the
per-field cost is failover time. One compiled function per class checks its fields inline and
fills the new instance's ``__dict__`` directly, several times faster than walking annotations
or calling the frozen dataclass's ``__init__`` (which sets each field through
``object.__setattr__``); the instance is the same (equal, same hash, same repr).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin


class RecordDecodeError(ValueError):
    """The bytes are not a record this version of Cohort wrote."""


_SCALARS = (int, str, bytes, bool)


def _expected(hint: type) -> str:
    return "an int" if hint is int else hint.__name__


def _optional_inner(hint: Any) -> Any | None:
    """``X`` for ``X | None``; None for any other hint."""
    if get_origin(hint) in (typing.Union, types.UnionType):
        (inner,) = [a for a in get_args(hint) if a is not type(None)]
        return inner
    return None


# ------------------------------------------------------------------------------ decoding


@functools.cache
def decoder(hint: Any) -> Callable[[Any, str], Any]:
    """A checking converter for ``hint``: ``decode(wire, path) -> value``, built once per type.

    ``path`` names the field in error messages; it is only extended on the way into a nested
    structure, so decoding a well-formed record builds no strings.
    """
    inner = _optional_inner(hint)
    if inner is not None:
        inner_decode = decoder(inner)
        return lambda wire, path: None if wire is None else inner_decode(wire, path)
    origin = get_origin(hint)
    if origin is tuple:
        return _tuple_decoder(decoder(get_args(hint)[0]))
    if origin is dict:
        return decode_partition_map
    if dataclasses.is_dataclass(hint):
        return _compile_dataclass_decoder(hint)
    if hint in _SCALARS:
        expected = _expected(hint)

        def decode_scalar(wire: Any, path: str) -> Any:
            if type(wire) is not hint:
                raise RecordDecodeError(f"{path}: expected {expected}")
            return wire

        return decode_scalar
    return lambda wire, path: wire


def _tuple_decoder(item: Callable[[Any, str], Any]) -> Callable[[Any, str], tuple]:
    def decode_tuple(wire: Any, path: str) -> tuple:
        if not isinstance(wire, list):
            raise RecordDecodeError(f"{path}: expected an array")
        item_path = f"{path}[]"
        return tuple([item(v, item_path) for v in wire])

    return decode_tuple


def decode_partition_map(wire: Any, path: str) -> dict[str, tuple[int, ...]]:
    if not isinstance(wire, dict):
        raise RecordDecodeError(f"{path}: expected a map")
    out = {}
    for k, v in wire.items():
        if type(k) is not str or not isinstance(v, list):
            raise RecordDecodeError(f"{path}: expected {{topic_id: [partitions]}}")
        for p in v:
            if type(p) is not int:
                raise RecordDecodeError(f"{path}[{k}]: expected an int")
        out[k] = tuple(v)
    return out


def _compile_dataclass_decoder(cls: type) -> Callable[[Any, str], Any]:
    """Generate ``decode(wire, path)`` for one record dataclass (see the module docstring)."""
    assert "__slots__" not in cls.__dict__ and not hasattr(cls, "__post_init__"), cls
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    names = [f.name for f in fields]
    count = len(names)
    # Fields added to the class after records were written without them: a shorter record
    # takes their defaults (``ADDED_FIELDS``: how many of the last fields are such).
    added = getattr(cls, "ADDED_FIELDS", 0)
    env: dict[str, Any] = {"RecordDecodeError": RecordDecodeError, "cls": cls}
    env["new"] = object.__new__
    later = fields[count - added:]
    assert all(f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
               for f in later), cls
    # Their defaults as a record holds them, so the shorter record decodes as a whole one.
    env["LATER"] = [to_wire(f.default if f.default is not dataclasses.MISSING
                            else f.default_factory()) for f in later]
    counts = f"len(wire) != {count}" if not added else \
        f"not {count - added} <= len(wire) <= {count}"
    needs = f"{count}" if not added else f"{count - added} to {count}"
    body = [
        "def decode(wire, path):",
        f"    if type(wire) is not list or {counts}:",
        f"        raise RecordDecodeError(f'{{path}}: {cls.__name__} needs {needs} fields')",
    ]
    if added:
        body += [f"    if len(wire) < {count}:",
                 f"        wire = [*wire, *LATER[len(wire) - {count - added}:]]"]
    if count:
        body.append(f"    {''.join(f'v{i}, ' for i in range(count))}= wire")
    for i, name in enumerate(names):
        body += _field_check(i, name, hints[name], env)
    body += ["    obj = new(cls)", "    d = obj.__dict__"]
    body += [f"    d[{name!r}] = v{i}" for i, name in enumerate(names)]
    body.append("    return obj")
    exec("\n".join(body), env)  # the source is built above from the class's own fields
    return env["decode"]


def _field_check(i: int, name: str, hint: Any, env: dict[str, Any]) -> list[str]:
    """The lines that check (and, for nested structures, convert) field ``v{i}``."""
    inner = _optional_inner(hint)
    target = inner if inner is not None else hint
    if target in _SCALARS:
        env[f"T{i}"] = target
        fail = f"raise RecordDecodeError(path + '.{name}: expected {_expected(target)}')"
        test = f"type(v{i}) is not T{i}"
        if inner is not None:
            test = f"v{i} is not None and {test}"
        return [f"    if {test}:", f"        {fail}"]
    env[f"D{i}"] = decoder(target)
    convert = f"v{i} = D{i}(v{i}, path + '.{name}')"
    if inner is not None:
        return [f"    if v{i} is not None:", f"        {convert}"]
    return [f"    {convert}"]


# ------------------------------------------------------------------------------ encoding


@functools.cache
def encoder(cls: type) -> Callable[[Any], list]:
    """``encode(obj) -> [field wire values...]`` for one record dataclass, generated likewise."""
    hints = typing.get_type_hints(cls)
    env: dict[str, Any] = {"to_wire": to_wire}
    parts = []
    for f in dataclasses.fields(cls):
        target = _optional_inner(hints[f.name]) or hints[f.name]
        parts.append(f"obj.{f.name}" if target in _SCALARS else f"to_wire(obj.{f.name})")
    exec(f"def encode(obj):\n    return [{', '.join(parts)}]", env)
    return env["encode"]


def to_wire(obj: Any) -> Any:
    """Any field value as msgpack takes it: dataclasses and tuples as lists, partition maps
    sorted (topics and partitions), so equal state always encodes to equal bytes."""
    if dataclasses.is_dataclass(obj):
        return encoder(type(obj))(obj)
    if isinstance(obj, tuple):
        return [to_wire(v) for v in obj]
    if isinstance(obj, dict):
        return {k: sorted(v) for k, v in sorted(obj.items())}
    return obj
