"""Reading an upstream's record batches (``protocol/wire/record_batches``), against batches
written by another codec (kafka-python's): records come back with their keys, values, headers
and timestamps; control batches hold none; a batch cut short at the end of a reply is left
for the next fetch; a share consumer gets exactly the whole batches its ranges touch."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatchBuilder

from protocol.wire.record_batches import (
    ConsumerRecord,
    RecordBatchError,
    batch_spans,
    covering,
    decode,
    reach,
)

GZIP, SNAPPY = 1, 2


def _batch(base: int, records: list[tuple], codec: int = 0, control: bool = False) -> bytes:
    """A v2 batch at ``base`` of (timestamp, key, value, headers) records."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=control,
                                  producer_id=7 if control else -1,
                                  producer_epoch=0 if control else -1,
                                  base_sequence=-1, batch_size=1 << 20)
    for i, (ts, key, value, headers) in enumerate(records):
        b.append(i, timestamp=ts, key=key, value=value, headers=headers)
    data = bytearray(b.build())
    data[0:8] = base.to_bytes(8, "big")
    if control:  # kafka-python writes no control batches: set the attribute bit
        attributes = int.from_bytes(data[21:23], "big") | 0x20
        data[21:23] = attributes.to_bytes(2, "big")
    return bytes(data)


RECORDS = [(1_700_000_000_000 + i, f"k{i}".encode(), f"value-{i}".encode(),
            [("h", str(i).encode()), ("none", None)]) for i in range(5)]


def test_records_come_back_with_their_keys_values_headers_and_timestamps():
    data = _batch(10, RECORDS)
    got = decode(data, "orders", 3)
    assert got == [ConsumerRecord("orders", 3, 10 + i, ts, k, v, tuple(h))
                   for i, (ts, k, v, h) in enumerate(RECORDS)]


def test_gzip_batches_are_read_and_a_codec_cohort_lacks_is_refused_by_name():
    assert [r.value for r in decode(_batch(0, RECORDS, GZIP), "t", 0)] == [
        r[2] for r in RECORDS]
    snappy = bytearray(_batch(0, RECORDS[:1]))
    snappy[22] |= SNAPPY  # the codec bits; the body is never read past them
    with pytest.raises(RecordBatchError, match="snappy"):
        decode(bytes(snappy), "t", 0)


def test_records_below_the_fetch_offset_and_control_batches_are_left_out():
    data = _batch(0, RECORDS[:3]) + _batch(3, RECORDS[:1], control=True) + \
        _batch(4, RECORDS[:2])
    assert [r.offset for r in decode(data, "t", 0, from_offset=2)] == [2, 4, 5]
    assert [s.is_control for s in batch_spans(data)] == [False, True, False]


def test_a_batch_cut_short_at_the_end_of_a_reply_is_left_for_the_next_fetch():
    whole = _batch(0, RECORDS[:2])
    data = whole + _batch(2, RECORDS)[:-7]
    assert [(s.base_offset, s.last_offset) for s in batch_spans(data)] == [(0, 1)]
    assert [r.offset for r in decode(data, "t", 0)] == [0, 1]
    assert reach(data) == 2 and reach(b"") is None


def test_a_length_no_batch_has_is_refused():
    with pytest.raises(RecordBatchError):
        batch_spans((0).to_bytes(8, "big") + (3).to_bytes(4, "big") + bytes(60))


@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=6),
       ranges=st.lists(st.tuples(st.integers(0, 25), st.integers(0, 3)), max_size=4))
def test_covering_keeps_exactly_the_whole_batches_a_range_touches(sizes, ranges):
    batches, base = [], 0
    for n in sizes:
        batches.append((base, base + n - 1, _batch(base, RECORDS[:n])))
        base += n
    data = b"".join(b for _, _, b in batches)
    wanted = [(first, first + extra) for first, extra in ranges]
    expected = b"".join(b for lo, hi, b in batches
                        if any(first <= hi and lo <= last for first, last in wanted))
    assert covering(data, wanted) == expected
