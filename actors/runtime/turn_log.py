"""How a turn's records become durable: one append per turn, the compacted state, snapshots.

``PartitionTurns`` decides when a turn's records are written and what happens when a write
fails; this holds where the write runs and what it costs. A small append to a quick storage
runs on the event loop (the hop to a worker thread and back cost as much as the fsync), a
large or slow one in a thread; every record written also goes into the compacted state (the
latest record of each key), which a snapshot writes out once the log outgrows it. A turn that
writes nothing asks the storage whether this writer is still its own (``check_fence``), as
often as the storage's check is cheap enough for.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from actors.runtime.compaction import CompactedState
from actors.runtime.fencing import LogFencedError
from actors.runtime.storage import PartitionStorage
from protocol.codec import encode_record
from protocol.records import Record

log = logging.getLogger(__name__)

# Snapshot once the log since the last snapshot outgrows this and the compacted state twice.
SNAPSHOT_MIN_BYTES = 16 << 20
# A snapshot that could not be written is tried again no sooner than this (the log is fine).
SNAPSHOT_RETRY_S = 10.0
# A small append to a storage that calls it quick (``PartitionStorage.quick_append_bytes``:
# the local log's write + fsync, ~0.15 ms) runs on the event loop itself: the hop to a worker
# thread and back (~0.1 ms) cost as much as the fsync. An append that took longer than this
# sends the next ones to a thread until one is quick again, so a slow disk stalls the loop
# (the requests and sockets it serves meanwhile) past this bound once, not turn after turn.
LOOP_APPEND_MAX_S = 0.001


class TurnLog:
    """One partition's appends and compacted state (see the module docstring)."""

    def __init__(self, name: str, storage: PartitionStorage,
                 in_thread: Callable[..., Awaitable]) -> None:
        self.name = name
        self.storage = storage
        self.compacted = CompactedState()
        self._in_thread = in_thread
        self._loop_appends = True  # the last append was quick: the next may run on the loop
        self._append_s = 0.0  # how long the last append took in the storage
        self._snapshot_retry_at = 0.0
        self._fence_checked_at = float("-inf")  # monotonic time of the last check (or append)
        self._fence_check: asyncio.Future | None = None  # the check running in the background

    async def append(self, records: list[Record]) -> None:
        """Make the records durable (one append); raises what the storage raises. Either way
        (loop or thread) it returns only once they are."""
        encoded = [encode_record(r) for r in records]
        if self._loop_appends and sum(map(len, encoded)) <= self.storage.quick_append_bytes:
            self._timed_append(encoded)
        else:
            await self._in_thread(self._timed_append, encoded)
        self._loop_appends = self._append_s <= LOOP_APPEND_MAX_S
        self._fence_checked_at = time.monotonic()  # an append is a fenced write that landed
        for record, data in zip(records, encoded, strict=True):
            self.compacted.add(record, data)

    async def check_fence(self) -> None:
        """Before a turn that wrote nothing releases its replies: is this writer still the
        storage's? ``LogFencedError`` if a newer one loaded. A cheap check (a local epoch
        file) runs here, every turn. A network check (an object store's HEAD) runs in the
        background, in a worker thread, at most once per ``fence_check_interval_s`` (an append
        in between counts as one), so a slow store never holds a turn: its verdict is acted
        on at the next idle turn. A store that fails the check is no fence: logged, asked
        again an interval later; only a confirmed fence stops the partition serving."""
        interval = self.storage.fence_check_interval_s
        if interval <= 0:
            self.storage.check_fence()
            return
        check = self._fence_check
        if check is not None and check.done():
            self._fence_check = None
            error = None if check.cancelled() else check.exception()
            if isinstance(error, LogFencedError):
                raise error
            if error is not None:
                log.warning("%s: fence check failed (%s); asking again later", self.name, error)
        now = time.monotonic()
        if self._fence_check is None and now - self._fence_checked_at >= interval:
            self._fence_checked_at = now
            self._fence_check = asyncio.ensure_future(self._in_thread(self.storage.check_fence))
            self._fence_check.add_done_callback(_retrieve)

    def _timed_append(self, encoded: list[bytes]) -> None:
        started = time.perf_counter()
        self.storage.append(encoded)
        self._append_s = time.perf_counter() - started

    async def maybe_snapshot(self) -> None:
        """Compact the log once it outgrows the state; a snapshot that cannot be written costs
        nothing but a retry later, unless it broke the log (then the turn loop recovers)."""
        grown = self.storage.bytes_since_snapshot > max(
            SNAPSHOT_MIN_BYTES, 2 * self.compacted.size_bytes
        )
        if not grown or time.monotonic() < self._snapshot_retry_at:
            return
        try:
            await self._in_thread(self.storage.write_snapshot, self.compacted.records())
        except OSError:
            if self.storage.failed:
                raise
            log.warning("%s: snapshot not written; retrying later", self.name, exc_info=True)
            self._snapshot_retry_at = time.monotonic() + SNAPSHOT_RETRY_S


def _retrieve(check: asyncio.Future) -> None:
    """Mark a background check's exception seen (it is read at the next idle turn, or never if
    the partition stopped meanwhile; asyncio would otherwise log it as lost)."""
    if not check.cancelled():
        check.exception()
