"""Fetch serves the synthetic stream from batches encoded once: whole arrived chunks, cached,
with every record where a client expects it; the tail and small byte limits still get a
batch from the fetch offset."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kafka.record import MemoryRecords

from protocol.metadata import TopicMetadata
from protocol.wire import stream
from protocol.wire.record_batch import record_batch
from protocol.wire.topics import TopicIndex

INDEX = TopicIndex([TopicMetadata("GXCmfjCPSEefsQqgR0oNjw", "foo", 3)])
STREAM = stream.SyntheticStream(anchor_ms=1_000, records_per_s=50, batch_interval_ms=200)
CHUNK = stream.CHUNK_RECORDS
# By then, 100 chunks have arrived.
LATER_MS = 1_000 + 100 * CHUNK * 1_000 // 50


def _fetch(offsets: list[int], now_ms: int = LATER_MS, max_bytes: int = 1 << 20):
    body = {"max_bytes": 1 << 20, "topics": [{"topic": "foo", "partitions": [
        {"partition": p, "fetch_offset": o, "partition_max_bytes": max_bytes}
        for p, o in enumerate(offsets)]}]}
    reply, count = stream.fetch_response(body, INDEX, STREAM, now_ms, lambda _t: True)
    return [p["records"] for p in reply["responses"][0]["partitions"]], count


def _records(data: bytes) -> list[tuple[int, bytes, int]]:
    out = []
    records = MemoryRecords(data)
    while (batch := records.next_batch()) is not None:
        assert batch.validate_crc()
        out += [(r.offset, r.value, r.timestamp) for r in batch]
    return out


@given(st.integers(0, 10**6), st.integers(1, 700), st.sampled_from([(50, 200), (7, 130),
                                                                    (1000, 10)]))
def test_timestamps_in_bulk_are_each_records_own(start, n, shape):
    s = stream.SyntheticStream(anchor_ms=123, records_per_s=shape[0], batch_interval_ms=shape[1])
    assert s.timestamps(start, start + n) == [s.timestamp_of(o) for o in range(start, start + n)]


@given(st.integers(0, 99 * CHUNK - 1))
def test_a_fetch_inside_an_arrived_chunk_gets_the_whole_chunk_with_every_record_right(offset):
    (data,), count = _fetch([offset])
    first = offset - offset % CHUNK
    assert _records(data) == [(o, str(o).encode(), STREAM.timestamp_of(o))
                              for o in range(first, first + CHUNK)]
    assert count == first + CHUNK - offset


def test_a_chunk_is_encoded_once_and_served_to_every_partition():
    (a, b, c), count = _fetch([CHUNK + 3, CHUNK, CHUNK + 499])
    assert a is b is c
    (again,), _ = _fetch([CHUNK + 10])
    assert again is a and count == (CHUNK - 3) + CHUNK + 1


def test_the_tail_is_served_from_the_fetch_offset_up_to_the_end():
    end = STREAM.end_offset(LATER_MS + 1_000)
    (data,), count = _fetch([end - 7], now_ms=LATER_MS + 1_000)
    assert [r[0] for r in _records(data)] == list(range(end - 7, end)) and count == 7


def test_a_small_byte_limit_gets_a_small_batch_from_the_fetch_offset():
    (data,), count = _fetch([CHUNK + 3], max_bytes=200)
    assert _records(data)[0][0] == CHUNK + 3
    assert len(data) <= 200 + 2 * stream.RECORD_BYTES_ESTIMATE and 1 <= count < 10


@given(st.lists(st.tuples(st.integers(0, 10**5), st.binary(max_size=300)), min_size=1,
                max_size=30), st.integers(0, 2**40))
def test_a_batch_decodes_to_what_was_written(rows, base):
    """The varint shortcuts (cached small varints, the null key's constant byte) write what
    Kafka reads, for any value and timestamp spread."""
    timestamps = [10**12 + ts for ts, _ in rows]
    data = record_batch(base, timestamps, [v for _, v in rows])
    assert _records(data) == [(base + i, v, ts)
                              for i, ((_, v), ts) in enumerate(zip(rows, timestamps, strict=True))]
