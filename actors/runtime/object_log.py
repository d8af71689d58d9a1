"""``ObjectLog``: a partition's log in an object store (S3, GCS, Azure, MinIO, SeaweedFS...),
fenced by conditional writes instead of locks.

One object per durable turn, the *slots* ``<name>/log/<seq:020d>`` (format in
``object_slots``), each written once with put-if-absent (``If-None-Match: *``). Opening the log
(``load``) lists the slots, reads the latest snapshot and the slots after it (in parallel),
then claims the next slot with a ``FENCE`` object carrying its epoch (one more than the
newest epoch found). Every append is one put-if-absent of the writer's next slot, so an older
incarnation's next append finds the slot taken by someone else and is fenced
(``LogFencedError``); nothing it writes after that can land, because every slot it could write
is the next one it has not written, which a newer writer already took. No lock is held between
writes, so a frozen process blocks no one.

- **An append that returned is in every later load**: the slot exists before ``append``
  returns; a later opener lists it, reads it, and claims a slot after it. A lister that did
  not see it claims that very slot, and then the append fails instead (fenced).
- **An ambiguous PUT** (timeout, reset after retries) is settled by reading the slot back: our
  bytes there = written; someone else's = fenced; nothing (or the read failed) = ``failed``
  and ``OSError``. ``recover`` then claims that slot with a fence, so a late-landing copy of
  the PUT can never appear after the turn was answered as failed; if the copy landed first,
  ``recover`` finds it and replays it (durable, though its requests were refused: a retried
  request meets its own effect, as after any Kafka request timeout).
- **Snapshots** bound the objects a load reads: the snapshot object is written first, then a
  ``MARKER`` slot naming it goes through the fenced append path; only after the marker landed
  are the slots it covers deleted (best effort). A snapshot whose marker never landed is
  ignored by loads. ``bytes_since_snapshot`` counts each slot as ``SLOT_WEIGHT_BYTES`` on top
  of its bytes, so the caller's byte trigger also fires on object count.
- **Deleting never reopens a slot to a zombie.** A deleted key can be created again, so two
  rules keep an old incarnation from writing into the range a snapshot deleted. (1) Fence
  slots are never deleted (one per incarnation): an old writer's next slot, once someone else
  wrote it, is always a newer incarnation's fence (any other writer of that slot would have
  had to write the slot before it, which is the old writer's), so its put-if-absent keeps
  failing. (2) An opener that froze between its listing and its fence could land that fence in
  a deleted range: after the fence it lists the snapshots, and one past its slot means its
  view was stale: it reads again (``load``) or is fenced (``recover``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor

from obstore.store import ObjectStore

from actors.runtime.fencing import LogFencedError
from actors.runtime.log import LogCorruptError
from actors.runtime.object_slots import (
    BATCH,
    FENCE,
    MARKER,
    SLOT_HEADER,
    AlreadyExistsError,
    ObjectOps,
    SlotCorruptError,
    decode_slot,
    encode_slot,
    frame,
    snapshot_bytes,
    unframe,
)
from actors.runtime.storage import LoadedLog, PartitionStorage, require_writable

log = logging.getLogger(__name__)

# What one slot weighs in ``bytes_since_snapshot``: a load pays a GET per slot, so with a
# small state the caller's 16 MiB trigger snapshots every 256 slots.
SLOT_WEIGHT_BYTES = 64 << 10
READ_WORKERS = 32  # parallel GETs of a load
OPEN_ATTEMPTS = 20  # opens raced by another writer, retried from the listing
# An idle partition HEADs its next slot at most this often, in a worker thread (see
# ``PartitionStorage.fence_check_interval_s``): how long a zombie may still serve reads.
FENCE_CHECK_INTERVAL_S = 0.25


class ObjectLog(PartitionStorage):
    """One incarnation's writer of the log under ``name`` in ``store``."""

    def __init__(self, store: ObjectStore, name: str, ops: ObjectOps | None = None) -> None:
        self._store = store
        self.name = name.strip("/")
        self._ops = ops or ObjectOps()
        self._epoch: int | None = None
        self._next = 0  # the next slot this writer writes
        self._failed = False
        self._closed = False
        self._fenced = False
        self._bytes = 0
        self._slots = 0  # slots a load would read after the snapshot
        # Slots known not to be fences (read at load or written here): what a snapshot may
        # delete. Fences are never deleted (see the module doc: they stop zombies).
        self._deletable: list[int] = []

    # ------------------------------------------------------------------ the seam

    @property
    def epoch(self) -> int | None:
        return self._epoch

    @property
    def failed(self) -> bool:
        return self._failed

    @property
    def bytes_since_snapshot(self) -> int:
        return self._bytes + self._slots * SLOT_WEIGHT_BYTES

    @property
    def fence_check_interval_s(self) -> float:
        return FENCE_CHECK_INTERVAL_S

    @property
    def next_slot(self) -> int:
        """The slot this writer's next append puts (for tests and the bench)."""
        return self._next

    def load(self) -> LoadedLog:
        if self._epoch is not None:
            raise RuntimeError("ObjectLog.load() may be called only once")
        return self._open(keep_epoch=False)

    def recover(self) -> LoadedLog:
        if self._epoch is None:
            raise RuntimeError("ObjectLog.load() must be called before recover()")
        loaded = self._open(keep_epoch=True)
        self._failed = False
        return loaded

    def append(self, records: list[bytes]) -> None:
        self._require_writable()
        if not records:
            return
        self._write_slot(encode_slot(BATCH, self._epoch, frame(records)))
        self._deletable.append(self._next - 1)
        self._bytes += sum(map(len, records))
        self._slots += 1

    def check_fence(self) -> None:
        """One HEAD of the next slot: taken (by a newer writer; this one has not written it)
        means fenced."""
        if self._epoch is None:
            raise RuntimeError("ObjectLog.load() must be called first")
        if self._fenced or self._ops.exists(self._store, self._slot_key(self._next)):
            self._fence(f"slot {self._next} taken by a newer incarnation")

    def write_snapshot(self, records: Iterable[bytes]) -> None:
        self._require_writable()
        seq = self._next
        key = f"{self.name}/snapshot/{seq:020d}-{self._epoch:010d}"
        self._ops.put(self._store, key, snapshot_bytes(records), create=False)
        self._write_slot(encode_slot(MARKER, self._epoch, key.encode()))
        self._bytes, self._slots = 0, 0  # the marker is read with the snapshot
        covered, self._deletable = self._deletable, [seq]
        try:
            self._delete_covered(covered, seq, key)
        except OSError:
            log.warning("%s: slots before snapshot %d not deleted (left in the store)",
                        self.name, seq, exc_info=True)

    def close(self) -> None:
        self._closed = True

    # ------------------------------------------------------------------ writing

    def _require_writable(self) -> None:
        if self._fenced:
            self._fence("fenced earlier")
        require_writable("ObjectLog", self._epoch, self._failed, self._closed)

    def _slot_key(self, seq: int) -> str:
        return f"{self.name}/log/{seq:020d}"

    def _write_slot(self, data: bytes) -> None:
        """Put-if-absent of the next slot; fenced if another writer holds it."""
        key = self._slot_key(self._next)
        try:
            self._ops.put(self._store, key, data, create=True)
        except AlreadyExistsError:
            self._settle(key, data, ambiguous=None)
        except OSError as e:
            self._settle(key, data, ambiguous=e)
        self._next += 1

    def _settle(self, key: str, data: bytes, ambiguous: OSError | None) -> None:
        """Read the slot back: our bytes (a retried or lost-reply PUT) = written; another
        writer's = fenced; none, or unreadable, after an ambiguous PUT = failed."""
        try:
            found = self._ops.get(self._store, key)
        except FileNotFoundError:
            found = None
        except OSError:
            found = None
        if found == data:
            return
        if found is not None:
            self._fence(f"{key} holds another writer's bytes")
        self._failed = True
        raise OSError(f"{self.name}: write of {key} failed ({ambiguous or 'vanished'})")

    def _fence(self, why: str) -> None:
        self._fenced = True
        raise LogFencedError(f"{self.name}: epoch {self._epoch} fenced ({why})")

    def _delete_covered(self, covered: list[int], seq: int, snapshot_key: str) -> None:
        """The non-fence slots before ``seq`` and the older snapshots: a load reads neither."""
        old_slots = [self._slot_key(s) for s in covered if s < seq]
        old_snapshots = [k for k in self._ops.list(self._store, f"{self.name}/snapshot/")
                         if _seq_of(k) < seq and k != snapshot_key]
        if old_slots or old_snapshots:
            self._ops.delete(self._store, old_slots + old_snapshots)

    # ------------------------------------------------------------------ opening

    def _open(self, keep_epoch: bool) -> LoadedLog:
        """List, read, claim the next slot; retried from the listing when another writer
        wrote (or a snapshot deleted) what this one was reading."""
        started = time.perf_counter()
        damage: str | None = None  # what the previous reading found wrong
        for _ in range(OPEN_ATTEMPTS):
            try:
                loaded, next_seq, newest_epoch, deletable = self._read(started)
            except FileNotFoundError:
                continue  # a slot went away under us: a newer snapshot's deletion
            except SlotCorruptError as e:
                # Damage stays put; a writer's snapshot deleting under our listing does not:
                # refuse only what a second reading finds again (invariant 9; nothing written).
                if str(e) == damage:
                    raise LogCorruptError(f"{e}; the log is not loaded and every object is "
                                          "kept") from None
                damage = str(e)
                continue
            if keep_epoch and newest_epoch > self._epoch:
                self._fence(f"a newer incarnation's epoch {newest_epoch} is in the log")
            epoch = self._epoch if keep_epoch else newest_epoch + 1
            try:
                self._ops.put(self._store, self._slot_key(next_seq), encode_slot(FENCE, epoch),
                              create=True)
            except AlreadyExistsError:
                continue  # someone wrote that slot after our listing: read again
            if self._superseded(next_seq):
                if keep_epoch:
                    self._fence("a newer snapshot than this writer's view of the log")
                continue  # our listing was stale: read again
            self._epoch, self._next, self._deletable = epoch, next_seq + 1, deletable
            self._slots += 1  # the fence
            return loaded
        raise OSError(f"{self.name}: could not claim a slot in {OPEN_ATTEMPTS} tries")

    def _superseded(self, claimed: int) -> bool:
        """A snapshot past the slot just claimed: the listing this claim came from is stale
        (a frozen opener: the slot it claimed was written and deleted meanwhile)."""
        return any(_seq_of(k) > claimed
                   for k in self._ops.list(self._store, f"{self.name}/snapshot/"))

    def _read(self, started: float) -> tuple[LoadedLog, int, int, list[int]]:
        """What is durable, the next free slot, the newest epoch written and the slots read
        that are not fences."""
        slots = sorted(_seq_of(k) for k in self._ops.list(self._store, f"{self.name}/log/"))
        snapshots = sorted(self._ops.list(self._store, f"{self.name}/snapshot/"), reverse=True)
        present = set(slots)
        base, snapshot, base_epoch = None, [], 0
        for key in snapshots:  # the newest snapshot whose marker landed
            seq = _seq_of(key)
            if seq not in present:
                continue
            kind, epoch, body = decode_slot(self._get(self._slot_key(seq)), self._slot_key(seq))
            if kind == MARKER and body == key.encode():
                base, base_epoch = seq, epoch
                snapshot = [r for b in unframe(self._get(key), key) for r in b]
                break
        tail = [s for s in slots if base is None or s > base]
        first = 0 if base is None else base + 1
        with ThreadPoolExecutor(min(READ_WORKERS, max(1, len(tail)))) as pool:
            bodies = list(pool.map(self._get, map(self._slot_key, tail)))
        batches: list[list[bytes]] = []
        newest_epoch, size = base_epoch, 0
        deletable = [] if base is None else [base]
        for seq, data in zip(tail, bodies, strict=True):
            where = self._slot_key(seq)
            kind, epoch, body = decode_slot(data, where)
            if kind == MARKER:  # newer than the base: its snapshot is gone or does not match
                raise SlotCorruptError(f"{where}: a snapshot marker at byte offset 0 whose "
                                       f"snapshot {bytes(body[:200])!r} is missing or damaged")
            if kind != FENCE:
                deletable.append(seq)
            if kind == BATCH:
                for batch in unframe(body, where, SLOT_HEADER.size):
                    batches.append(batch)
                    size += sum(map(len, batch))
            newest_epoch = max(newest_epoch, epoch)
        # After reading: a damaged snapshot marker also shows as a gap (the slots its snapshot
        # covered are gone), and naming the damaged object is the more useful message.
        for expected, seq in zip(range(first, first + len(tail)), tail, strict=True):
            if seq != expected:
                raise SlotCorruptError(f"{self._slot_key(expected)}: missing from byte offset "
                                       f"0 (the log goes on at slot {seq})")
        self._bytes, self._slots = size, len(tail)
        records = len(snapshot) + sum(map(len, batches))
        loaded = LoadedLog(snapshot, batches, records, time.perf_counter() - started, 0)
        return loaded, (slots[-1] + 1 if slots else 0), newest_epoch, deletable

    def _get(self, key: str) -> bytes:
        return self._ops.get(self._store, key)


def _seq_of(key: str) -> int:
    return int(key.rsplit("/", 1)[1].split("-", 1)[0])
