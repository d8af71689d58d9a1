"""``MemoryStorage``: a ``PartitionStorage`` in memory, for tests of the turn logic without
Ray or a disk.

Several ``MemoryStorage`` objects opened on one ``MemoryMedium`` are incarnations of one
partition: each ``load`` takes the medium's next epoch, and from then on every write of an
older incarnation raises ``LogFencedError`` and writes nothing, as the local log's epoch file
does. ``MemoryMedium.failing`` makes appends and snapshots fail (``OSError``, ENOSPC) until it
is cleared, as a full disk does; a failed append leaves nothing behind (an append is one
list operation, so it cannot tear).
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterable

from actors.runtime.fencing import LogFencedError
from actors.runtime.storage import LoadedLog, PartitionStorage, require_writable


class MemoryMedium:
    """What survives an incarnation: the epoch, the latest snapshot and the batches after it."""

    def __init__(self) -> None:
        self.epoch = 0
        self.snapshot: list[bytes] = []
        self.batches: list[list[bytes]] = []
        self.failing = False  # appends and snapshots raise OSError while set

    def records(self) -> list[bytes]:
        """Every durable record, snapshot first, in the order a load replays them."""
        return [*self.snapshot, *(r for batch in self.batches for r in batch)]

    def fail_if_failing(self) -> None:
        if self.failing:
            raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (injected)")


class MemoryStorage(PartitionStorage):
    """One incarnation's view of a ``MemoryMedium``."""

    def __init__(self, medium: MemoryMedium | None = None) -> None:
        self.medium = medium if medium is not None else MemoryMedium()
        self._epoch: int | None = None
        self._failed = False
        self._closed = False
        self._bytes_since_snapshot = 0

    @property
    def epoch(self) -> int | None:
        return self._epoch

    @property
    def failed(self) -> bool:
        return self._failed

    @property
    def bytes_since_snapshot(self) -> int:
        return self._bytes_since_snapshot

    def load(self) -> LoadedLog:
        if self._epoch is not None:
            raise RuntimeError("MemoryStorage.load() may be called only once")
        self.medium.epoch += 1
        self._epoch = self.medium.epoch
        return self._read()

    def recover(self) -> LoadedLog:
        if self._epoch is None:
            raise RuntimeError("MemoryStorage.load() must be called before recover()")
        self.check_fence()
        self.medium.fail_if_failing()  # as the local log's probe: still failing, still refused
        self._failed = False
        return self._read()

    def append(self, records: list[bytes]) -> None:
        self._require_writable()
        if not records:
            return
        self.check_fence()
        try:
            self.medium.fail_if_failing()
        except OSError:
            self._failed = True
            raise
        self.medium.batches.append(list(records))
        self._bytes_since_snapshot += sum(map(len, records))

    def check_fence(self) -> None:
        if self.medium.epoch != self._epoch:
            raise LogFencedError(
                f"memory storage: epoch {self._epoch} fenced by a newer incarnation "
                f"({self.medium.epoch})"
            )

    def write_snapshot(self, records: Iterable[bytes]) -> None:
        self._require_writable()
        self.check_fence()
        snapshot = list(records)
        self.medium.fail_if_failing()  # nothing published: the log stays as it was
        self.medium.snapshot, self.medium.batches = snapshot, []
        self._bytes_since_snapshot = 0

    def close(self) -> None:
        self._closed = True

    def _require_writable(self) -> None:
        require_writable("MemoryStorage", self._epoch, self._failed, self._closed)

    def _read(self) -> LoadedLog:
        started = time.perf_counter()
        snapshot = list(self.medium.snapshot)
        batches = [list(batch) for batch in self.medium.batches]
        self._bytes_since_snapshot = sum(len(r) for batch in batches for r in batch)
        records = len(snapshot) + sum(map(len, batches))
        return LoadedLog(snapshot, batches, records, time.perf_counter() - started, 0)
