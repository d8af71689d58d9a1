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
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from kio.schema.errors import ErrorCode as E

from protocol.wire.record_batch import record_batch
from protocol.wire.topics import TopicIndex

# Bounds on one Fetch reply (TigerStyle): records per partition, and an estimate of a
# record's size in a batch used to honour the client's byte limits.
MAX_RECORDS_PER_PARTITION = 500
# Fetch serves whole aligned chunks of the stream once they have arrived: chunk k holds
# offsets [k * CHUNK_RECORDS, (k + 1) * CHUNK_RECORDS), encoded once and kept (at most
# CACHED_CHUNKS of them, ~12 KiB each), since every partition of every topic is the same
# stream. A client skips a batch's records below its fetch offset, as with any broker.
CHUNK_RECORDS = MAX_RECORDS_PER_PARTITION
CACHED_CHUNKS = 2048
RECORD_BYTES_ESTIMATE = 24
BATCH_OVERHEAD_BYTES = 61
# ListOffsets' special timestamps.
LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4
PRODUCE_REFUSAL = ("Cohort's topics are synthetic streams (offset n is the n-th record, "
                   "written by no one); they take no records.")


@dataclass(frozen=True)
class SyntheticStream:
    anchor_ms: int
    records_per_s: float = 50.0
    batch_interval_ms: int = 200

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

    def batch_at(self, offset: int, end: int, limit_bytes: int) -> tuple[bytes, int]:
        """A batch from ``offset`` (with ``end`` the log end): the cached chunk holding
        ``offset`` if it has fully arrived and fits ``limit_bytes``, else offsets from
        ``offset`` on, at most MAX_RECORDS_PER_PARTITION, sized by the byte estimate; and how
        many records at or after ``offset`` it carries."""
        k = offset // CHUNK_RECORDS
        chunk_end = (k + 1) * CHUNK_RECORDS
        if chunk_end <= end:
            chunk = _chunk(self, k)
            if len(chunk) <= limit_bytes:
                return chunk, chunk_end - offset
        n = min(end - offset, MAX_RECORDS_PER_PARTITION,
                max(1, (limit_bytes - BATCH_OVERHEAD_BYTES) // RECORD_BYTES_ESTIMATE))
        return self.records(offset, offset + n), n


@lru_cache(maxsize=CACHED_CHUNKS)
def _chunk(stream: SyntheticStream, k: int) -> bytes:
    """Chunk ``k`` of ``stream``, encoded once (see CHUNK_RECORDS)."""
    return stream.records(k * CHUNK_RECORDS, (k + 1) * CHUNK_RECORDS)


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
    """Fetch's reply at ``now_ms`` and how many records it carries (0: worth waiting)."""
    end = stream.end_offset(now_ms)
    budget = max(body.get("max_bytes", 0x7FFFFFFF), 1)
    total = 0
    responses = []
    for t in body.get("topics", []):
        name, count = t["topic"], index.partitions(t["topic"])
        parts = []
        for p in t["partitions"]:
            entry = {"partition_index": p["partition"], "error_code": 0, "high_watermark": end,
                     "last_stable_offset": end, "log_start_offset": 0,
                     "aborted_transactions": None, "preferred_read_replica": -1,
                     "records": b""}
            offset = p["fetch_offset"]
            if not may_read(name):
                entry["error_code"] = E.topic_authorization_failed.value
            elif count is None or not 0 <= p["partition"] < count:
                entry["error_code"] = E.unknown_topic_or_partition.value
            elif not 0 <= offset <= end:
                entry["error_code"] = E.offset_out_of_range.value
            elif offset < end and budget > BATCH_OVERHEAD_BYTES:
                limit = min(p.get("partition_max_bytes", budget), budget)
                entry["records"], n = stream.batch_at(offset, end, limit)
                budget -= len(entry["records"])
                total += n
            parts.append(entry)
        responses.append({"topic": name, "partitions": parts})
    return {"throttle_time": 0, "error_code": 0, "session_id": 0, "responses": responses}, total


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
