"""A Fetch at the end of the embedded stream is parked until a batch brings records or its
``max_wait`` is over, as a broker parks it until ``min_bytes`` arrive; before, it answered empty
at the next batch boundary whether or not that batch brought anything, so the idle consumers
of a stream of no records fetched every batch interval instead of every ``max_wait``."""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace

from actors.gateway import topic_handlers
from protocol.wire import stream
from protocol.wire.topics import TopicIndex, TopicMetadata

BATCH_MS = 20


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


def _fetch(records_per_s: float, max_wait: int, partition: int = 0) -> tuple[float, bytes]:
    """One Fetch from the stream's end, of partition ``partition`` of a one-partition topic:
    how long it took and its reply's bytes."""
    synthetic = stream.SyntheticStream(anchor_ms=_now_ms(), records_per_s=records_per_s,
                                       batch_interval_ms=BATCH_MS)
    index = TopicIndex([TopicMetadata("GXCmfjCPSEefsQqgR0oNjw", "t", 1)])
    core = SimpleNamespace(topics_knowing=_known(index), may=lambda *_: True,
                           stream=synthetic, now_ms=_now_ms)
    start = synthetic.end_offset(_now_ms())
    body = {"max_wait": max_wait, "min_bytes": 1, "max_bytes": 1 << 20, "topics": [
        {"topic": "t", "partitions": [{"partition": partition, "fetch_offset": start,
                                        "partition_max_bytes": 1 << 20}]}]}
    began = time.monotonic()
    reply = asyncio.run(topic_handlers.fetch(core, SimpleNamespace(body=body, version=4)))
    took = time.monotonic() - began
    raw = b"".join(bytes(p) for p in reply.parts)
    return took, raw


def _known(index: TopicIndex):
    async def topics_knowing(names):
        return index
    return topics_knowing


def test_a_fetch_of_a_stream_of_no_records_waits_its_whole_max_wait_not_one_batch():
    took, _ = _fetch(records_per_s=0.0, max_wait=300)
    assert took >= 0.3, f"answered after {took * 1000:.0f} ms, {BATCH_MS} ms batches"


def test_a_fetch_waits_past_batches_that_bring_nothing():
    # One record a second: most 20 ms batches bring none, so the fetch outlives several.
    took, _ = _fetch(records_per_s=1.0, max_wait=300)
    assert took >= 0.1, f"answered after {took * 1000:.0f} ms, {BATCH_MS} ms batches"


def test_a_fetch_answers_as_soon_as_a_batch_brings_records():
    _, empty = _fetch(records_per_s=0.0, max_wait=0)
    took, raw = _fetch(records_per_s=5_000.0, max_wait=4_000)
    assert len(raw) > len(empty)  # records came...
    assert took < 2.0  # ...with a batch (every 20 ms), long before the 4 s wait was over


def test_a_fetch_of_a_partition_in_error_answers_at_once():
    _, empty = _fetch(records_per_s=0.0, max_wait=0)
    took, raw = _fetch(records_per_s=0.0, max_wait=4_000, partition=3)
    assert raw != empty and took < 2.0  # UNKNOWN_TOPIC_OR_PARTITION, not a 4 s wait
