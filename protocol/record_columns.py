"""Many record values of one type decoded column by column: the load path's converters.

``record_fields.decoder`` checks and converts one value at a time, a few Python operations per
field. A restarted partition decodes tens of thousands of values of the same few types, so
here the values of a chunk (unpacked by msgpack with ``use_list=False``: arrays already arrive
as the tuples the records hold) are transposed into columns and each column is checked with
C-level passes (``set(map(type, column))``), nested structures included; then the instances are
filled directly, as the per-value converters fill them.

A chunk with anything unexpected anywhere is not decoded here (``None``): the caller decodes it
value by value with ``record_fields``, which either accepts it (the same values) or raises
the error naming the field. So this is only ever a faster way to the same result.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import types
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin

_NONE = type(None)
_SCALARS = (int, str, bytes, bool)
_chain = itertools.chain.from_iterable

# A column check: the column (a tuple of wire values) -> the decoded column, or None.
Column = Callable[[tuple], "tuple | list | None"]


@functools.cache
def columns_decoder(cls: type) -> Callable[[list, int], list | None]:
    """``decode(rows, version) -> instances | None`` for a record dataclass.

    ``rows`` are the values' wire tuples; with ``version`` >= 0 each row starts with the value
    version, which must be that int. None: some row is not as expected (see the module doc).
    """
    hints = typing.get_type_hints(cls)
    names = tuple(f.name for f in dataclasses.fields(cls))
    checks = [_column(hints[name]) for name in names]
    width = len(names)
    new = object.__new__
    builders = (_builder(cls, names, skip=0), _builder(cls, names, skip=1))

    def decode(rows: list, version: int = -1) -> list | None:
        if not rows:
            return []
        skip = 1 if version >= 0 else 0
        if set(map(type, rows)) != {tuple} or set(map(len, rows)) != {width + skip}:
            return None
        cols = list(zip(*rows, strict=True))
        if skip:
            versions = cols.pop(0)
            if set(versions) != {version} or set(map(type, versions)) != {int}:
                return None
        if not width:
            return [new(cls) for _ in rows]
        converted = False
        for i, check in enumerate(checks):
            col = check(cols[i])
            if col is None:
                return None
            if col is not cols[i]:
                cols[i], converted = col, True
        if converted:  # a nested value was decoded: the instances take the new columns
            return builders[0](zip(*cols, strict=True))
        return builders[skip](rows)  # the wire tuples hold the fields as they are

    return decode


def _builder(cls: type, names: tuple[str, ...], skip: int) -> Callable[[Any], list]:
    """``build(rows) -> instances``, generated for ``cls`` as ``record_fields`` generates its
    converters: each new instance's ``__dict__`` filled by one unpacking assignment (after
    ``skip`` leading items of each row: the value version)."""
    targets = ", ".join(["_"] * skip + [f"d[{name!r}]" for name in names])
    source = "\n".join([
        "def build(rows):",
        "    out = []",
        "    append = out.append",
        "    for row in rows:",
        "        obj = new(cls)",
        "        d = obj.__dict__",
        f"        {targets}, = row",
        "        append(obj)",
        "    return out",
    ])
    env: dict[str, Any] = {"new": object.__new__, "cls": cls}
    exec(source, env)  # the source is built above from the class's own field names
    return env["build"]


def _column(hint: Any) -> Column:
    """The check (and conversion) of one field's column, for its annotation."""
    if get_origin(hint) in (typing.Union, types.UnionType):
        (inner,) = [a for a in get_args(hint) if a is not _NONE]
        if inner in _SCALARS:
            return _types_within(frozenset({inner, _NONE}))
        return _optional(_column(inner))
    origin = get_origin(hint)
    if origin is dict:
        return _partition_maps
    if origin is tuple:
        item = get_args(hint)[0]
        if item in _SCALARS:
            return _scalar_tuples(item)
        return _nested_tuples(_column(item))
    if dataclasses.is_dataclass(hint):
        nested = columns_decoder(hint)
        return lambda col: nested(list(col))
    if hint in _SCALARS:
        return _types_within(frozenset({hint}))
    return lambda col: None  # no column check for this annotation: decoded one by one


def _types_within(allowed: frozenset) -> Column:
    return lambda col: col if set(map(type, col)) <= allowed else None


def _partition_maps(col: tuple) -> tuple | None:
    """``{topic_id: (partitions...)}`` maps: str keys, tuples of ints."""
    if set(map(type, col)) != {dict}:
        return None
    values = list(_chain(map(dict.values, col)))
    if (
        set(map(type, _chain(col))) <= {str}
        and set(map(type, values)) <= {tuple}
        and set(map(type, _chain(values))) <= {int}
    ):
        return col
    return None


def _scalar_tuples(item: type) -> Column:
    def check(col: tuple) -> tuple | None:
        if set(map(type, col)) == {tuple} and set(map(type, _chain(col))) <= {item}:
            return col
        return None

    return check


def _nested_tuples(item: Column) -> Column:
    """Tuples of nested values: their items decoded as one column, then regrouped."""

    def check(col: tuple) -> list | tuple | None:
        if set(map(type, col)) != {tuple}:
            return None
        items = list(_chain(col))
        if not items:
            return col
        decoded = item(tuple(items))
        if decoded is None:
            return None
        it = iter(decoded)
        return [tuple(itertools.islice(it, len(t))) for t in col]

    return check


def _optional(inner: Column) -> Column:
    def check(col: tuple) -> list | tuple | None:
        present = [v for v in col if v is not None]
        if not present:
            return col
        decoded = inner(tuple(present))
        if decoded is None:
            return None
        it = iter(decoded)
        return [None if v is None else next(it) for v in col]

    return check
