"""The durable log of one `__consumer_offsets` partition.

A partition actor releases a reply only once the records behind it are on disk (invariant 4),
and rebuilds its state after a restart from the latest snapshot plus the batches after it. This
module is that disk: append-only segments of CRC-framed batches, and snapshots that let old
segments go. It knows nothing of what a record means; records arrive already encoded.

Frame: 4-byte big-endian payload length, 4-byte big-endian CRC32C of the payload, payload =
msgpack list of record bytes. Segments are `<number>.log`, numbered one after another (from 1,
or from the snapshot's n); `snapshot-<n>.snap` holds the state as of the end of every segment
numbered below n, in frames of the same shape.

Loading cuts only what a crash mid-append leaves: a torn last frame at the end of the last
segment. Damage anywhere else (a flipped byte in an earlier segment, a bad frame followed by
good ones, a missing segment, a damaged snapshot) refuses the load with ``LogCorruptError``,
naming the file and byte offset, and changes nothing on disk (invariant 9).

One writer at a time: opening the log takes the next epoch (``actors.runtime.fencing``), and
every append and snapshot checks it under a lock, so an older incarnation that still runs
(a zombie) is refused with ``LogFencedError`` before it writes a byte.

A write or fsync that fails (a full disk, a failing device) leaves the log refusing writes
until ``recover``: it cuts the active segment back to the end of the last append that was
durable (whatever the failed one left, torn or whole, was never acknowledged and may not even
be on the disk after a failed fsync), checks that the disk takes a write again (a probe file),
and reads the log again, as a restart would, without giving up the epoch. Disk writes go
through a ``FileOps``, which tests replace to fail them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from actors.runtime.fencing import Fence, LogFencedError
from actors.runtime.fileops import FileOps
from actors.runtime.log_frames import (
    FRAME_HEADER,
    FRAME_HEADER_BYTES,
    encode_frame,
    encode_turn,
    is_torn_tail,
    scan_frames,
)
from actors.runtime.storage import LoadedLog, PartitionStorage

__all__ = [
    "FileOps", "LoadedLog", "LogCorruptError", "LogFencedError", "PartitionLog", "encode_frame",
]

logger = logging.getLogger(__name__)

DEFAULT_SEGMENT_MAX_BYTES = 64 * 1024 * 1024
SNAPSHOT_FRAME_MAX_RECORDS = 10_000  # keeps a 1M-record snapshot out of one giant frame
SNAPSHOT_FRAME_MAX_RECORD_BYTES = 4 * 1024 * 1024  # same, for a snapshot of few large records
FILE_NUMBER_DIGITS = 20  # zero padding, so names sort as numbers do
# Appends up to this size (one turn's records) are quick enough for the partition's event loop:
# one write of at most this much and one fsync (``PartitionStorage.quick_append_bytes``).
QUICK_APPEND_BYTES = 64 * 1024
# What recovery writes (and removes) to see that the disk takes writes again: a few turns' worth.
PROBE_BYTES = 64 * 1024
PROBE_FILE = "probe.tmp"

assert FRAME_HEADER.size == FRAME_HEADER_BYTES
_SEGMENT_NAME = re.compile(r"^(\d+)\.log$")
_SNAPSHOT_NAME = re.compile(r"^snapshot-(\d+)\.snap$")
_SNAPSHOT_TEMP_NAME = re.compile(r"^snapshot-\d+\.snap\.tmp$")


class LogCorruptError(Exception):
    """The log lost acknowledged state: a damaged snapshot, a damaged frame anywhere but the
    last segment's torn tail, or a missing segment (invariant 9).

    A torn tail of the last segment is the expected residue of a crash mid-append and is cut
    off. Everything else was acknowledged: loading stops, naming the file and byte offset, and
    keeps every byte, rather than serve less than was acknowledged.
    """


def _snapshot_frames(records: Iterable[bytes]) -> Iterator[bytes]:
    chunk: list[bytes] = []
    chunk_bytes = 0
    for record in records:
        chunk.append(record)
        chunk_bytes += len(record)
        full = len(chunk) >= SNAPSHOT_FRAME_MAX_RECORDS
        if full or chunk_bytes >= SNAPSHOT_FRAME_MAX_RECORD_BYTES:
            yield encode_frame(chunk)
            chunk, chunk_bytes = [], 0
    if chunk:
        yield encode_frame(chunk)


def _numbered(directory: Path, pattern: re.Pattern[str]) -> list[tuple[int, Path]]:
    found = [(m, p) for p in directory.iterdir() if (m := pattern.match(p.name))]
    return sorted((int(m.group(1)), p) for m, p in found)


class PartitionLog(PartitionStorage):
    """Segments plus snapshot for one partition; one writer (the partition actor) at a time.

    The local-disk ``PartitionStorage``: a directory, fenced by an epoch file and ``flock``.

    `append` is the group commit: one write and one fsync per mailbox turn, however many records
    the turn produced. After a failed write or fsync the log refuses further appends until
    `recover` (or a fresh `load` by a new process) has cut it back to what was durable.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        segment_max_bytes: int = DEFAULT_SEGMENT_MAX_BYTES,
        fsync: bool = True,
        file_ops: FileOps | None = None,
    ) -> None:
        if segment_max_bytes <= 0:
            raise ValueError(f"segment_max_bytes must be positive, got {segment_max_bytes}")
        self._directory = Path(directory)
        self._directory.mkdir(parents=True, exist_ok=True)
        self._segment_max_bytes = segment_max_bytes
        self._fsync = fsync
        self._ops = file_ops or FileOps()
        self._fence = Fence(self._directory, fsync, self._ops)
        self._loaded = False
        self._failed = False
        self._active: BinaryIO | None = None
        self._active_number = 0
        self._active_bytes = 0
        self._bytes_since_snapshot = 0
        # (segment number, bytes): the end of the last append known to be on disk (None until
        # the first load has read the log)
        self._durable: tuple[int, int] | None = None

    @property
    def directory(self) -> Path:
        return self._directory

    @property
    def epoch(self) -> int | None:
        """This writer's incarnation (taken by ``load``), None before."""
        return self._fence.epoch

    @property
    def failed(self) -> bool:
        """A write failed: nothing more is written until ``recover``."""
        return self._failed

    @property
    def quick_append_bytes(self) -> int:
        """A local write + fsync: quick for a turn's usual few records (the partition times
        each append and sends the next to a thread if one was slow)."""
        return QUICK_APPEND_BYTES

    @property
    def bytes_since_snapshot(self) -> int:
        """Segment bytes a load would replay after the snapshot; the caller snapshots when this
        grows. Counted from disk at load, so a crash-looping partition still gets to snapshot."""
        return self._bytes_since_snapshot

    def load(self) -> LoadedLog:
        """Take the next epoch (fencing every older writer), then read the latest snapshot and
        the segments after it, cutting a torn last append; ``LogCorruptError`` for damage
        anywhere else."""
        if self._loaded:
            raise RuntimeError("PartitionLog.load() may be called only once")
        with self._fence.locked():
            self._fence.take()
            return self._read()

    def recover(self) -> LoadedLog:
        """After a failed write: cut the log back to the last durable append and read it again,
        keeping this writer's epoch (``LogFencedError`` if a newer incarnation took over)."""
        if self._fence.epoch is None:
            raise RuntimeError("PartitionLog.load() must be called before recover()")
        with self._fence.held():
            with contextlib.suppress(OSError):
                self.close_segment()
            if self._durable is not None:  # else the load never finished: nothing appended
                self._cut_to(*self._durable)
            self._probe()
            self._loaded = self._failed = False
            self._active_number = 0
            return self._read()

    def _probe(self) -> None:
        """Write and fsync ``PROBE_BYTES`` beside the log, then remove them: a disk that is still
        full or failing fails here, before the (costly) reload, instead of at the next turn."""
        path = self._directory / PROBE_FILE
        try:
            with open(path, "wb") as f:
                self._ops.write(f, bytes(PROBE_BYTES))
                f.flush()
                if self._fsync:
                    self._ops.fsync(f.fileno())
        finally:
            path.unlink(missing_ok=True)

    def _cut_to(self, number: int, size: int) -> None:
        """Drop every byte after ``size`` of segment ``number``, and every later segment."""
        path = self._segment_path(number)
        if path.exists():
            with open(path, "r+b") as f:
                f.truncate(size)
                if self._fsync:
                    self._ops.fsync(f.fileno())
        for later, later_path in _numbered(self._directory, _SEGMENT_NAME):
            if later > number:
                later_path.unlink()
        self._sync_directory()

    def check_fence(self) -> None:
        """``LogFencedError`` if a newer incarnation opened the log: a turn that writes nothing
        asks this before its replies go out, so a zombie's reads stop too."""
        self._fence.check()

    def _read(self) -> LoadedLog:
        started = time.perf_counter()
        for temp in self._directory.iterdir():
            if _SNAPSHOT_TEMP_NAME.match(temp.name):  # a crash mid-snapshot; never published
                temp.unlink()
        snapshot_number, snapshot = self._load_snapshot()
        batches, valid_bytes, truncated_bytes = self._load_segments(snapshot_number)
        self._open_active(self._active_number or max(snapshot_number, 1))
        self._durable = (self._active_number, self._active_bytes)
        self._bytes_since_snapshot = valid_bytes
        self._loaded = True
        records = len(snapshot) + sum(len(batch) for batch in batches)
        seconds = time.perf_counter() - started
        loaded = LoadedLog(snapshot, batches, records, seconds, truncated_bytes)
        logger.info(
            "loaded %s: %d records (%d from snapshot, %d batches) in %.3f s, %.0f records/s",
            self._directory,
            records,
            len(snapshot),
            len(batches),
            loaded.seconds,
            loaded.records_per_s,
        )
        return loaded

    def append(self, records: list[bytes]) -> None:
        """Make one mailbox turn's records durable before any of its replies go out."""
        self._require_writable()
        if not records:
            return
        frame = encode_turn(records)  # one write, however many frames: a turn is whole or torn
        with self._fence.held():
            try:
                if (
                    self._active_bytes > 0
                    and self._active_bytes + len(frame) > self._segment_max_bytes
                ):
                    self._roll(self._active_number + 1)
                assert self._active is not None
                view = memoryview(frame)
                while view:  # regular files take it in one call; the loop is for a short write
                    view = view[self._ops.write(self._active, view) :]
                if self._fsync:
                    self._ops.fsync(self._active.fileno())
            except OSError:
                self._failed = True
                raise
            self._active_bytes += len(frame)
            self._durable = (self._active_number, self._active_bytes)
            self._bytes_since_snapshot += len(frame)

    def write_snapshot(self, records: Iterable[bytes]) -> None:
        """Publish the compacted state as of the end of the log, then drop what it covers.

        Crash-safe at every step: the snapshot appears whole or not at all (temp + os.replace),
        and until older segments are deleted, load ignores them because the name says which
        segments the snapshot covers. A failure while the temp file is written leaves the log
        as it was (and writable); one while it is published fails the log until ``recover``.
        """
        self._require_writable()
        self._fence.check()  # a zombie need not spend the writing; the lock below decides
        number = self._active_number + 1
        final = self._directory / f"snapshot-{number:0{FILE_NUMBER_DIGITS}d}.snap"
        temp = final.with_name(final.name + ".tmp")
        try:
            with open(temp, "wb") as f:
                for frame in _snapshot_frames(records):
                    self._ops.write(f, frame)
                f.flush()
                if self._fsync:
                    self._ops.fsync(f.fileno())
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        with self._fence.held():
            try:
                os.replace(temp, final)
                self._sync_directory()
                self._roll(number)
                self._delete_older_than(number)
            except OSError:
                self._failed = True
                raise
            finally:
                temp.unlink(missing_ok=True)
        self._bytes_since_snapshot = 0

    def close_segment(self) -> None:
        if self._active is not None:
            self._active.close()
            self._active = None

    def close(self) -> None:
        self.close_segment()
        self._fence.close()

    def __enter__(self) -> PartitionLog:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _require_writable(self) -> None:
        if not self._loaded:
            raise RuntimeError("PartitionLog.load() must be called before writing")
        if self._failed:
            raise RuntimeError("an earlier write failed; recover() first")
        if self._active is None:
            raise RuntimeError("PartitionLog is closed")

    def _load_snapshot(self) -> tuple[int, list[bytes]]:
        snapshots = _numbered(self._directory, _SNAPSHOT_NAME)
        if not snapshots:
            return 0, []
        number, path = snapshots[-1]
        chunks, end, problem = scan_frames(path)
        if problem is not None:
            raise LogCorruptError(f"snapshot {path} is corrupt: {problem} at offset {end}")
        return number, [record for chunk in chunks for record in chunk]

    def _load_segments(self, first_number: int) -> tuple[list[list[bytes]], int, int]:
        """Returns the batches, the bytes they span, and the bytes cut off (a torn tail).

        Only the last segment's tail can be a crash's torn append (``is_torn_tail``): it is cut,
        with a warning. Damage anywhere else, or a segment missing from the sequence, is lost
        acknowledged state: ``LogCorruptError`` naming the file and byte offset, and nothing
        is cut or removed, so the bytes stay for whoever repairs the log.
        """
        self._delete_older_than(first_number)  # finishes a snapshot's interrupted cleanup
        segments = _numbered(self._directory, _SEGMENT_NAME)
        self._check_contiguous(first_number, segments)
        batches: list[list[bytes]] = []
        valid_bytes = 0
        for index, (number, path) in enumerate(segments):
            found, end, problem = scan_frames(path)
            if problem is not None:
                last = index == len(segments) - 1
                if not (last and is_torn_tail(path, end)):
                    raise LogCorruptError(
                        f"{path}: {problem} at byte offset {end}"
                        + ("" if last else f", before {len(segments) - index - 1} later "
                           "segment(s)")
                        + "; acknowledged records may follow it, so the log is not loaded "
                        "and every byte is kept"
                    )
            batches.extend(found)
            valid_bytes += end
            self._active_number = number
            if problem is not None:
                return batches, valid_bytes, self._truncate(path, end, problem)
        return batches, valid_bytes, 0

    def _check_contiguous(self, first_number: int, segments: list[tuple[int, Path]]) -> None:
        """Segments are numbered one after another from the snapshot's number (from 1 without
        one), and a new one is created (and its directory entry synced) only after the one
        before it: a number missing from the sequence is a lost segment."""
        expected = max(first_number, 1)
        for number, _ in segments:
            if number != expected:
                raise LogCorruptError(
                    f"{self._segment_path(expected)}: missing from byte offset 0 (the next "
                    f"segment found is {self._segment_path(number).name}); acknowledged records "
                    "may be lost with it, so the log is not loaded and every byte is kept"
                )
            expected += 1

    def _truncate(self, path: Path, end: int, problem: str) -> int:
        dropped = path.stat().st_size - end
        logger.warning(
            "%s: %s at offset %d: a torn last append (never acknowledged); cut: %d bytes "
            "dropped",
            path,
            problem,
            end,
            dropped,
        )
        with open(path, "r+b") as f:
            f.truncate(end)
            if self._fsync:
                self._ops.fsync(f.fileno())
        self._sync_directory()
        return dropped

    def _segment_path(self, number: int) -> Path:
        return self._directory / f"{number:0{FILE_NUMBER_DIGITS}d}.log"

    def _open_active(self, number: int) -> None:
        path = self._segment_path(number)
        created = not path.exists()
        self._active = open(path, "ab", buffering=0)  # noqa: SIM115 - lives until close()
        self._active_number = number
        self._active_bytes = os.fstat(self._active.fileno()).st_size
        if created:
            self._sync_directory()

    def _roll(self, number: int) -> None:
        try:
            self.close_segment()
            self._open_active(number)
        except OSError:
            self._failed = True
            raise
        self._durable = (number, self._active_bytes)

    def _delete_older_than(self, number: int) -> None:
        stale = [p for n, p in _numbered(self._directory, _SEGMENT_NAME) if n < number]
        stale += [p for n, p in _numbered(self._directory, _SNAPSHOT_NAME) if n < number]
        for path in stale:
            path.unlink()
        if stale:
            self._sync_directory()

    def _sync_directory(self) -> None:
        """Makes a create, rename or delete itself durable, not only the file contents."""
        if not self._fsync:
            return
        fd = os.open(self._directory, os.O_RDONLY)
        try:
            self._ops.fsync(fd)
        finally:
            os.close(fd)
