"""``PartitionStorage``: the one seam between a partition's turn logic and where its log lives.

A partition asks its storage for five things and nothing else: ``load`` what was durable (taking
the next writer epoch, which fences every older writer), ``append`` one turn's records durably
(or refuse: ``LogFencedError`` when a newer writer took over, ``OSError`` when the medium
failed), ``check_fence`` before releasing a turn that wrote nothing, ``write_snapshot`` of the
compacted state, and ``recover`` after a failed append (read again what was durable, keeping the
epoch). Records arrive encoded (bytes); what they mean is the shard's business.

The interface holds no file-system notion (no paths, no locks, no fsync): the local log
(``actors.runtime.log.PartitionLog``, a directory with flock fencing) is one implementation,
``actors.runtime.memory_storage.MemoryStorage`` (for tests, fencing included) another, and an
object-store log (put-if-absent on the next slot) fits behind the same five calls.

Guarantees every implementation gives: an ``append`` that returns is durable and will be in
every later ``load``; an ``append`` that raises left nothing a later ``load`` or ``recover``
returns; once a newer writer loaded, every write of an older one raises ``LogFencedError``
and writes nothing.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable
from dataclasses import dataclass

from actors.runtime.fencing import LogFencedError

__all__ = ["LoadedLog", "LogFencedError", "PartitionStorage", "require_writable"]


@dataclass(frozen=True)
class LoadedLog:
    """What a restarting partition replays: `snapshot` first, then `batches` in order."""

    snapshot: list[bytes]
    batches: list[list[bytes]]
    records: int
    seconds: float
    truncated_bytes: int

    @property
    def records_per_s(self) -> float:
        """Load speed, the number that bounds how long a restarted partition is unavailable."""
        if self.records == 0:
            return 0.0
        return self.records / self.seconds if self.seconds > 0 else float("inf")


class PartitionStorage(abc.ABC):
    """The durable log of one partition, written by one incarnation at a time."""

    @property
    @abc.abstractmethod
    def epoch(self) -> int | None:
        """This writer's incarnation, taken by ``load`` (None before)."""

    @property
    @abc.abstractmethod
    def failed(self) -> bool:
        """An append (or a snapshot's publication) failed: nothing more until ``recover``."""

    @property
    @abc.abstractmethod
    def bytes_since_snapshot(self) -> int:
        """Bytes a load would replay after the latest snapshot: the caller snapshots when
        this outgrows the compacted state."""

    @property
    def quick_append_bytes(self) -> int:
        """The largest append (in record bytes) this storage makes durable fast enough to
        run on the partition's event loop instead of a worker thread, whose hop costs about
        as much as a local fsync; 0 (the default): always a thread, as a network round trip
        (an object store's PUT) must be."""
        return 0

    @property
    def fence_check_interval_s(self) -> float:
        """How often at most an idle partition asks ``check_fence``, and whether in a worker
        thread (> 0) or on the event loop (0, the default: a local epoch file read, cheap).
        A network check (an object store's HEAD) is rate-limited: a zombie's reads may go on
        for this long after a newer writer loaded, its writes never (they are conditional)."""
        return 0.0

    @abc.abstractmethod
    def load(self) -> LoadedLog:
        """Take the next epoch (fencing every older writer), then read what is durable.
        Called once per instance."""

    @abc.abstractmethod
    def recover(self) -> LoadedLog:
        """Read again what is durable, keeping this writer's epoch (``LogFencedError`` if a
        newer one took over): after a failed append, or to rebuild a shard a bug broke."""

    @abc.abstractmethod
    def append(self, records: list[bytes]) -> None:
        """Make one turn's records durable, all or none; raises ``LogFencedError`` (a newer
        writer) or ``OSError`` (the medium failed; ``failed`` is then True)."""

    @abc.abstractmethod
    def check_fence(self) -> None:
        """``LogFencedError`` if a newer writer loaded: a turn that writes nothing asks this
        before its replies go out, so a zombie's reads stop too."""

    @abc.abstractmethod
    def write_snapshot(self, records: Iterable[bytes]) -> None:
        """Publish the compacted state as of the end of the log; the records it covers need
        not be replayed again. ``OSError`` with ``failed`` False leaves the log as it was."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release what this writer holds; it writes nothing more."""


def require_writable(kind: str, epoch: int | None, failed: bool, closed: bool) -> None:
    """The misuse every implementation refuses alike: a write before ``load``, after a failed
    write (``recover`` first) or after ``close``."""
    if epoch is None:
        raise RuntimeError(f"{kind}.load() must be called before writing")
    if failed:
        raise RuntimeError("an earlier write failed; recover() first")
    if closed:
        raise RuntimeError(f"{kind} is closed")
