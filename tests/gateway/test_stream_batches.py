"""Fetch serves the synthetic stream from batches encoded once: whole arrived chunks, cached,
with every record where a client expects it; the tail and small byte limits still get a
batch from the fetch offset."""

from __future__ import annotations

from unittest.mock import patch

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
        {"partition": p % 3, "fetch_offset": o, "partition_max_bytes": max_bytes}
        for p, o in enumerate(offsets)]}]}
    return _fetch_from(STREAM, body, now_ms)


def _fetch_from(s: stream.SyntheticStream, body: dict, now_ms: int = LATER_MS):
    reply, count = stream.fetch_response(body, INDEX, s, now_ms, lambda _t: True)
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


# A reply's chunks a partition, small enough that the few batches one reply may encode give
# every partition its whole share: the tests of what a reply holds use it.
FEW_CHUNKS = 4
few_chunks = patch.object(stream, "MAX_CHUNKS_PER_PARTITION", FEW_CHUNKS)


@given(st.integers(0, 99 * CHUNK - 1))
def test_a_fetch_inside_arrived_chunks_gets_them_whole_with_every_record_right(offset):
    with few_chunks:
        (data,), count = _fetch([offset])
    first = offset - offset % CHUNK
    last = min(first + FEW_CHUNKS * CHUNK, 100 * CHUNK)
    assert _records(data) == [(o, str(o).encode(), STREAM.timestamp_of(o))
                              for o in range(first, last)]
    assert count == last - offset


def test_a_chunk_is_encoded_once_and_served_to_every_partition():
    s = stream.SyntheticStream(anchor_ms=1_000, records_per_s=50, batch_interval_ms=200)
    body = {"max_bytes": 1 << 20, "topics": [{"topic": "foo", "partitions": [
        {"partition": p, "fetch_offset": o, "partition_max_bytes": 1 << 20}
        for p, o in enumerate([CHUNK + 3, CHUNK, CHUNK + 499])]}]}
    with few_chunks:
        (a, b, c), count = _fetch_from(s, body)
    assert a == b == c and count == 3 * FEW_CHUNKS * CHUNK - 3 - 499
    assert len(s.chunks) == FEW_CHUNKS
    assert all(not s.chunk(k)[1] for k in range(1, 1 + FEW_CHUNKS))


def test_a_fetch_encodes_a_bounded_number_of_batches_and_leaves_the_rest_for_later():
    s = stream.SyntheticStream(anchor_ms=1_000, records_per_s=50, batch_interval_ms=200)
    spread = [k * 10 * CHUNK for k in range(2 * stream.MAX_BUILDS_PER_RESPONSE)]
    body = {"max_bytes": 1 << 30, "topics": [{"topic": "foo", "partitions": [
        {"partition": 0, "fetch_offset": o, "partition_max_bytes": 1 << 20} for o in spread]}]}
    served = stream.MAX_BUILDS_PER_RESPONSE // FEW_CHUNKS
    with few_chunks:
        records, count = _fetch_from(s, body)
    assert len(s.chunks) == stream.MAX_BUILDS_PER_RESPONSE
    assert [bool(r) for r in records] == [True] * served + [False] * (len(spread) - served)
    assert count == stream.MAX_BUILDS_PER_RESPONSE * CHUNK
    with few_chunks:  # what is cached is served, and the next ones built
        again, _ = _fetch_from(s, body)
    assert [bool(r) for r in again] == [True] * 2 * served + [False] * (len(spread) - 2 * served)


def test_once_cached_a_partition_gets_as_many_whole_chunks_as_a_reply_allows():
    s = stream.SyntheticStream(anchor_ms=1_000, records_per_s=50, batch_interval_ms=200)
    body = {"max_bytes": 1 << 30, "topics": [{"topic": "foo", "partitions": [
        {"partition": 0, "fetch_offset": 3, "partition_max_bytes": 1 << 30}]}]}
    counts = []
    for _ in range(stream.MAX_CHUNKS_PER_PARTITION // stream.MAX_BUILDS_PER_RESPONSE + 1):
        (data,), count = _fetch_from(s, body)  # each reply builds a few more, serves the rest
        counts.append(count)
    assert counts == sorted(counts) and counts[0] == stream.MAX_BUILDS_PER_RESPONSE * CHUNK - 3
    last = stream.MAX_CHUNKS_PER_PARTITION * CHUNK
    assert counts[-1] == last - 3
    assert [o for o, _, _ in _records(data)] == list(range(last))


def test_a_reply_carries_at_most_max_response_bytes_of_records_whatever_the_client_asks():
    many = [{"partition": 0, "fetch_offset": (k % 90) * CHUNK, "partition_max_bytes": 1 << 30}
            for k in range(400)]
    body = {"max_bytes": 0x7FFFFFFF, "topics": [{"topic": "foo", "partitions": many}]}
    for _ in range(30):  # enough fetches for every chunk it names to be cached
        records, _ = _fetch_from(STREAM, body)
    one_partition = stream.MAX_CHUNKS_PER_PARTITION * CHUNK * 16  # 16 bytes a record, at most
    assert stream.MAX_RESPONSE_BYTES - one_partition < sum(map(len, records)) \
        <= stream.MAX_RESPONSE_BYTES


def test_the_reply_s_leftover_bytes_get_no_batch_built_to_fit_them():
    chunk = len(STREAM.chunk(1)[0])
    body = {"max_bytes": chunk + 300, "topics": [{"topic": "foo", "partitions": [
        {"partition": p, "fetch_offset": CHUNK, "partition_max_bytes": 1 << 20}
        for p in range(2)]}]}
    (first, second), count = _fetch_from(STREAM, body)
    assert len(first) == chunk and second == b"" and count == CHUNK


def test_the_chunk_cache_keeps_the_most_recently_served():
    cache = stream.ChunkCache(capacity=3)
    for k in range(5):
        cache.put(k, bytes([k]))
    assert cache.get(2) == b"\x02"  # 2 is now the most recent
    cache.put(5, b"\x05")
    assert [k for k in range(6) if k in cache] == [2, 4, 5] and len(cache) == 3


def test_the_tail_is_served_from_the_fetch_offset_up_to_the_end():
    end = STREAM.end_offset(LATER_MS + 1_000)
    (data,), count = _fetch([end - 7], now_ms=LATER_MS + 1_000)
    assert [r[0] for r in _records(data)] == list(range(end - 7, end)) and count == 7


def test_a_small_byte_limit_gets_a_small_batch_from_the_fetch_offset():
    (data,), count = _fetch([CHUNK + 3], max_bytes=200)
    assert _records(data)[0][0] == CHUNK + 3
    assert len(data) <= 200 + 2 * stream.RECORD_BYTES_ESTIMATE and 1 <= count < 10


def test_a_chunk_encoded_but_too_big_for_the_limit_counts_against_the_bound():
    s = stream.SyntheticStream(anchor_ms=1_000, records_per_s=50, batch_interval_ms=200)
    end = 100 * CHUNK
    assert s.batches_at(CHUNK + 3, end, 200, may_build=1) == (b"", 0, 1)  # the chunk, unsent
    fitted = (200 - stream.BATCH_OVERHEAD_BYTES) // stream.RECORD_BYTES_ESTIMATE
    assert s.batches_at(CHUNK + 3, end, 200, may_build=1)[1:] == (fitted, 1)  # now cached


@given(st.lists(st.tuples(st.integers(0, 10**5), st.binary(max_size=300)), min_size=1,
                max_size=30), st.integers(0, 2**40))
def test_a_batch_decodes_to_what_was_written(rows, base):
    """The varint shortcuts (cached small varints, the null key's constant byte) write what
    Kafka reads, for any value and timestamp spread."""
    timestamps = [10**12 + ts for ts, _ in rows]
    data = record_batch(base, timestamps, [v for _, v in rows])
    assert _records(data) == [(base + i, v, ts)
                              for i, ((_, v), ts) in enumerate(zip(rows, timestamps, strict=True))]


def test_an_arrival_of_a_whole_number_of_records_is_the_streams_batch_length():
    # A share fetch acquires to the end of such a batch (KIP-1206's soft limit).
    assert stream.SyntheticStream(anchor_ms=0, records_per_s=50_000.0).batch_records() == 10_000
    slow = stream.SyntheticStream(anchor_ms=0, records_per_s=50.0)
    assert slow.batch_records() == 10
    assert all(slow.end_offset(k * slow.batch_interval_ms) % 10 == 0 for k in range(50))
    assert stream.SyntheticStream(anchor_ms=0, records_per_s=7.0).batch_records() == 0  # 1.4
    assert stream.SyntheticStream(anchor_ms=0, records_per_s=0.0).batch_records() == 0


def test_a_share_range_is_encoded_once_for_every_partition_that_acquires_it():
    """Every partition is the same stream, so a share group's consumers of three partitions
    acquire the same aligned ranges: the gateway encodes each once, the bytes the stream's."""
    s = stream.SyntheticStream(anchor_ms=1_000, records_per_s=50, batch_interval_ms=200)
    first = s.shared_records(2_500, 5_000)
    assert first == s.records(2_500, 5_000)
    assert [o for o, _v, _t in _records(first)] == list(range(2_500, 5_000))
    with patch.object(stream, "record_batch", side_effect=AssertionError("encoded again")):
        assert s.shared_records(2_500, 5_000) is first
    assert len(s.share_ranges) == 1


def test_the_share_range_cache_is_bounded():
    s = stream.SyntheticStream(anchor_ms=1_000, records_per_s=50, batch_interval_ms=200)
    for k in range(stream.CACHED_SHARE_RANGES + 5):
        s.shared_records(k * 10, k * 10 + 10)
    assert len(s.share_ranges) == stream.CACHED_SHARE_RANGES
    assert (0, 10) not in s.share_ranges
