"""Cohort's own reads of the upstream's records: share-partitions and Ray consumers.

In front of an upstream, records live there. A share-partition (played by the gateway, or by a
Ray share consumer for itself) needs each partition's bounds (log start, high watermark) to
acquire records and the batches holding what it acquired; a Ray consumer needs its partitions'
records from its position. Both read with Fetch, sent to each partition's leader over a link of
this reader's own (a Fetch with a long wait would hold up other requests on a shared link, so
every Fetch here waits at most ``READ_WAIT_MS``: the caller polls).

Measured and relied on (``/work/shared/notes/upstream.md``): Tansu 0.6 answers a Fetch whose
``max_wait`` is 0 with no partitions at all, so reads wait 1 ms; its ListOffsets(latest)
answers 1 whatever the partition holds, so the high watermark always comes from Fetch, and
ListOffsets is asked only for the earliest offset (right on Tansu and Kafka alike), after a
Fetch answered OFFSET_OUT_OF_RANGE (Kafka, when retention deleted what a reader wanted).

A leader that moved (NOT_LEADER_OR_FOLLOWER and the like) makes the reader read the upstream's
metadata again (at most every ``REFRESH_S``); meanwhile the partition answers with its error,
and the caller tries again on its next poll.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from actors.upstream.link import UpstreamLink, UpstreamUnavailable
from actors.upstream.view import UpstreamView
from protocol.wire.record_batches import covering, reach

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
FETCH, LIST_OFFSETS = 1, 2
FETCH_VERSION, LIST_OFFSETS_VERSION = 12, 7  # v12 names topics (v13+ name them by id)
READ_WAIT_MS = 1  # Tansu 0.6 answers max_wait 0 with nothing
PARTITION_MAX_BYTES = 1 << 20
MAX_BYTES = 8 << 20
PROBE_BYTES = 1  # a bounds probe: a broker sends at most the first batch, whole
READ_TIMEOUT_S = 10.0
MAX_READS = 16  # fetches to cover one partition's acquired ranges, at most
REFRESH_S = 1.0
EARLIEST = -2
NONE, OFFSET_OUT_OF_RANGE, LEADER_NOT_AVAILABLE = 0, 1, 5
NO_ANSWER = -1  # the broker's reply left the partition out (Kafka's UNKNOWN_SERVER_ERROR)
# A partition's leader moved or is not known yet: read the metadata again.
MOVED = frozenset({3, 5, 6, 74, 75, 100})


@dataclass(frozen=True)
class PartitionRead:
    """One partition's answer to a Fetch: its error, bounds (-1 when unknown) and records."""

    error_code: int
    high_watermark: int = -1
    log_start_offset: int = -1
    records: bytes = b""


class UpstreamReader:
    """Fetches from the upstream's partition leaders (see the module docstring)."""

    def __init__(self, view: UpstreamView) -> None:
        self.view = view
        self._links: dict[int, UpstreamLink] = {}
        self._opening: dict[int, asyncio.Lock] = {}
        # Per partition, an offset known to be in its log (its last high watermark seen):
        # where a bounds probe reads from, so it reads at most one new batch.
        self._hints: dict[TopicPartition, int] = {}
        self._refreshed_at = float("-inf")

    # ------------------------------------------------------------------ reads

    async def fetch(self, offsets: Mapping[TopicPartition, int],
                    partition_max_bytes: int = PARTITION_MAX_BYTES
                    ) -> dict[TopicPartition, PartitionRead]:
        """Each partition read from its offset: one Fetch per leader, sent together. Every
        partition asked answers, with LEADER_NOT_AVAILABLE when its leader cannot be read."""
        if not self.view.leaders:
            await self._refresh()
        by_leader: dict[int, dict[TopicPartition, int]] = {}
        out: dict[TopicPartition, PartitionRead] = {}
        for tp, offset in offsets.items():
            leader = self.view.leaders.get(tp)
            if leader is None:
                out[tp] = PartitionRead(LEADER_NOT_AVAILABLE)
            else:
                by_leader.setdefault(leader, {})[tp] = offset
        answers = await asyncio.gather(*(
            self._fetch_from(node, parts, partition_max_bytes)
            for node, parts in by_leader.items()))
        for answer in answers:
            out.update(answer)
        if any(r.error_code in MOVED for r in out.values()):
            await self._refresh()
        return out

    async def bounds(self, tps: Iterable[TopicPartition]
                     ) -> dict[TopicPartition, tuple[int, int]]:
        """(log start, high watermark) of each partition that could be read now."""
        tps = list(dict.fromkeys(tps))
        reads = await self.fetch({tp: self._hints.get(tp, 0) for tp in tps}, PROBE_BYTES)
        behind = [tp for tp, r in reads.items() if r.error_code == OFFSET_OUT_OF_RANGE]
        if behind:  # the log moved past the hint (retention; a topic deleted and made again)
            self._hints.update(await self.earliest(behind))
            reads.update(await self.fetch({tp: self._hints.get(tp, 0) for tp in behind},
                                          PROBE_BYTES))
        out = {}
        for tp, r in reads.items():
            if r.error_code == NONE and r.high_watermark >= 0:
                start = max(r.log_start_offset, 0)
                out[tp] = (min(start, r.high_watermark), r.high_watermark)
                self._hints[tp] = r.high_watermark
        return out

    async def batches(self, tp: TopicPartition, ranges: list[tuple[int, int]]) -> bytes | None:
        """The upstream's whole batches holding the offsets of ``ranges`` ((first, last),
        inclusive) of one partition, as they came; None when the partition cannot be read.
        Offsets no batch holds (transaction markers' neighbours compacted away, a log
        truncated) are simply not covered: a share consumer acknowledges them as gaps.

        A read that brings no whole batch from an offset below the high watermark is not a
        gap: the upstream had the records and did not send them this time (Tansu under the
        load of 1,000 members' fetches answered so: the share consumer accepted ten records
        it never saw). That is None too, so the range is released and delivered again."""
        last = max(hi for _, hi in ranges)
        position = min(lo for lo, _ in ranges)
        pieces = []
        for _ in range(MAX_READS):
            read = (await self.fetch({tp: position}))[tp]
            if read.error_code != NONE:
                return None
            after = reach(read.records)
            if after is None and position < read.high_watermark:
                return None
            pieces.append(covering(read.records, ranges))
            if after is None or after > last:
                break
            position = after
        return b"".join(pieces)

    async def earliest(self, tps: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Each partition's log start offset (ListOffsets earliest), for those that answer."""
        out: dict[TopicPartition, int] = {}
        by_leader: dict[int, list[TopicPartition]] = {}
        for tp in tps:
            if tp in self.view.leaders:
                by_leader.setdefault(self.view.leaders[tp], []).append(tp)
        for node, parts in by_leader.items():
            topics: dict[str, list[dict]] = {}
            for name, p in parts:
                topics.setdefault(name, []).append(
                    {"partition_index": p, "current_leader_epoch": -1, "timestamp": EARLIEST})
            try:
                reply = await self._call(node, LIST_OFFSETS, LIST_OFFSETS_VERSION, {
                    "replica_id": -1, "isolation_level": 0,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
            except UpstreamUnavailable as e:
                log.info("ListOffsets to upstream broker %d failed: %s", node, e)
                continue
            for t in reply.get("topics", []):
                for p in t.get("partitions", []):
                    if p.get("error_code", 0) == NONE and p.get("offset", -1) >= 0:
                        out[(t["name"], p["partition_index"])] = p["offset"]
        return out

    def close(self) -> None:
        for link in self._links.values():
            link.close("the reader closed")
        self._links.clear()

    # ------------------------------------------------------------------ internals

    async def _fetch_from(self, node: int, offsets: Mapping[TopicPartition, int],
                          partition_max_bytes: int) -> dict[TopicPartition, PartitionRead]:
        topics: dict[str, list[dict]] = {}
        for (name, p), offset in offsets.items():
            topics.setdefault(name, []).append({
                "partition": p, "current_leader_epoch": -1, "fetch_offset": offset,
                "last_fetched_epoch": -1, "log_start_offset": -1,
                "partition_max_bytes": partition_max_bytes})
        try:
            reply = await self._call(node, FETCH, FETCH_VERSION, {
                "replica_id": -1, "max_wait": READ_WAIT_MS, "min_bytes": 1,
                "max_bytes": MAX_BYTES, "isolation_level": 0, "session_id": 0,
                "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]})
        except UpstreamUnavailable as e:
            log.info("Fetch from upstream broker %d failed: %s", node, e)
            return {tp: PartitionRead(LEADER_NOT_AVAILABLE) for tp in offsets}
        out = {}
        for t in reply.get("responses", []):
            for p in t.get("partitions", []):
                tp = (t.get("topic"), p["partition_index"])
                if tp in offsets:
                    out[tp] = PartitionRead(p.get("error_code", 0), p.get("high_watermark", -1),
                                            p.get("log_start_offset", -1), p.get("records") or b"")
        # A partition the reply left out (Tansu leaves every partition out when it did not
        # wait) is not read: neither its bounds nor its records are known.
        return {tp: out.get(tp, PartitionRead(NO_ANSWER)) for tp in offsets}

    async def _call(self, node: int, api_key: int, highest: int, body: dict) -> dict:
        link = await self._link(node)
        try:
            return await asyncio.wait_for(link.call(api_key, link.version_of(api_key, highest),
                                                    body), READ_TIMEOUT_S)
        except (asyncio.TimeoutError, TimeoutError):
            link.close("a read timed out")  # its replies are matched in order: start afresh
            raise UpstreamUnavailable(f"upstream broker {node} did not answer within "
                                      f"{READ_TIMEOUT_S:.0f} s") from None

    async def _link(self, node: int) -> UpstreamLink:
        lock = self._opening.setdefault(node, asyncio.Lock())
        async with lock:
            link = self._links.get(node)
            if link is not None and link.closed is None:
                return link
            where = self.view.brokers.get(node)
            if where is None:
                await self._refresh()
                where = self.view.brokers.get(node)
            if where is None:
                raise UpstreamUnavailable(f"upstream broker {node} is not known")
            link = self._links[node] = await UpstreamLink(*where, self.view.settings).open()
            return link

    async def _refresh(self) -> None:
        """Read the upstream's metadata again, at most every ``REFRESH_S``."""
        if time.monotonic() - self._refreshed_at < REFRESH_S:
            return
        self._refreshed_at = time.monotonic()
        with contextlib.suppress(UpstreamUnavailable, OSError):
            await self.view.refresh()
