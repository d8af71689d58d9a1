"""Hypothesis strategies for any kio message schema: random plain values of its shape."""

from __future__ import annotations

import dataclasses

from hypothesis import strategies as st
from kio.schema.errors import ErrorCode

from protocol.wire.entities import _shape

_INTS = {"int8": 8, "int16": 16, "int32": 32, "int64": 64}
_SCALARS = {
    "uint16": st.integers(0, 2**16 - 1),
    "timedelta_i32": st.integers(-(2**31), 2**31 - 1),
    "timedelta_i64": st.integers(-(2**40), 2**40),
    "error_code": st.sampled_from(sorted(e.value for e in ErrorCode)),
    "string": st.text(max_size=12),
    "bytes": st.binary(max_size=12),
    "records": st.binary(max_size=12),
    "bool": st.booleans(),
    "uuid": st.uuids(),
    "float64": st.floats(allow_nan=False, allow_infinity=False),
    "datetime_i64": st.integers(0, 2**40),
}


def plain_values(entity_type: type, depth: int = 0) -> st.SearchStrategy[dict]:
    return st.fixed_dictionaries(
        {f.name: _field(f, depth) for f in dataclasses.fields(entity_type)})


def _field(f: dataclasses.Field, depth: int) -> st.SearchStrategy:
    nested, nullable, is_array = _shape(f.type)
    kafka_type = f.metadata.get("kafka_type")
    if nested is not None:
        item = plain_values(nested, depth + 1)
    elif kafka_type in _INTS:
        bits = _INTS[kafka_type]
        item = st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    else:
        item = _SCALARS[kafka_type]
    if is_array:
        item = st.lists(item, max_size=2 if depth < 2 else 0)
    return st.none() | item if nullable else item
