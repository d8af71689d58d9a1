"""The synthetic stream real clients read: ListOffsets, Fetch, and Produce's refusal.

Cohort keeps no records; every partition of every topic is the stream the consumer actors
process (``protocol/client/stream_progress.py``): offset n is the n-th record. For a Kafka
client the stream also needs an end, so it grows as if a producer wrote ``records_per_s``
records a second per partition, in batches every ``batch_interval_ms`` (a producer's linger),
from ``anchor_ms`` on: the log end offset at time t is a pure function of t, identical for
every partition and every gateway that shares the anchor. Record n has the timestamp at which
its batch "arrived" and the value ``str(n)``. Fetch answers from an offset up to the end; a
fetch at the end waits (in the gateway) for the next batch, up to the client's ``max_wait``.

Produce is advertised (clients want it in ApiVersions) and answered, per partition, with
INVALID_REQUEST and a message saying why: the stream is synthetic and takes no records.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode as E

from protocol.wire.record_batch import record_batch
from protocol.wire.topics import TopicIndex

# Fetch serves whole aligned chunks of the stream once they have arrived: chunk k holds
# offsets [k * CHUNK_RECORDS, (k + 1) * CHUNK_RECORDS), one v2 batch encoded once and kept (the
# CACHED_CHUNKS most recently served, 6.5-12 KiB each, in the stream's ``ChunkCache``), since every
# partition of every topic is the same stream. A client skips a batch's records below its fetch
# offset, as with any broker. The unfinished tail, and a client whose byte limit is smaller than
# a chunk, get a batch built from the fetch offset, of at most CHUNK_RECORDS records, sized by an
# estimate of a record's bytes.
CHUNK_RECORDS = 500
MAX_RECORDS_PER_PARTITION = CHUNK_RECORDS  # in a batch built from the fetch offset
CACHED_CHUNKS = 2048
RECORD_BYTES_ESTIMATE = 24
BATCH_OVERHEAD_BYTES = 61
# Bounds on one Fetch reply, so that serving one holds the gateway's event loop briefly
# whatever the client asks (TigerStyle): consecutive chunks per partition (32,000 records,
# ~0.4 MiB: under librdkafka's 1 MiB max.partition.fetch.bytes), record bytes per reply
# whatever the client's max_bytes (Kafka's broker caps it too, with its own fetch.max.bytes;
# cached chunks are only joined, ~1 ms for the whole), and batches encoded for it rather than
# found in the cache (~0.3 ms each). A partition left without records by these bounds is
# fetched again by the client, as when the client's own max_bytes runs out. A client keeps one
# Fetch in flight per broker, so a reply's size is its read rate: at 2,000 records a partition
# 8 librdkafka consumers read 1.0M records/s, at 32,000 1.6M (``bench/wire.py``, one run).
MAX_CHUNKS_PER_PARTITION = 64
MAX_RESPONSE_BYTES = 8 << 20
MAX_BUILDS_PER_RESPONSE = 8
# A share group acquires the stream in ranges the batch arithmetic aligns (``batch_records``),
# and every partition of every topic is the same stream, so the consumers of a group's
# partitions ask for the same ranges: each range is encoded once and kept (the
# CACHED_SHARE_RANGES most recently served; 2,500 records are ~32 KiB). Encoding one cost the
# gateway's event loop 3-30 ms a ShareFetch (bench/groups.py's Java share run, 2026-11-28).
CACHED_SHARE_RANGES = 64
# ListOffsets' special timestamps.
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4
PRODUCE_REFUSAL = ("Cohort's topics are synthetic streams (offset n is the n-th record, "
                   "written by no one); they take no records.")


@dataclass(frozen=True)
class SyntheticStream:
    anchor_ms: int
    records_per_s: float = 50.0
    batch_interval_ms: int = 200
    # Memo of encoded chunks (not part of the stream's identity).
    chunks: ChunkCache = field(default_factory=lambda: ChunkCache(), init=False, repr=False,
                                compare=False, hash=False)
    # Memo of the ranges share groups acquired, by (start, end) (``shared_records``).
    share_ranges: ChunkCache = field(default_factory=lambda: ChunkCache(CACHED_SHARE_RANGES),
                                     init=False, repr=False, compare=False, hash=False)

    def end_offset(self, now_ms: int) -> int:
        """The log end offset at ``now_ms``: every batch that has arrived by then."""
        elapsed = now_ms - self.anchor_ms
        if elapsed < 0:
            return 0
        arrived_at = elapsed - elapsed % self.batch_interval_ms
        return int(arrived_at * self.records_per_s // 1000)

    def timestamp_of(self, offset: int) -> int:
        """When record ``offset`` arrived: the time of the first batch that covers it."""
        per_batch = self.records_per_s * self.batch_interval_ms / 1000
        k = max(1, math.ceil((offset + 1) / per_batch)) if per_batch > 0 else 1
        # Float rounding may miss by one batch either way: settle on the exact one.
        while self.end_offset(self.anchor_ms + k * self.batch_interval_ms) <= offset:
            k += 1
        while k > 1 and self.end_offset(self.anchor_ms + (k - 1) * self.batch_interval_ms) > offset:
            k -= 1
        return self.anchor_ms + k * self.batch_interval_ms

    def offset_for_timestamp(self, timestamp_ms: int, now_ms: int) -> int | None:
        """The first offset whose timestamp is at or after ``timestamp_ms``; None if none yet
        (the records that arrived before ``timestamp_ms`` come first)."""
        first = self.end_offset(timestamp_ms - 1)
        return first if first < self.end_offset(now_ms) else None

    def batch_records(self) -> int:
        """The records of one arrival, when that is a whole number (then every arrival's
        first offset is a multiple of it); 0 otherwise."""
        per_batch = self.records_per_s * self.batch_interval_ms / 1000
        return int(per_batch) if per_batch >= 1 and per_batch == int(per_batch) else 0

    @property
    def grows(self) -> bool:
        """Whether a batch ever brings records (a stream of 0 records a second never ends)."""
        return self.records_per_s > 0

    def next_batch_in_ms(self, now_ms: int) -> int:
        """How long until the next batch arrives."""
        elapsed = now_ms - self.anchor_ms
        if elapsed < 0:
            return -elapsed
        return self.batch_interval_ms - elapsed % self.batch_interval_ms

    def records(self, start: int, end: int) -> bytes:
        """Offsets ``[start, end)`` as one v2 record batch."""
        return record_batch(start, self.timestamps(start, end),
                            [str(o).encode() for o in range(start, end)])

    def shared_records(self, start: int, end: int) -> bytes:
        """``records(start, end)``, encoded once for every partition and share group that
        acquires the same range (see CACHED_SHARE_RANGES)."""
        found = self.share_ranges.get((start, end))
        if found is None:
            found = self.records(start, end)
            self.share_ranges.put((start, end), found)
        return found

    def timestamps(self, start: int, end: int) -> list[int]:
        """Each record's timestamp in ``[start, end)``: one ``timestamp_of`` per arrival
        batch, not per record (the records of one arrival share its time)."""
        out: list[int] = []
        o = start
        while o < end:
            ts = self.timestamp_of(o)
            upto = min(end, self.end_offset(ts))
            out.extend([ts] * (upto - o))
            o = upto
        return out

    def chunk(self, k: int) -> tuple[bytes, bool]:
        """Chunk ``k``, and whether it was encoded just now (not found in the cache)."""
        found = self.chunks.get(k)
        if found is not None:
            return found, False
        data = self.records(k * CHUNK_RECORDS, (k + 1) * CHUNK_RECORDS)
        self.chunks.put(k, data)
        return data, True

    def batches_at(self, offset: int, end: int, limit_bytes: int, may_build: int,
                   fit: bool = True) -> tuple[bytes, int, int]:
        """Records from ``offset`` (with ``end`` the log end) for one partition of a Fetch: the
        arrived chunks from the one holding ``offset`` on, whole, as many as fit
        ``limit_bytes`` (at most MAX_CHUNKS_PER_PARTITION); else, if ``fit``, a batch from
        ``offset``, at most MAX_RECORDS_PER_PARTITION records sized by the byte estimate. At
        most ``may_build`` batches are encoded (0: only cached chunks, maybe none). Returns the
        records, how many of them are at or after ``offset``, and how many were encoded."""
        k = offset // CHUNK_RECORDS
        pieces: list[bytes] = []
        size = built = 0
        while ((k + 1) * CHUNK_RECORDS <= end and len(pieces) < MAX_CHUNKS_PER_PARTITION
               and (built < may_build or k in self.chunks)):
            data, fresh = self.chunk(k)
            built += fresh
            if size + len(data) > limit_bytes:
                break
            pieces.append(data)
            size += len(data)
            k += 1
        if pieces:
            records = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            return records, k * CHUNK_RECORDS - offset, built
        if built >= may_build or not fit:
            return b"", 0, built
        n = min(end - offset, MAX_RECORDS_PER_PARTITION,
                max(1, (limit_bytes - BATCH_OVERHEAD_BYTES) // RECORD_BYTES_ESTIMATE))
        return self.records(offset, offset + n), n, built + 1


class ChunkCache:
    """A stream's encoded chunks by index (or ranges by (start, end)): the ``capacity`` most
    recently served."""

    def __init__(self, capacity: int = CACHED_CHUNKS) -> None:
        self.capacity = capacity
        self._by_index: OrderedDict[Hashable, bytes] = OrderedDict()

    def __contains__(self, k: Hashable) -> bool:
        return k in self._by_index

    def __len__(self) -> int:
        return len(self._by_index)

    def get(self, k: Hashable) -> bytes | None:
        found = self._by_index.get(k)
        if found is not None:
            self._by_index.move_to_end(k)
        return found

    def put(self, k: Hashable, data: bytes) -> None:
        self._by_index[k] = data
        self._by_index.move_to_end(k)
        while len(self._by_index) > self.capacity:
            self._by_index.popitem(last=False)


# ----------------------------------------------------------------------------- ListOffsets


def list_offsets_response(body: dict, index: TopicIndex, stream: SyntheticStream, now_ms: int,
                          may_describe: Callable[[str], bool]) -> dict:
    end = stream.end_offset(now_ms)
    topics = []
    for t in body.get("topics", []):
        name, count = t["name"], index.partitions(t["name"])
        parts = []
        for p in t["partitions"]:
            entry = {"partition_index": p["partition_index"], "error_code": 0,
                     "timestamp": -1, "offset": -1, "leader_epoch": 0}
            if not may_describe(name):
                entry["error_code"] = E.topic_authorization_failed.value
            elif count is None or not 0 <= p["partition_index"] < count:
                entry["error_code"] = E.unknown_topic_or_partition.value
            else:
                entry.update(_offset_at(p["timestamp"], stream, end, now_ms))
            parts.append(entry)
        topics.append({"name": name, "partitions": parts})
    return {"throttle_time": 0, "topics": topics}


def _offset_at(timestamp: int, stream: SyntheticStream, end: int, now_ms: int) -> dict:
    if timestamp in (EARLIEST, EARLIEST_LOCAL) or timestamp < MAX_TIMESTAMP:
        return {"offset": 0}
    if timestamp == LATEST:
        return {"offset": end}
    if timestamp == MAX_TIMESTAMP:
        return {"offset": end - 1, "timestamp": stream.timestamp_of(end - 1)} if end else {}
    found = stream.offset_for_timestamp(timestamp, now_ms)
    return {} if found is None else {"offset": found, "timestamp": stream.timestamp_of(found)}


# ----------------------------------------------------------------------------------- Fetch


def fetch_response(body: dict, index: TopicIndex, stream: SyntheticStream, now_ms: int,
                   may_read: Callable[[str], bool]) -> tuple[dict, int]:
    """Fetch's reply at ``now_ms`` and how many records it carries (``fetch_answers_now``). Its
    record bytes are at most the client's ``max_bytes`` and MAX_RESPONSE_BYTES (a limit smaller
    than a chunk gets a batch built to fit it), and at most MAX_BUILDS_PER_RESPONSE batches are
    encoded for it: the work one fetch makes the gateway do is bounded whatever it asks."""
    end = stream.end_offset(now_ms)
    budget = min(max(body.get("max_bytes", 0x7FFFFFFF), 1), MAX_RESPONSE_BYTES)
    may_build = MAX_BUILDS_PER_RESPONSE
    total = 0
    responses = []
    for t in body.get("topics", []):
        name, count = t["topic"], index.partitions(t["topic"])
        readable = may_read(name)
        parts = []
        for p in t["partitions"]:
            entry = {"partition_index": p["partition"], "error_code": 0, "high_watermark": end,
                     "last_stable_offset": end, "log_start_offset": 0,
                     "aborted_transactions": None, "preferred_read_replica": -1,
                     "records": b""}
            offset = p["fetch_offset"]
            if not readable:
                entry["error_code"] = E.topic_authorization_failed.value
            elif count is None or not 0 <= p["partition"] < count:
                entry["error_code"] = E.unknown_topic_or_partition.value
            elif not 0 <= offset <= end:
                entry["error_code"] = E.offset_out_of_range.value
            elif offset < end and budget > BATCH_OVERHEAD_BYTES:
                own = p.get("partition_max_bytes", budget)
                # A batch fitted to the reply's leftover bytes is not worth encoding once the
                # reply carries records; one fitted to the client's own limit is.
                entry["records"], n, built = stream.batches_at(
                    offset, end, min(own, budget), may_build, fit=own <= budget or total == 0)
                budget -= len(entry["records"])
                may_build -= built
                total += n
            parts.append(entry)
        responses.append({"topic": name, "partitions": parts})
    return {"throttle_time": 0, "error_code": 0, "session_id": 0, "responses": responses}, total


def fetch_answers_now(reply: dict, records: int) -> bool:
    """Whether a Fetch reply is given now rather than parked: it carries records, or names a
    partition in error (Kafka completes a parked fetch then too)."""
    return records > 0 or any(p["error_code"] for t in reply["responses"]
                              for p in t["partitions"])


# --------------------------------------------------------------------------------- Produce


def produce_response(body: dict) -> dict:
    return {"throttle_time": 0, "responses": [
        {"name": t["name"], "partition_responses": [
            {"index": p["index"], "error_code": E.invalid_request.value, "base_offset": -1,
             "log_append_time": None, "log_start_offset": -1, "record_errors": [],
             "error_message": PRODUCE_REFUSAL}
            for p in t.get("partition_data", [])
        ]}
        for t in body.get("topic_data", [])
    ]}
