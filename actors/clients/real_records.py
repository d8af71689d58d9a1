"""Consumer actors' reads of the upstream's real records, handed to the user's function.

In front of an upstream, a ``ConsumerClient`` keeps its group membership on Cohort's KIP-848
path as always, and reads the records of the partitions it owns from the upstream (Fetch to
each partition's leader, ``actors/upstream/reader.py``), from the positions its members'
``StreamProgress`` give: the committed offset, then as far as processing got. Each partition's
new records go to the user's ``process(records)`` in batches of at most ``max_poll_records``;
a batch counts as processed (and becomes committable) only once the function returned, so a
killed actor's next owner starts from the last commit and every record is processed at least
once. The function runs in the actor, between heartbeats (as a Kafka application's poll loop
runs its processing between polls): one that takes longer than the session timeout loses
its partitions, like a Kafka consumer past ``max.poll.interval.ms``.

A function that raises leaves the batch unprocessed: it is handed over again after
``RETRY_S`` (the error is logged and kept in ``errors``), never skipped.

A share consumer actor (``ShareRecords``) reads the same way what it acquired, and
acknowledges each range after its function returned.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from actors.upstream.reader import OFFSET_OUT_OF_RANGE, UpstreamReader
from actors.upstream.settings import UpstreamSettings
from actors.upstream.view import UpstreamView
from protocol.client.stream_progress import StreamProgress
from protocol.share.messages import ACK_ACCEPT, ACK_RELEASE
from protocol.wire.record_batches import ConsumerRecord, RecordBatchError, decode, reach

log = logging.getLogger(__name__)

Process = Callable[[list[ConsumerRecord]], Any]
MAX_POLL_RECORDS = 500  # Kafka's max.poll.records
RETRY_S = 1.0
MAX_ERRORS_KEPT = 100


def _count_only(records: list[ConsumerRecord]) -> None:
    """The function of a consumer given none: records are read, counted and committed."""


class RealRecords:
    """One consumer actor's reads of real records (see the module docstring)."""

    def __init__(self, settings: UpstreamSettings, process: Process | None = None,
                 max_poll_records: int = MAX_POLL_RECORDS) -> None:
        if max_poll_records < 1:
            raise ValueError("max_poll_records must be at least 1")
        self.reader = UpstreamReader(UpstreamView(settings))
        self.process = process or _count_only
        self.max_poll_records = max_poll_records
        self.records_processed = 0
        self.errors: deque[str] = deque(maxlen=MAX_ERRORS_KEPT)
        self._retry_at: dict[tuple[str, int], float] = {}

    async def step(self, progresses: list[StreamProgress]) -> int:
        """Read every owned partition once from its position and process what came; how many
        records were processed."""
        owner: dict[tuple[str, int], StreamProgress] = {}
        wanted: dict[tuple[str, int], int] = {}
        now = time.monotonic()
        for progress in progresses:
            for tp, position in progress.positions().items():
                if self._retry_at.get(tp, 0.0) <= now:
                    owner[tp], wanted[tp] = progress, position
        if not wanted:
            return 0
        reads = await self.reader.fetch(wanted)
        behind = [tp for tp, r in reads.items() if r.error_code == OFFSET_OUT_OF_RANGE]
        if behind:
            for tp, start in (await self.reader.earliest(behind)).items():
                owner[tp].reset(tp, start, time.monotonic())
        done = 0
        for tp, read in reads.items():
            if read.error_code == 0:
                done += self._process(owner[tp], tp, wanted[tp], read.records)
        return done

    def _process(self, progress: StreamProgress, tp: tuple[str, int], position: int,
                 data: bytes) -> int:
        try:
            records = decode(data, tp[0], tp[1], from_offset=position)
        except RecordBatchError as e:
            self._failed(tp, f"{tp[0]}[{tp[1]}] at {position}: {e}")
            return 0
        if not records:  # only transaction markers past the position: step over them
            after = reach(data)
            if after is not None and after > position:
                progress.processed(tp, after, time.monotonic(), 0)
            return 0
        done = 0
        for i in range(0, len(records), self.max_poll_records):
            batch = records[i:i + self.max_poll_records]
            try:
                self.process(batch)
            except Exception as e:  # the user's function: its batch is handed over again
                self._failed(tp, f"process() raised on {tp[0]}[{tp[1]}] offsets "
                                 f"{batch[0].offset}..{batch[-1].offset}: {e!r}")
                break
            progress.processed(tp, batch[-1].offset + 1, time.monotonic(), len(batch))
            done += len(batch)
        self.records_processed += done
        return done

    def _failed(self, tp: tuple[str, int], message: str) -> None:
        log.warning("%s", message)
        self.errors.append(message)
        self._retry_at[tp] = time.monotonic() + RETRY_S

    def close(self) -> None:
        self.reader.close()


class ShareRecords:
    """A share consumer actor's reads of the upstream's records (KIP-932 in front of an
    upstream): its partitions' bounds, and the records of each range it acquired, handed to
    the user's function. A range is acknowledged ACCEPT once the function returned, RELEASE
    when it raised or the upstream could not give the records now (delivered again, up to the
    group's delivery count limit, then archived as Kafka archives a record that keeps
    failing)."""

    def __init__(self, settings: UpstreamSettings, process: Process | None = None) -> None:
        self.reader = UpstreamReader(UpstreamView(settings))
        self.process = process or _count_only
        self.records_processed = 0
        self.errors: deque[str] = deque(maxlen=MAX_ERRORS_KEPT)

    async def bounds(self, keys: list[tuple[str, int]], names: Mapping[str, str]
                     ) -> dict[tuple[str, int], tuple[int, int]]:
        """(log start, log end) of each (topic id, partition) the upstream answered for."""
        named = {(names[tid], p): (tid, p) for tid, p in keys if tid in names}
        return {named[k]: b for k, b in (await self.reader.bounds(list(named))).items()}

    async def handle(self, name: str, partition: int, first: int, last: int) -> int:
        """Process the records of offsets ``first..last``; the acknowledgement to send."""
        data = await self.reader.batches((name, partition), [(first, last)])
        if data is None:
            return ACK_RELEASE
        try:
            records = [r for r in decode(data, name, partition, from_offset=first)
                       if r.offset <= last]
            self.process(records)
        except Exception as e:  # a batch Cohort cannot read, or the user's function raised
            message = f"{name}[{partition}] offsets {first}..{last}: {e!r}"
            log.warning("%s", message)
            self.errors.append(message)
            return ACK_RELEASE
        self.records_processed += len(records)
        return ACK_ACCEPT

    def close(self) -> None:
        self.reader.close()
