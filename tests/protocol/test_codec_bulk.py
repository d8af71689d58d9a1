"""The codec's bulk path: a batch read with one msgpack call says exactly what reading each
record alone says, format-0 records come back upgraded, and damage is a RecordDecodeError."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.codec import (
    RecordDecodeError,
    decode_key,
    decode_record,
    decode_value,
    decode_values,
    encode_record,
    offset_commits,
    peek_key,
    split_records,
)
from protocol.records import OffsetCommitKey, OffsetCommitValue, Record
from tests.protocol.test_codec import records

FAST = settings(max_examples=80, deadline=None)


def legacy(record: Record) -> bytes:
    """The record in format 0, as logs written before format 1 hold it."""
    key, blob = msgpack.unpackb(b"\x92" + encode_record(record)[1:])
    value = None if blob is None else msgpack.unpackb(blob)[1:]
    return b"\x00" + msgpack.packb([key[0], key[1:], 0, value])


@FAST
@given(st.lists(records(), max_size=30))
def test_a_batch_splits_into_the_keys_and_values_each_record_holds(batch):
    encoded = [encode_record(r) for r in batch]
    keys, blobs, same = split_records(encoded)
    assert same == encoded
    assert [(k, b is None) for k, b in zip(keys, blobs, strict=True)] == [
        peek_key(d) for d in encoded
    ]
    for record, key, blob in zip(batch, keys, blobs, strict=True):
        assert decode_key(key) == record.key
        assert decode_value(key[0], blob) == record.value


@FAST
@given(st.lists(st.tuples(records(), st.booleans()), min_size=1, max_size=20))
def test_format_0_records_in_a_batch_come_back_in_format_1(batch):
    encoded = [legacy(r) if old else encode_record(r) for r, old in batch]
    keys, blobs, upgraded = split_records(encoded)
    assert upgraded == [encode_record(r) for r, _ in batch]
    assert [decode_record(d) for d in upgraded] == [r for r, _ in batch]
    assert [(k, b is None) for k, b in zip(keys, blobs, strict=True)] == [
        peek_key(d) for d in encoded
    ]


@FAST
@given(st.lists(records(), max_size=30), st.integers(1, 7))
def test_values_of_one_type_decode_in_bulk_as_one_by_one(batch, chunk):
    import protocol.codec as codec

    by_type: dict[int, list] = {}
    for r in batch:
        if r.value is not None:
            by_type.setdefault(type(r.key).TYPE, []).append(r)
    old, codec.BULK_CHUNK = codec.BULK_CHUNK, chunk
    try:
        for key_type, rs in by_type.items():
            _, blobs, _ = split_records([encode_record(r) for r in rs])
            assert decode_values(key_type, blobs) == [r.value for r in rs]
    finally:
        codec.BULK_CHUNK = old


@FAST
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["g", "h", ""]),
            st.sampled_from(["t", "u"]),
            st.integers(0, 3),
            st.none() | st.integers(0, 2**40),
        ),
        max_size=30,
    )
)
def test_offset_commits_decode_in_bulk_as_one_by_one(commits):
    batch = [
        Record(
            OffsetCommitKey(g, t, p),
            None if off is None else OffsetCommitValue(off, 1, "m", 5, -1),
        )
        for g, t, p, off in commits
    ]
    keys, blobs, _ = split_records([encode_record(r) for r in batch])
    assert offset_commits(keys, blobs) == [
        (r.key.group_id, r.key.topic, r.key.partition, r.value) for r in batch
    ]


def test_an_offset_commit_key_of_the_wrong_shape_is_refused():
    with pytest.raises(RecordDecodeError, match=r"key.partition: expected an int"):
        offset_commits([(1, "g", "t", "0")], [None])
    with pytest.raises(RecordDecodeError, match="not an offset commit key"):
        offset_commits([(3, "g")], [None])


@settings(max_examples=200, deadline=None)
@given(st.lists(records(), min_size=1, max_size=8), st.data())
def test_a_damaged_batch_splits_or_raises_record_decode_error(batch, data):
    encoded = [bytearray(encode_record(r)) for r in batch]
    i = data.draw(st.integers(0, len(encoded) - 1), label="record")
    at = data.draw(st.integers(0, len(encoded[i]) - 1), label="offset")
    encoded[i][at] ^= data.draw(st.integers(1, 255), label="xor")
    damaged = [bytes(e) for e in encoded]
    try:
        keys, _, _ = split_records(damaged)
    except RecordDecodeError:
        return
    assert len(keys) == len(damaged)


@settings(max_examples=200, deadline=None)
@given(st.lists(records(), min_size=1, max_size=6), st.data())
def test_values_with_a_field_replaced_by_any_msgpack_value_decode_in_bulk_as_one_by_one(
    batch, data
):
    """The column-by-column decoder accepts exactly what the one-by-one one accepts, with the
    same values; a chunk it does not take is decoded one by one (and refused there)."""
    from tests.protocol.test_codec import _replaced, _slots, msgpack_values

    key_type = type(data.draw(st.sampled_from(batch), label="type").key).TYPE
    same_type = [r for r in batch if key_type == type(r.key).TYPE and r.value is not None]
    if not same_type:
        return
    _, blobs, _ = split_records([encode_record(r) for r in same_type])
    i = data.draw(st.integers(0, len(blobs) - 1), label="value")
    wire = msgpack.unpackb(blobs[i])
    path = data.draw(st.sampled_from(_slots(wire)), label="path")
    blobs[i] = msgpack.packb(_replaced(wire, path, data.draw(msgpack_values)))
    try:
        expected = [decode_value(key_type, blob) for blob in blobs]
    except RecordDecodeError:
        with pytest.raises(RecordDecodeError):
            decode_values(key_type, blobs)
        return
    assert decode_values(key_type, blobs) == expected
