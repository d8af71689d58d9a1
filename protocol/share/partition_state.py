"""One share-partition's in-flight records: acquire, acknowledge, release, expire, archive.

What Kafka's ``SharePartition`` keeps for a (group, topic, partition), as a pure object over
the shard's clock. Offsets below ``start_offset`` are done; every offset from it up to
``next_offset`` has been delivered at least once and has a state; offsets from
``next_offset`` on were never delivered. A record moves:

    AVAILABLE --acquire--> ACQUIRED --ACCEPT--> ACKNOWLEDGED
    ACQUIRED --RELEASE / lock expiry / owner left--> AVAILABLE (ARCHIVED at the delivery limit)
    ACQUIRED --REJECT / GAP--> ARCHIVED

Guaranteed here (and asserted in the tests' state machine): an ACQUIRED record has exactly one
owner until it leaves that state; a record is acquired at most ``delivery_count_limit``
times; ACKNOWLEDGED and ARCHIVED are final; the start offset only moves over final records
(or by an explicit reset); at most ``max_record_locks`` offsets are in flight
(``next_offset - start_offset``). A refused acknowledgement changes nothing.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

from protocol.errors import CoordinatorError, Errors
from protocol.share.messages import (
    ACK_ACCEPT,
    ACK_GAP,
    ACK_REJECT,
    ACK_RELEASE,
    AcknowledgementBatch,
    AcquiredRecords,
)
from protocol.share.records import InFlightBatch, SharePartitionStateValue


class RecordState(IntEnum):
    """Kafka's RecordState numbers."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


FINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass(frozen=True, slots=True)
class InFlight:
    state: int
    delivery_count: int
    member_id: str = ""
    lock_deadline_ms: int = 0


@dataclass(frozen=True)
class Limits:
    """The group's share settings that bound a share-partition."""

    record_lock_duration_ms: int = 30_000
    delivery_count_limit: int = 5
    max_record_locks: int = 2_000


class SharePartition:
    """See the module docstring.

    The in-flight records are kept as runs (``runs``): consecutive offsets in one state, with
    one delivery count, owner and lock deadline, exactly as the record writes them
    (``InFlightBatch``). The runs cover ``start_offset..next_offset - 1`` without gaps, in
    offset order, and no two neighbours are equal but for their offsets (so a state has one
    form, and two equal states compare equal). Every move costs the number of runs it
    touches, not the number of records: a consumer acquiring and accepting 500 records is a
    run or two, where a record each cost the shard ~10 µs per record per request (copying,
    writing and replaying every in-flight record) and held a share group to a few thousand
    records a second.
    """

    __slots__ = ("next_offset", "runs", "start_offset")

    def __init__(self, start_offset: int = 0) -> None:
        self.start_offset = start_offset
        self.next_offset = start_offset
        self.runs: list[InFlightBatch] = []

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SharePartition) and (
            self.start_offset, self.next_offset, self.runs
        ) == (other.start_offset, other.next_offset, other.runs)

    def __repr__(self) -> str:
        return f"SharePartition({self.to_value()!r})"

    def copy(self) -> SharePartition:
        sp = SharePartition(self.start_offset)
        sp.next_offset, sp.runs = self.next_offset, list(self.runs)
        return sp

    # --- queries ---------------------------------------------------------------------------

    @property
    def records(self) -> dict[int, InFlight]:
        """Every in-flight offset's state, one entry per record: for tests and tools that ask
        about single offsets (it walks every record; the moves never use it)."""
        return {o: InFlight(r.state, r.delivery_count, r.member_id, r.lock_deadline_ms)
                for r in self.runs for o in range(r.first_offset, r.last_offset + 1)}

    def holds(self, member_id: str) -> bool:
        """Whether ``member_id`` has any record acquired here."""
        return any(r.state == RecordState.ACQUIRED and r.member_id == member_id
                   for r in self.runs)

    def acquired_by(self, member_id: str) -> list[int]:
        return [o for r in self.runs
                if r.state == RecordState.ACQUIRED and r.member_id == member_id
                for o in range(r.first_offset, r.last_offset + 1)]

    def in_flight(self) -> int:
        """Records acquired now, under a lock (what ``cohort groups --describe`` shows)."""
        return sum(r.last_offset - r.first_offset + 1 for r in self.runs
                   if r.state == RecordState.ACQUIRED)

    def next_lock_deadline_ms(self) -> int | None:
        deadlines = [r.lock_deadline_ms for r in self.runs if r.state == RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def lag(self, log_end_offset: int) -> int:
        """Records at or past the start offset not yet acknowledged, rejected or archived."""
        if log_end_offset < 0:
            return -1
        done = sum(r.last_offset - r.first_offset + 1 for r in self.runs if r.state in FINAL)
        return max(0, log_end_offset - self.start_offset - done)

    # --- moves -----------------------------------------------------------------------------

    def acquire(self, member_id: str, max_records: int, log_end_offset: int, now_ms: int,
                limits: Limits, batch_records: int = 0) -> list[AcquiredRecords]:
        """Lock up to ``max_records`` records for ``member_id``: AVAILABLE ones first (lowest
        offset first), then new ones below ``log_end_offset``, up to the in-flight bound.
        ``batch_records`` > 0 (the log's batches hold that many, from offset 0): the new ones
        run on to the end of the batch holding the last one counted, the bound included, as
        Kafka's ``SharePartition.acquire`` takes whole fetched batches (KIP-1206's
        batch_optimized mode: ``max_records`` is a soft limit)."""
        deadline = now_ms + limits.record_lock_duration_ms
        left = max_records
        edits: list[_Edit] = []
        taken: list[AcquiredRecords] = []
        for r in self.runs:
            if left <= 0:
                break
            if r.state != RecordState.AVAILABLE:
                continue
            if r.delivery_count >= limits.delivery_count_limit:
                # The group's limit was lowered since these were released: archive them.
                edits.append((r.first_offset, r.last_offset, _archive))
                continue
            last = min(r.last_offset, r.first_offset + left - 1)
            count = r.delivery_count + 1
            edits.append((r.first_offset, last,
                          lambda _r, c=count: (RecordState.ACQUIRED, c, member_id, deadline)))
            _take(taken, r.first_offset, last, count)
            left -= last - r.first_offset + 1
        if edits:
            self._apply(edits)
        window_end = min(log_end_offset, self.start_offset + limits.max_record_locks)
        if left > 0 and self.next_offset < window_end:
            first = self.next_offset
            last = min(window_end, first + left) - 1
            if batch_records > 0:  # on to the end of that record's batch
                last = min(log_end_offset, (last // batch_records + 1) * batch_records) - 1
            self._push(first, last, (RecordState.ACQUIRED, 1, member_id, deadline))
            _take(taken, first, last, 1)
            self.next_offset = last + 1
        self._advance()
        return taken

    def acknowledge(self, member_id: str, batches: list[AcknowledgementBatch],
                    limits: Limits) -> None:
        """Apply a partition's acknowledgement batches, all or nothing: INVALID_REQUEST for
        a malformed batch (first past last, a type count that is neither 1 nor the range's
        length, an unknown type, batches out of order or overlapping); INVALID_RECORD_STATE
        when an offset is not a record ``member_id`` holds."""
        edits: list[_Edit] = []
        previous_last = None
        for b in batches:
            check_batch(b, previous_last)
            previous_last = b.last_offset
            if b.first_offset < self.start_offset or b.last_offset >= self.next_offset:
                raise CoordinatorError(
                    Errors.INVALID_RECORD_STATE,
                    f"Offsets {b.first_offset}-{b.last_offset} are not all in flight "
                    f"({self.start_offset}-{self.next_offset - 1}).",
                )
            self._check_held(b.first_offset, b.last_offset, member_id)
            edits.extend(_ack_edits(b, limits))
        if edits:
            self._apply(edits)
        self._advance()

    def release_member(self, member_id: str, limits: Limits) -> bool:
        """Give back every record ``member_id`` holds (it left, or its session closed)."""
        release = _releaser(limits)
        edits = [(r.first_offset, r.last_offset, release) for r in self.runs
                 if r.state == RecordState.ACQUIRED and r.member_id == member_id]
        if edits:
            self._apply(edits)
        self._advance()
        return bool(edits)

    def expire_locks(self, now_ms: int, limits: Limits) -> bool:
        """Release every record whose lock ran out by ``now_ms``; True if any did."""
        release = _releaser(limits)
        edits = [(r.first_offset, r.last_offset, release) for r in self.runs
                 if r.state == RecordState.ACQUIRED and r.lock_deadline_ms <= now_ms]
        if edits:
            self._apply(edits)
        self._advance()
        return bool(edits)

    def reset(self, start_offset: int) -> None:
        """Start over at ``start_offset`` (AlterShareGroupOffsets; the group is empty)."""
        self.start_offset = self.next_offset = start_offset
        self.runs = []

    # --- the runs --------------------------------------------------------------------------

    def _check_held(self, first: int, last: int, member_id: str) -> None:
        """INVALID_RECORD_STATE naming the first offset of ``first..last`` that is not a
        record ``member_id`` holds."""
        k = bisect_right(self.runs, first, key=_first_offset) - 1
        while k < len(self.runs) and self.runs[k].first_offset <= last:
            r = self.runs[k]
            if r.state != RecordState.ACQUIRED or r.member_id != member_id:
                raise CoordinatorError(
                    Errors.INVALID_RECORD_STATE,
                    f"Offset {max(first, r.first_offset)} is not a record acquired by member "
                    f"{member_id}.",
                )
            k += 1

    def _apply(self, edits: list[_Edit]) -> None:
        """Rewrite the runs: each edit ``(first, last, change)`` (in offset order, disjoint,
        in flight) gives every run piece inside ``first..last`` the fields ``change(run)``
        returns; one pass over the runs and the edits."""
        old, self.runs = self.runs, []
        k, n = 0, len(edits)
        for r in old:
            fields = (r.state, r.delivery_count, r.member_id, r.lock_deadline_ms)
            pos, end = r.first_offset, r.last_offset
            while pos <= end:
                while k < n and edits[k][1] < pos:
                    k += 1
                if k == n or edits[k][0] > end:
                    self._push(pos, end, fields)
                    break
                first, last, change = edits[k]
                if first > pos:
                    self._push(pos, first - 1, fields)
                    pos = first
                upto = min(last, end)
                self._push(pos, upto, change(r))
                pos = upto + 1

    def _push(self, first: int, last: int, fields: tuple[int, int, str, int]) -> None:
        """Append offsets ``first..last`` with ``fields``, merged into the last run when it
        ends just before and carries the same fields."""
        runs = self.runs
        if runs:
            p = runs[-1]
            if (p.last_offset + 1 == first and p.state == fields[0]
                    and p.delivery_count == fields[1] and p.member_id == fields[2]
                    and p.lock_deadline_ms == fields[3]):
                runs[-1] = InFlightBatch(p.first_offset, last, *fields)
                return
        runs.append(InFlightBatch(first, last, *fields))

    def _advance(self) -> None:
        k = 0
        while k < len(self.runs) and self.runs[k].state in FINAL:
            k += 1
        if k:
            del self.runs[:k]
        self.start_offset = self.runs[0].first_offset if self.runs else self.next_offset

    # --- the record ------------------------------------------------------------------------

    def to_value(self) -> SharePartitionStateValue:
        """The state as its record: the runs as they are."""
        return SharePartitionStateValue(self.start_offset, tuple(self.runs))

    @classmethod
    def from_value(cls, value: SharePartitionStateValue) -> SharePartition:
        sp = cls(value.start_offset)
        for b in value.batches:  # merged where a writer left two equal neighbours
            sp._push(b.first_offset, b.last_offset,
                     (b.state, b.delivery_count, b.member_id, b.lock_deadline_ms))
        if value.batches:
            sp.next_offset = value.batches[-1].last_offset + 1
        return sp


# An edit of the runs: (first offset, last offset, the new fields of a run piece in between).
_Edit = tuple[int, int, Callable[[InFlightBatch], tuple[int, int, str, int]]]


def _first_offset(r: InFlightBatch) -> int:
    return r.first_offset


def _archive(r: InFlightBatch) -> tuple[int, int, str, int]:
    return RecordState.ARCHIVED, r.delivery_count, "", 0


def _accept(r: InFlightBatch) -> tuple[int, int, str, int]:
    return RecordState.ACKNOWLEDGED, r.delivery_count, "", 0


def _releaser(limits: Limits) -> Callable[[InFlightBatch], tuple[int, int, str, int]]:
    """A released record is AVAILABLE again, or ARCHIVED once delivered the limit's times."""
    def release(r: InFlightBatch) -> tuple[int, int, str, int]:
        final = r.delivery_count >= limits.delivery_count_limit
        return (RecordState.ARCHIVED if final else RecordState.AVAILABLE), r.delivery_count, "", 0
    return release


def _ack_edits(b: AcknowledgementBatch, limits: Limits) -> list[_Edit]:
    """A checked batch as edits: one for a single type, else one per run of equal types."""
    change = {ACK_ACCEPT: _accept, ACK_RELEASE: _releaser(limits)}
    types = b.acknowledge_types
    if len(types) == 1:
        return [(b.first_offset, b.last_offset, change.get(types[0], _archive))]
    out: list[_Edit] = []
    start = 0
    for i in range(1, len(types) + 1):
        if i == len(types) or types[i] != types[start]:
            out.append((b.first_offset + start, b.first_offset + i - 1,
                        change.get(types[start], _archive)))  # REJECT, GAP: archived
            start = i
    return out


def _take(taken: list[AcquiredRecords], first: int, last: int, count: int) -> None:
    """Note offsets ``first..last`` acquired at delivery ``count``, merged into the previous
    range when they continue it with the same count."""
    p = taken[-1] if taken else None
    if p is not None and p.last_offset + 1 == first and p.delivery_count == count:
        p.last_offset = last
    else:
        taken.append(AcquiredRecords(first, last, count))


def check_batch(b: AcknowledgementBatch, previous_last: int | None) -> None:
    """INVALID_REQUEST unless ``b`` is a well-formed batch after one ending at
    ``previous_last`` (Kafka's ShareFetch/ShareAcknowledge validation)."""
    if b.first_offset < 0 or b.first_offset > b.last_offset:
        why = f"first offset {b.first_offset} is past last offset {b.last_offset}"
    elif previous_last is not None and b.first_offset <= previous_last:
        why = "acknowledgement batches overlap or are out of order"
    elif len(b.acknowledge_types) not in (1, b.last_offset - b.first_offset + 1):
        why = (f"{len(b.acknowledge_types)} acknowledge types for "
               f"{b.last_offset - b.first_offset + 1} offsets")
    elif any(t not in (ACK_GAP, ACK_ACCEPT, ACK_RELEASE, ACK_REJECT) for t in b.acknowledge_types):
        why = f"unknown acknowledge type in {b.acknowledge_types}"
    else:
        return
    raise CoordinatorError(Errors.INVALID_REQUEST, f"Invalid acknowledgement batch: {why}.")
