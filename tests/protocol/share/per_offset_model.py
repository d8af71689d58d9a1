"""The oracle of ``protocol.share.partition_state``: a share-partition kept one offset at a
time (a dict of offset -> state), the form Cohort first had. Simple enough to read as the
specification; the runs-based ``SharePartition`` must agree with it move for move
(``test_partition_runs.py``)."""

from __future__ import annotations

from protocol.errors import CoordinatorError, Errors
from protocol.share.messages import (
    ACK_ACCEPT,
    ACK_RELEASE,
    AcknowledgementBatch,
    AcquiredRecords,
)
from protocol.share.partition_state import FINAL, InFlight, Limits, RecordState, check_batch
from protocol.share.records import InFlightBatch, SharePartitionStateValue


class PerOffsetPartition:
    """The share-partition one offset at a time, as Cohort first kept it."""

    def __init__(self, start_offset: int = 0) -> None:
        self.start_offset = start_offset
        self.next_offset = start_offset
        self.records: dict[int, InFlight] = {}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PerOffsetPartition) and (
            self.start_offset, self.next_offset, self.records
        ) == (other.start_offset, other.next_offset, other.records)

    def __repr__(self) -> str:
        return f"PerOffsetPartition({self.to_value()!r})"

    def copy(self) -> PerOffsetPartition:
        sp = PerOffsetPartition(self.start_offset)
        sp.next_offset, sp.records = self.next_offset, dict(self.records)
        return sp

    # --- queries ---------------------------------------------------------------------------

    def acquired_by(self, member_id: str) -> list[int]:
        return [o for o, r in self.records.items()
                if r.state == RecordState.ACQUIRED and r.member_id == member_id]

    def in_flight(self) -> int:
        """Records acquired now, under a lock (what ``cohort groups --describe`` shows)."""
        return sum(1 for r in self.records.values() if r.state == RecordState.ACQUIRED)

    def next_lock_deadline_ms(self) -> int | None:
        deadlines = [r.lock_deadline_ms for r in self.records.values()
                     if r.state == RecordState.ACQUIRED]
        return min(deadlines) if deadlines else None

    def lag(self, log_end_offset: int) -> int:
        """Records at or past the start offset not yet acknowledged, rejected or archived."""
        if log_end_offset < 0:
            return -1
        done = sum(1 for r in self.records.values() if r.state in FINAL)
        return max(0, log_end_offset - self.start_offset - done)

    # --- moves -----------------------------------------------------------------------------

    def acquire(self, member_id: str, max_records: int, log_end_offset: int, now_ms: int,
                limits: Limits, batch_records: int = 0) -> list[AcquiredRecords]:
        """Lock up to ``max_records`` records for ``member_id``: AVAILABLE ones first (lowest
        offset first), then new ones below ``log_end_offset``, up to the in-flight bound; with
        ``batch_records``, new ones on to the end of the last one's batch."""
        deadline = now_ms + limits.record_lock_duration_ms
        taken: list[tuple[int, int]] = []
        for offset in range(self.start_offset, self.next_offset):
            if len(taken) >= max_records:
                break
            rec = self.records[offset]
            if rec.state != RecordState.AVAILABLE:
                continue
            if rec.delivery_count >= limits.delivery_count_limit:
                # The group's limit was lowered since this record was released: archive it.
                self.records[offset] = InFlight(RecordState.ARCHIVED, rec.delivery_count)
                continue
            count = rec.delivery_count + 1
            self.records[offset] = InFlight(RecordState.ACQUIRED, count, member_id, deadline)
            taken.append((offset, count))
        window_end = min(log_end_offset, self.start_offset + limits.max_record_locks)
        new = 0
        while self.next_offset < log_end_offset and (
                (len(taken) < max_records and self.next_offset < window_end)
                or (batch_records and new and self.next_offset % batch_records)):
            offset = self.next_offset
            self.records[offset] = InFlight(RecordState.ACQUIRED, 1, member_id, deadline)
            taken.append((offset, 1))
            self.next_offset += 1
            new += 1
        self._advance()
        return _ranges(taken)

    def acknowledge(self, member_id: str, batches: list[AcknowledgementBatch],
                    limits: Limits) -> None:
        """Apply a partition's acknowledgement batches, all or nothing: INVALID_REQUEST for
        a malformed batch (first past last, a type count that is neither 1 nor the range's
        length, an unknown type, batches out of order or overlapping); INVALID_RECORD_STATE
        when an offset is not a record ``member_id`` holds."""
        plan: list[tuple[int, int]] = []
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
            span = b.last_offset - b.first_offset + 1
            for i in range(span):
                offset = b.first_offset + i
                rec = self.records.get(offset)
                if rec is None or rec.state != RecordState.ACQUIRED or rec.member_id != member_id:
                    raise CoordinatorError(
                        Errors.INVALID_RECORD_STATE,
                        f"Offset {offset} is not a record acquired by member {member_id}.",
                    )
                plan.append((offset, b.acknowledge_types[0 if len(b.acknowledge_types) == 1
                                                         else i]))
        for offset, ack in plan:
            rec = self.records[offset]
            if ack == ACK_ACCEPT:
                self.records[offset] = InFlight(RecordState.ACKNOWLEDGED, rec.delivery_count)
            elif ack == ACK_RELEASE:
                self._release(offset, rec, limits)
            else:  # REJECT, GAP
                self.records[offset] = InFlight(RecordState.ARCHIVED, rec.delivery_count)
        self._advance()

    def release_member(self, member_id: str, limits: Limits) -> bool:
        """Give back every record ``member_id`` holds (it left, or its session closed)."""
        held = self.acquired_by(member_id)
        for offset in held:
            self._release(offset, self.records[offset], limits)
        self._advance()
        return bool(held)

    def expire_locks(self, now_ms: int, limits: Limits) -> bool:
        """Release every record whose lock ran out by ``now_ms``; True if any did."""
        due = [o for o, r in self.records.items()
               if r.state == RecordState.ACQUIRED and r.lock_deadline_ms <= now_ms]
        for offset in due:
            self._release(offset, self.records[offset], limits)
        self._advance()
        return bool(due)

    def reset(self, start_offset: int) -> None:
        """Start over at ``start_offset`` (AlterShareGroupOffsets; the group is empty)."""
        self.start_offset = self.next_offset = start_offset
        self.records = {}

    def _release(self, offset: int, rec: InFlight, limits: Limits) -> None:
        final = rec.delivery_count >= limits.delivery_count_limit
        state = RecordState.ARCHIVED if final else RecordState.AVAILABLE
        self.records[offset] = InFlight(state, rec.delivery_count)

    def _advance(self) -> None:
        while self.start_offset < self.next_offset:
            rec = self.records[self.start_offset]
            if rec.state not in FINAL:
                return
            del self.records[self.start_offset]
            self.start_offset += 1

    # --- the record ------------------------------------------------------------------------

    def to_value(self) -> SharePartitionStateValue:
        """The state as its record: runs of consecutive offsets in equal state."""
        batches: list[InFlightBatch] = []
        for offset in range(self.start_offset, self.next_offset):
            r = self.records[offset]
            last = batches[-1] if batches else None
            if (last is not None and last.state == r.state
                    and last.delivery_count == r.delivery_count and last.member_id == r.member_id
                    and last.lock_deadline_ms == r.lock_deadline_ms):
                batches[-1] = InFlightBatch(last.first_offset, offset, int(r.state),
                                            r.delivery_count, r.member_id, r.lock_deadline_ms)
            else:
                batches.append(InFlightBatch(offset, offset, int(r.state), r.delivery_count,
                                             r.member_id, r.lock_deadline_ms))
        return SharePartitionStateValue(self.start_offset, tuple(batches))

    @classmethod
    def from_value(cls, value: SharePartitionStateValue) -> PerOffsetPartition:
        sp = cls(value.start_offset)
        for b in value.batches:
            for offset in range(b.first_offset, b.last_offset + 1):
                sp.records[offset] = InFlight(b.state, b.delivery_count, b.member_id,
                                              b.lock_deadline_ms)
        if value.batches:
            sp.next_offset = value.batches[-1].last_offset + 1
        return sp


def _ranges(taken: list[tuple[int, int]]) -> list[AcquiredRecords]:
    """Acquired (offset, delivery count) pairs as runs of consecutive offsets with one count."""
    out: list[AcquiredRecords] = []
    for offset, count in taken:
        last = out[-1] if out else None
        if last is not None and last.last_offset + 1 == offset and last.delivery_count == count:
            last.last_offset = offset
        else:
            out.append(AcquiredRecords(offset, offset, count))
    return out
