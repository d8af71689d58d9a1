"""The record codec: every record survives a round trip, bytes are canonical, garbage is refused.

Records are the truth (DESIGN.md): a partition rebuilds its groups by decoding its log, so the
codec must give back exactly what it was given, write equal state as equal bytes, and answer
anything else with ``RecordDecodeError``, never with a stray exception from deep inside.
"""

from __future__ import annotations

import dataclasses
import random
import types
import typing
from typing import Any, get_args, get_origin

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol.codec import (
    FORMAT_VERSION,
    LEGACY_FORMAT_VERSION,
    VALUE_VERSION,
    RecordDecodeError,
    decode_record,
    encode_record,
    peek_key,
)
from protocol.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
)
from protocol.group_types import RECORD_SCHEMAS
from protocol.records import Record

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
INT64_EXTREMES = st.sampled_from([-(2**63), -(2**31) - 1, 2**31, 2**63 - 1])

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------------ strategies


def _strategy(hint: Any, ints: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    """A strategy for one annotated record field, derived from the annotation alone."""
    origin = get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in get_args(hint) if a is not type(None)]
        return st.none() | _strategy(inner, ints)
    if origin is tuple:
        return st.lists(_strategy(get_args(hint)[0], ints), max_size=3).map(tuple)
    if origin is dict:  # PartitionMap: the codec writes partitions sorted, so generate them so
        partitions = st.lists(st.integers(0, 2**31 - 1), unique=True, max_size=5)
        return st.dictionaries(
            st.text(max_size=8), partitions.map(lambda ps: tuple(sorted(ps))), max_size=3
        )
    if dataclasses.is_dataclass(hint):
        return _dataclass_strategy(hint, ints)
    simple = {int: ints, str: st.text(max_size=12), bytes: st.binary(max_size=12)}
    return simple[hint]


def _dataclass_strategy(cls: type, ints: st.SearchStrategy[int]) -> st.SearchStrategy[Any]:
    hints = typing.get_type_hints(cls)
    fields = {f.name: _strategy(hints[f.name], ints) for f in dataclasses.fields(cls)}
    return st.builds(cls, **fields)


def records(ints: st.SearchStrategy[int] = INT32) -> st.SearchStrategy[Record]:
    """Any record of any registered type: a value or a tombstone."""
    per_type = [
        st.builds(
            Record,
            _dataclass_strategy(key_cls, ints),
            st.none() | _dataclass_strategy(value_cls, ints),
        )
        for key_cls, value_cls in RECORD_SCHEMAS.items()
    ]
    return st.one_of(per_type)


def _scramble(obj: Any, rnd: random.Random) -> Any:
    """The same state with every partition list and topic map in a random order."""
    if isinstance(obj, dict):
        items = list(obj.items())
        rnd.shuffle(items)
        return {k: tuple(rnd.sample(v, len(v))) for k, v in items}
    if isinstance(obj, tuple):
        return tuple(_scramble(v, rnd) for v in obj)
    if dataclasses.is_dataclass(obj):
        changes = {f.name: _scramble(getattr(obj, f.name), rnd) for f in dataclasses.fields(obj)}
        return dataclasses.replace(obj, **changes)
    return obj


def _raw(
    key_type: Any, key_fields: Any, value_fields: Any, value_version: Any = VALUE_VERSION
) -> bytes:
    """Hand-made bytes in the codec's layout (format 1), for shapes ``encode_record`` would
    never write: the key array, then the value as a blob (nil for a tombstone)."""
    key = [key_type, *key_fields] if isinstance(key_fields, list) else [key_type, key_fields]
    blob = (
        None
        if value_fields is None
        else msgpack.packb([value_version, *value_fields] if isinstance(value_fields, list)
                           else [value_version, value_fields])
    )
    return bytes([FORMAT_VERSION]) + msgpack.packb(key) + msgpack.packb(blob, use_bin_type=True)


def _raw_v0(
    key_type: Any, key_fields: Any, value_fields: Any, value_version: Any = VALUE_VERSION
) -> bytes:
    """Hand-made bytes in the legacy layout (format 0), which the codec still reads."""
    payload = [key_type, key_fields, value_version, value_fields]
    return bytes([LEGACY_FORMAT_VERSION]) + msgpack.packb(payload, use_bin_type=True)


def _unpacked(data: bytes) -> list:
    """A format-1 record as one msgpack structure: [key array, value array or nil]."""
    key, blob = msgpack.unpackb(b"\x92" + data[1:], raw=False)
    return [key, None if blob is None else msgpack.unpackb(blob, raw=False)]


def _packed(payload: list) -> bytes:
    key, value = payload
    blob = None if value is None else msgpack.packb(value)
    return bytes([FORMAT_VERSION]) + msgpack.packb(key) + msgpack.packb(blob, use_bin_type=True)


def _decodes_or_refuses(data: object) -> Record | None:
    """Decode ``data``; the only exception allowed out is RecordDecodeError (a ValueError)."""
    try:
        record = decode_record(data)  # type: ignore[arg-type]
    except RecordDecodeError as e:
        assert str(e), "a decode error says what is wrong"
        return None
    assert isinstance(record, Record)
    assert type(record.key) in RECORD_SCHEMAS
    assert record.value is None or type(record.value) is RECORD_SCHEMAS[type(record.key)]
    return record


def _reencodes_stably(record: Record) -> None:
    """Whatever decodes is a record the codec can write again, and it then stays put."""
    data = encode_record(record)
    again = decode_record(data)
    assert encode_record(again) == data


# ------------------------------------------------------------------------ round trip


def test_every_record_type_has_a_strategy_and_a_distinct_type_number():
    assert len({k.TYPE for k in RECORD_SCHEMAS}) == len(RECORD_SCHEMAS)
    for key_cls, value_cls in RECORD_SCHEMAS.items():
        _dataclass_strategy(key_cls, INT32)
        _dataclass_strategy(value_cls, INT32)


@FAST
@given(records())
def test_a_record_decodes_to_exactly_what_was_encoded(record):
    data = encode_record(record)
    assert data[0] == FORMAT_VERSION
    assert decode_record(data) == record


@FAST
@given(records(ints=INT64 | INT64_EXTREMES))
def test_int_fields_round_trip_across_the_whole_int64_range(record):
    assert decode_record(encode_record(record)) == record


@pytest.mark.parametrize("key_cls", list(RECORD_SCHEMAS), ids=lambda c: c.__name__)
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_each_record_type_round_trips_as_value_and_as_tombstone(key_cls, data):
    key = data.draw(_dataclass_strategy(key_cls, INT32))
    value = data.draw(_dataclass_strategy(RECORD_SCHEMAS[key_cls], INT32))
    for record in (Record(key, value), Record(key, None)):
        decoded = decode_record(encode_record(record))
        assert decoded == record
        assert type(decoded.key) is key_cls
        assert decoded.is_tombstone == (record.value is None)


def test_defaults_and_int64_extremes_in_named_fields_survive():
    big, small = 2**63 - 1, -(2**63)
    cases = [
        Record(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(big)),
        Record(ConsumerGroupMetadataKey(""), ConsumerGroupMetadataValue(small)),
        Record(ConsumerGroupMemberMetadataKey("g", "m"), ConsumerGroupMemberMetadataValue()),
        Record(
            ConsumerGroupCurrentMemberAssignmentKey("g", "m"),
            ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=big,
                previous_member_epoch=small,
                state=0,
                assigned_partitions={"t": (0, 2**31 - 1)},
            ),
        ),
    ]
    for record in cases:
        assert decode_record(encode_record(record)) == record


# ---------------------------------------------------------------------- determinism


@FAST
@given(records())
def test_encoding_is_deterministic(record):
    clone = Record(
        dataclasses.replace(record.key),
        None if record.value is None else dataclasses.replace(record.value),
    )
    assert encode_record(record) == encode_record(record) == encode_record(clone)


@FAST
@given(records(), st.randoms(use_true_random=False))
def test_partition_and_topic_order_do_not_change_the_bytes(record, rnd):
    scrambled = Record(record.key, _scramble(record.value, rnd))
    assert encode_record(scrambled) == encode_record(record)
    assert decode_record(encode_record(scrambled)) == record


def test_a_reordered_assignment_encodes_like_the_sorted_one():
    key = ConsumerGroupTargetAssignmentMemberKey("g", "m")
    ordered = ConsumerGroupTargetAssignmentMemberValue({"a": (0, 1, 5), "b": (2,)})
    shuffled = ConsumerGroupTargetAssignmentMemberValue({"b": (2,), "a": (5, 0, 1)})
    assert encode_record(Record(key, shuffled)) == encode_record(Record(key, ordered))


# ----------------------------------------------------------------------------- fuzz


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_decode_or_raise_record_decode_error(data):
    record = _decodes_or_refuses(data)
    if record is not None:
        _reencodes_stably(record)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120))
def test_arbitrary_msgpack_after_the_version_byte_decodes_or_raises_record_decode_error(tail):
    record = _decodes_or_refuses(bytes([FORMAT_VERSION]) + tail)
    if record is not None:
        _reencodes_stably(record)


msgpack_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats()
    | st.text(max_size=8)
    | st.binary(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(sorted(k.TYPE for k in RECORD_SCHEMAS)) | msgpack_values,
    msgpack_values,
    msgpack_values,
    st.just(VALUE_VERSION) | msgpack_values,
)
def test_well_formed_msgpack_of_the_wrong_shape_raises_record_decode_error(
    key_type, key_fields, value_fields, value_version
):
    record = _decodes_or_refuses(_raw(key_type, key_fields, value_fields, value_version))
    if record is not None:
        _reencodes_stably(record)


def _slots(node: Any, path: tuple = ()) -> list[tuple]:
    """Every position inside a decoded msgpack payload: list indices and map values."""
    out = [path]
    if isinstance(node, list):
        for i, v in enumerate(node):
            out += _slots(v, (*path, i))
    elif isinstance(node, dict):
        for k, v in node.items():
            out += _slots(v, (*path, k))
    return out


def _replaced(node: Any, path: tuple, new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = list(node) if isinstance(node, list) else dict(node)
    copy[head] = _replaced(node[head], rest, new)
    return copy


@settings(max_examples=200, deadline=None)
@given(records(), st.data())
def test_a_valid_record_with_one_field_replaced_by_any_msgpack_value_decodes_or_is_refused(
    record, data
):
    payload = _unpacked(encode_record(record))
    path = data.draw(st.sampled_from(_slots(payload)), label="path")
    new = data.draw(msgpack_values, label="replacement")
    replaced = _replaced(payload, path, new)
    if not isinstance(replaced, list) or len(replaced) != 2:
        mutated = bytes([FORMAT_VERSION]) + msgpack.packb(replaced)
    else:
        mutated = _packed(replaced)
    decoded = _decodes_or_refuses(mutated)
    if decoded is not None:
        _reencodes_stably(decoded)


@settings(max_examples=100, deadline=None)
@given(st.one_of(st.none(), st.integers(), st.text(), st.lists(st.integers(0, 255))))
def test_something_that_is_not_bytes_raises_record_decode_error(data):
    with pytest.raises(RecordDecodeError, match="expected bytes"):
        decode_record(data)


@FAST
@given(records(), st.data())
def test_a_valid_encoding_with_one_byte_flipped_decodes_or_raises_record_decode_error(record, data):
    encoded = bytearray(encode_record(record))
    at = data.draw(st.integers(0, len(encoded) - 1), label="offset")
    encoded[at] ^= data.draw(st.integers(1, 255), label="xor")
    decoded = _decodes_or_refuses(bytes(encoded))
    if decoded is not None:
        _reencodes_stably(decoded)


@settings(max_examples=40, deadline=None)
@given(records())
def test_every_truncation_of_a_valid_encoding_raises_record_decode_error(record):
    # msgpack is prefix-free: no proper prefix of one object is a whole object, so a truncated
    # record can never pass for a shorter one.
    encoded = encode_record(record)
    for end in range(len(encoded)):
        with pytest.raises(RecordDecodeError):
            decode_record(encoded[:end])


@FAST
@given(records(), st.binary(min_size=1, max_size=16))
def test_a_valid_encoding_with_trailing_junk_raises_record_decode_error(record, junk):
    with pytest.raises(RecordDecodeError, match="not msgpack"):
        decode_record(encode_record(record) + junk)


def test_memoryview_and_bytearray_inputs_decode_like_bytes():
    record = Record(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(7))
    data = encode_record(record)
    assert decode_record(bytearray(data)) == decode_record(memoryview(data)) == record


# ------------------------------------------------------------------ named refusals

_GOOD_KEY = ["g"]
_GOOD_VALUE = [7]
_META = ConsumerGroupMetadataKey.TYPE
_CURRENT = ConsumerGroupCurrentMemberAssignmentKey.TYPE
_TARGET = ConsumerGroupTargetAssignmentMemberKey.TYPE


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        pytest.param(b"", "empty record", id="empty"),
        pytest.param(
            bytes([FORMAT_VERSION + 1]) + _raw(_META, _GOOD_KEY, _GOOD_VALUE)[1:],
            f"unknown record format version {FORMAT_VERSION + 1}",
            id="format-version",
        ),
        pytest.param(b"\xff", "unknown record format version 255", id="format-version-255"),
        pytest.param(bytes([FORMAT_VERSION]), "not msgpack", id="no-payload"),
        pytest.param(
            bytes([FORMAT_VERSION]) + msgpack.packb([_META, "g"]), "not msgpack", id="no-value"
        ),
        pytest.param(
            bytes([FORMAT_VERSION]) + msgpack.packb({"a": 1}) + msgpack.packb(None),
            "a record key is an array",
            id="key-is-a-map",
        ),
        pytest.param(
            bytes([FORMAT_VERSION]) + msgpack.packb([]) + msgpack.packb(None),
            "a record key is an array",
            id="key-is-empty",
        ),
        pytest.param(
            bytes([FORMAT_VERSION]) + msgpack.packb([_META, "g"]) + msgpack.packb([0, 7]),
            "a record's value is a msgpack blob or nil",
            id="value-not-a-blob",
        ),
        pytest.param(
            bytes([FORMAT_VERSION]) + msgpack.packb([_META, "g"]) + msgpack.packb(b"\xc1"),
            "value is not msgpack",
            id="blob-not-msgpack",
        ),
        pytest.param(
            bytes([FORMAT_VERSION]) + msgpack.packb([_META, "g"]) + msgpack.packb(b"\x07"),
            "value: a value is an array",
            id="blob-not-an-array",
        ),
        pytest.param(
            bytes([LEGACY_FORMAT_VERSION]) + msgpack.packb({"a": 1}),
            "4-element array",
            id="legacy-not-array",
        ),
        pytest.param(
            bytes([LEGACY_FORMAT_VERSION]) + msgpack.packb([_META, _GOOD_KEY, 0]),
            "4-element array",
            id="legacy-three-elements",
        ),
        pytest.param(
            _raw_v0(_META, _GOOD_KEY, _GOOD_VALUE, value_version=1),
            "unknown value version 1",
            id="legacy-value-version",
        ),
        pytest.param(
            _raw_v0(_META, [7], _GOOD_VALUE), "key.group_id: expected str", id="legacy-key-int"
        ),
        pytest.param(
            _raw_v0(_META, _GOOD_KEY, ["7"]), "value.epoch: expected an int", id="legacy-str"
        ),
        pytest.param(_raw(99, _GOOD_KEY, _GOOD_VALUE), "unknown record type 99", id="type-99"),
        pytest.param(_raw(-1, _GOOD_KEY, _GOOD_VALUE), "unknown record type -1", id="type-neg"),
        pytest.param(_raw("3", _GOOD_KEY, _GOOD_VALUE), "unknown record type '3'", id="type-str"),
        pytest.param(
            _raw(True, _GOOD_KEY, _GOOD_VALUE), "unknown record type True", id="type-bool"
        ),
        pytest.param(
            _raw(_META, _GOOD_KEY, _GOOD_VALUE, value_version=1),
            "unknown value version 1",
            id="value-version",
        ),
        pytest.param(
            _raw(_META, _GOOD_KEY, _GOOD_VALUE, value_version=0.0),
            "unknown value version 0.0",
            id="value-version-float",
        ),
        pytest.param(
            _raw(_META, ["g", "extra"], _GOOD_VALUE),
            "key: ConsumerGroupMetadataKey needs 1 fields",
            id="key-too-many-fields",
        ),
        pytest.param(
            _raw(_META, [], _GOOD_VALUE),
            "key: ConsumerGroupMetadataKey needs 1 fields",
            id="key-no-fields",
        ),
        pytest.param(
            _raw(_META, _GOOD_KEY, [7, 8]),
            "value: ConsumerGroupMetadataValue needs 1 fields",
            id="value-too-many-fields",
        ),
        pytest.param(
            _raw_v0(_META, "g", _GOOD_VALUE),
            "key: ConsumerGroupMetadataKey needs 1 fields",
            id="legacy-key-not-array",
        ),
        pytest.param(_raw(_META, [7], _GOOD_VALUE), "key.group_id: expected str", id="key-int"),
        pytest.param(
            _raw(_META, _GOOD_KEY, ["7"]), "value.epoch: expected an int", id="str-for-int"
        ),
        pytest.param(
            _raw(_META, _GOOD_KEY, [7.0]), "value.epoch: expected an int", id="float-for-int"
        ),
        pytest.param(
            _raw(_META, _GOOD_KEY, [True]), "value.epoch: expected an int", id="bool-for-int"
        ),
        pytest.param(
            _raw(_META, _GOOD_KEY, [None]), "value.epoch: expected an int", id="nil-for-int"
        ),
        pytest.param(
            _raw(_TARGET, ["g", "m"], [{"t": [0]}, 0, 0, "not-bytes"]),
            "value.metadata_bytes: expected bytes",
            id="str-for-bytes",
        ),
        pytest.param(
            _raw(_TARGET, ["g", "m"], [[["t", [0]]], 0, 0, b""]),
            "value.partitions: expected a map",
            id="array-for-map",
        ),
        pytest.param(
            _raw(_TARGET, ["g", "m"], [{"t": 0}, 0, 0, b""]),
            "value.partitions: expected {topic_id: [partitions]}",
            id="int-for-partition-list",
        ),
        pytest.param(
            _raw(_TARGET, ["g", "m"], [{"t": ["0"]}, 0, 0, b""]),
            "value.partitions[t]: expected an int",
            id="str-partition",
        ),
        pytest.param(
            _raw(_CURRENT, ["g", "m"], [1, 0, 0, {}, {"t": [1.5]}, 0, 0, b""]),
            "value.partitions_pending_revocation[t]: expected an int",
            id="float-partition",
        ),
        pytest.param(
            _raw(
                ConsumerGroupMemberMetadataKey.TYPE,
                ["g", "m"],
                [None, None, "", "", "foo", None, None, [], -1, None],
            ),
            "value.subscribed_topic_names: expected an array",
            id="str-for-tuple",
        ),
        pytest.param(
            _raw(
                ConsumerGroupMemberMetadataKey.TYPE,
                ["g", "m"],
                [None, None, "", "", [], None, None, [["a", 0, 0, 0, 0]], -1, None],
            ),
            "value.client_assignors[]: ClientAssignorEntry needs 6 fields",
            id="nested-field-count",
        ),
        pytest.param(
            _raw(
                ConsumerGroupMemberMetadataKey.TYPE,
                ["g", "m"],
                [7, None, "", "", [], None, None, [], -1, None],
            ),
            "value.instance_id: expected str",
            id="int-for-optional-str",
        ),
    ],
)
def test_a_malformed_record_is_refused_with_a_message_naming_the_problem(data, fragment):
    with pytest.raises(RecordDecodeError) as info:
        decode_record(data)
    assert fragment in str(info.value)
    assert isinstance(info.value, ValueError)


def test_hand_made_bytes_in_the_documented_layout_decode():
    assert decode_record(_raw(_META, _GOOD_KEY, _GOOD_VALUE)) == Record(
        ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(7)
    )
    assert decode_record(_raw(_META, _GOOD_KEY, None)) == Record(
        ConsumerGroupMetadataKey("g"), None
    )


@FAST
@given(records())
def test_a_record_in_the_legacy_format_decodes_as_it_did(record):
    wire = _unpacked(encode_record(record))
    key, value = wire
    legacy = _raw_v0(key[0], key[1:], None if value is None else value[1:])
    assert decode_record(legacy) == record
    assert peek_key(legacy) == peek_key(encode_record(record))


# ------------------------------------------------------------------------- encoding


class _NotAKey:
    group_id = "g"


@pytest.mark.parametrize(
    "key",
    [None, "g", ("g",), _NotAKey(), ConsumerGroupMetadataValue(1)],
    ids=["none", "str", "tuple", "look-alike", "value-as-key"],
)
def test_encode_refuses_a_key_that_is_not_a_record_key(key):
    with pytest.raises(TypeError, match="not a record key"):
        encode_record(Record(key, None))


@pytest.mark.parametrize(
    "value",
    [
        ConsumerGroupMemberMetadataValue(),
        ConsumerGroupMetadataKey("g"),
        7,
        {"epoch": 7},
        b"",
    ],
    ids=["other-value-class", "key-as-value", "int", "dict", "bytes"],
)
def test_encode_refuses_a_value_of_the_wrong_class(value):
    with pytest.raises(
        TypeError, match="ConsumerGroupMetadataKey takes ConsumerGroupMetadataValue"
    ):
        encode_record(Record(ConsumerGroupMetadataKey("g"), value))


@given(records(), records())
def test_peeking_at_the_bytes_names_the_same_key_as_the_record(a, b):
    from protocol.codec import key_identity, peek_key

    assert peek_key(encode_record(a)) == (key_identity(a.key), a.value is None)
    same_key = key_identity(a.key) == key_identity(b.key)
    assert same_key == (a.key == b.key)


@pytest.mark.parametrize("data", [b"", b"\x00", b"\x01\x90", b"\x00\x93\x01\x02\x03", "text"])
def test_peeking_at_bytes_that_are_no_record_is_refused(data):
    from protocol.codec import RecordDecodeError, peek_key

    with pytest.raises(RecordDecodeError):
        peek_key(data)


def test_a_current_assignment_written_before_assignment_epochs_decodes_without_them():
    """KIP-1251's ``assignment_epochs`` came later: an older log's value (one field fewer)
    still loads, with none recorded; one field fewer still is refused."""
    value = ConsumerGroupCurrentMemberAssignmentValue(3, 2, 0, {"t": (0, 1)}, {"t": (2,)})
    key = ConsumerGroupCurrentMemberAssignmentKey("g", "m")
    old_key, (version, *fields) = _unpacked(encode_record(Record(key, value)))
    assert decode_record(_packed([old_key, [version, *fields[:-1]]])) == Record(key, value)
    with pytest.raises(RecordDecodeError, match="needs 8 to 9 fields"):
        decode_record(_packed([old_key, [version, *fields[:-2]]]))
