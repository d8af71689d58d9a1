"""Where the gateway's share-partitions find their records: the synthetic stream, or the
upstream's partitions.

The shard decides which offsets a member acquires, from the log's bounds the gateway hands it;
the gateway then sends the records of those offsets. Two sources answer the same four
questions (each partition's bounds now, the batches of what was acquired, how long until
asking again is worth it, how long the log's batches are where that is known before reading:
a fetch acquires whole batches, Kafka's default acquire mode):

* ``StreamRecords``: the synthetic stream (no upstream). Every partition is the same stream
  from offset 0; its end is a function of time, its batches are made here.
* ``UpstreamRecords``: in front of an upstream, each partition's log start and high watermark
  from a Fetch to its leader, and the leader's own batches for what was acquired, sent on
  untouched (``actors/upstream/reader.py``). A partition the upstream cannot answer for now
  has no bounds (it is not fetched this time) and, after an acquisition, no batches: those
  acquisitions are handed back (``unread``) rather than sent without their records, which the
  client would take for gaps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from actors.gateway.core import GatewayCore
from actors.upstream.reader import UpstreamReader
from protocol import messages as m
from protocol.wire.stream import SyntheticStream
from protocol.wire.topics import TopicIndex

Key = tuple[str, int]  # (Cohort's topic id, partition)
Bounds = dict[Key, tuple[int, int]]  # -> (log start offset, log end offset)
# How often a ShareFetch waiting for records asks the upstream again, and the shard at least
# (records released by other members or by expired locks become available without new ones).
UPSTREAM_POLL_MS = 100
SHARD_ASK_MS = 500


def acquired_ranges(resp: m.ShareFetchResponse) -> dict[Key, list[tuple[int, int]]]:
    """Each partition's acquired ranges ((first, last) offsets) in a pure ShareFetch reply."""
    return {(t.topic_id, p.partition): [(a.first_offset, a.last_offset) for a in p.acquired]
            for t in resp.topics for p in t.partitions if p.acquired}


class StreamRecords:
    """The synthetic stream (see the module docstring)."""

    def __init__(self, stream: SyntheticStream, now_ms: Callable[[], int]) -> None:
        self.stream, self.now_ms = stream, now_ms

    async def bounds(self, index: TopicIndex, keys: Iterable[Key]) -> Bounds:
        end = self.stream.end_offset(self.now_ms())
        return {k: (0, end) for k in keys}

    async def batches(self, index: TopicIndex, resp: m.ShareFetchResponse
                      ) -> tuple[dict[Key, bytes], dict[Key, list[tuple[int, int]]]]:
        return {k: b"".join(self.stream.shared_records(lo, hi + 1) for lo, hi in ranges)
                for k, ranges in acquired_ranges(resp).items()}, {}

    def next_poll_ms(self, now_ms: int) -> int:
        return self.stream.next_batch_in_ms(now_ms)

    def batch_records(self) -> int:
        return self.stream.batch_records()


class UpstreamRecords:
    """The upstream's partitions (see the module docstring)."""

    def __init__(self, reader: UpstreamReader) -> None:
        self.reader = reader

    async def bounds(self, index: TopicIndex, keys: Iterable[Key]) -> Bounds:
        """The bounds the upstream answered with; a topic Cohort does not know gets empty
        bounds, so that the shard answers it (UNKNOWN_TOPIC_ID) as without an upstream."""
        keys = list(keys)
        named = {(index.name_of(tid), p): (tid, p) for tid, p in keys}
        read = await self.reader.bounds([k for k in named if k[0]])
        unknown = {k: (0, 0) for k in keys if not index.name_of(k[0])}
        return {named[k]: b for k, b in read.items()} | unknown

    async def batches(self, index: TopicIndex, resp: m.ShareFetchResponse
                      ) -> tuple[dict[Key, bytes], dict[Key, list[tuple[int, int]]]]:
        """The batches of each partition's acquired ranges, and the ranges that could not be
        read (to hand back)."""
        wanted = acquired_ranges(resp)
        reads = await asyncio.gather(*(self._read(index, key, ranges)
                                       for key, ranges in wanted.items()))
        found = {k: data for k, data in zip(wanted, reads, strict=True) if data is not None}
        return found, {k: r for k, r in wanted.items() if k not in found}

    async def _read(self, index: TopicIndex, key: Key, ranges) -> bytes | None:
        name = index.name_of(key[0])
        return await self.reader.batches((name, key[1]), ranges) if name else None

    def next_poll_ms(self, now_ms: int) -> int:
        return UPSTREAM_POLL_MS

    def batch_records(self) -> int:
        """0: the upstream's batches are known only once read, after the shard acquired."""
        return 0


def records_of(core: GatewayCore) -> StreamRecords | UpstreamRecords:
    """The gateway's source: the upstream's when it fronts one (a test's stand-in core
    without a reader serves the stream)."""
    reader = getattr(core, "upstream_reader", None)
    if reader is not None:
        return UpstreamRecords(reader)
    return StreamRecords(core.stream, core.now_ms)
