"""One share-partition's records: acquire, acknowledge, release, reject, gaps, lock expiry,
the delivery limit, the start offset, the in-flight bound, and the state as its record."""

from __future__ import annotations

import pytest

from protocol.codec import decode_record, encode_record
from protocol.errors import CoordinatorError, Errors
from protocol.records import Record
from protocol.share.messages import (
    ACK_ACCEPT,
    ACK_GAP,
    ACK_REJECT,
    ACK_RELEASE,
    AcknowledgementBatch,
    AcquiredRecords,
)
from protocol.share.partition_state import Limits, RecordState, SharePartition
from protocol.share.records import SharePartitionStateKey

LIMITS = Limits(record_lock_duration_ms=30_000, delivery_count_limit=3, max_record_locks=100)


def ack(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, list(types))


def state_of(sp: SharePartition, offset: int) -> RecordState:
    return RecordState(sp.records[offset].state)


def refused(sp: SharePartition, member: str, *batches: AcknowledgementBatch) -> Errors:
    before = sp.copy()
    with pytest.raises(CoordinatorError) as e:
        sp.acknowledge(member, list(batches), LIMITS)
    assert sp == before, "a refused acknowledgement changed the share-partition"
    return e.value.error


def test_acquire_locks_new_records_up_to_the_log_end_and_max_records():
    sp = SharePartition(0)
    assert sp.acquire("a", 4, 10, 0, LIMITS) == [AcquiredRecords(0, 3, 1)]
    assert sp.acquire("b", 100, 10, 0, LIMITS) == [AcquiredRecords(4, 9, 1)]
    assert sp.acquire("c", 100, 10, 0, LIMITS) == []
    assert sp.acquired_by("a") == [0, 1, 2, 3]
    assert sp.records[5].member_id == "b" and sp.records[5].lock_deadline_ms == 30_000


def test_accept_acknowledges_and_moves_the_start_offset_over_done_records():
    sp = SharePartition(0)
    sp.acquire("a", 5, 5, 0, LIMITS)
    sp.acknowledge("a", [ack(0, 1, ACK_ACCEPT), ack(3, 3, ACK_ACCEPT)], LIMITS)
    assert sp.start_offset == 2
    assert state_of(sp, 3) == RecordState.ACKNOWLEDGED
    sp.acknowledge("a", [ack(2, 2, ACK_ACCEPT)], LIMITS)
    assert sp.start_offset == 4


def test_release_makes_a_record_available_again_with_its_delivery_count():
    sp = SharePartition(0)
    sp.acquire("a", 2, 2, 0, LIMITS)
    sp.acknowledge("a", [ack(0, 1, ACK_RELEASE)], LIMITS)
    assert state_of(sp, 0) == RecordState.AVAILABLE
    assert sp.acquire("b", 10, 2, 5, LIMITS) == [AcquiredRecords(0, 1, 2)]


def test_reject_and_gap_archive_records_for_good():
    sp = SharePartition(0)
    sp.acquire("a", 4, 4, 0, LIMITS)
    sp.acknowledge("a", [ack(1, 2, ACK_REJECT, ACK_GAP)], LIMITS)
    assert state_of(sp, 1) == state_of(sp, 2) == RecordState.ARCHIVED
    sp.acknowledge("a", [ack(0, 0, ACK_ACCEPT)], LIMITS)
    assert sp.start_offset == 3
    assert sp.acquire("b", 10, 4, 0, LIMITS) == []  # 3 is still a's


def test_one_type_per_offset_applies_each_type_to_its_offset():
    sp = SharePartition(0)
    sp.acquire("a", 3, 3, 0, LIMITS)
    sp.acknowledge("a", [ack(0, 2, ACK_ACCEPT, ACK_RELEASE, ACK_REJECT)], LIMITS)
    assert [RecordState(sp.records[o].state) for o in (1, 2)] == [
        RecordState.AVAILABLE, RecordState.ARCHIVED
    ]
    assert sp.start_offset == 1


def test_expired_locks_release_records_for_redelivery():
    sp = SharePartition(0)
    sp.acquire("a", 3, 3, 0, LIMITS)
    assert sp.next_lock_deadline_ms() == 30_000
    assert not sp.expire_locks(29_999, LIMITS)
    assert sp.expire_locks(30_000, LIMITS)
    assert sp.acquired_by("a") == [] and sp.next_lock_deadline_ms() is None
    assert sp.acquire("b", 10, 3, 30_000, LIMITS) == [AcquiredRecords(0, 2, 2)]


def test_a_record_is_archived_after_the_delivery_count_limit():
    sp = SharePartition(0)
    for delivery in range(1, LIMITS.delivery_count_limit + 1):
        assert sp.acquire("a", 1, 1, 0, LIMITS) == [AcquiredRecords(0, 0, delivery)]
        sp.acknowledge("a", [ack(0, 0, ACK_RELEASE)], LIMITS)
    assert sp.start_offset == 1  # archived, so done
    assert sp.acquire("a", 1, 1, 0, LIMITS) == []


def test_a_lock_expiring_at_the_delivery_limit_archives_the_record():
    sp = SharePartition(0)
    for now in range(LIMITS.delivery_count_limit):
        sp.acquire("a", 1, 1, now * 30_000, LIMITS)
        sp.expire_locks((now + 1) * 30_000, LIMITS)
    assert sp.start_offset == 1 and sp.records == {}


def test_releasing_a_member_gives_back_only_its_records():
    sp = SharePartition(0)
    sp.acquire("a", 2, 4, 0, LIMITS)
    sp.acquire("b", 2, 4, 0, LIMITS)
    assert sp.release_member("a", LIMITS)
    assert sp.acquired_by("b") == [2, 3]
    assert sp.acquire("c", 10, 4, 0, LIMITS) == [AcquiredRecords(0, 1, 2)]
    assert not sp.release_member("a", LIMITS)


def test_at_most_max_record_locks_records_are_in_flight():
    limits = Limits(max_record_locks=5)
    sp = SharePartition(10)
    assert sp.acquire("a", 100, 1_000, 0, limits) == [AcquiredRecords(10, 14, 1)]
    assert sp.acquire("a", 100, 1_000, 0, limits) == []
    sp.acknowledge("a", [ack(10, 11, ACK_ACCEPT)], limits)
    assert sp.acquire("a", 100, 1_000, 0, limits) == [AcquiredRecords(15, 16, 1)]


def test_acknowledging_a_record_another_member_holds_is_invalid_record_state():
    sp = SharePartition(0)
    sp.acquire("a", 2, 2, 0, LIMITS)
    assert refused(sp, "b", ack(0, 0, ACK_ACCEPT)) == Errors.INVALID_RECORD_STATE


def test_acknowledging_a_record_not_acquired_is_invalid_record_state():
    sp = SharePartition(0)
    sp.acquire("a", 2, 2, 0, LIMITS)
    sp.acknowledge("a", [ack(0, 0, ACK_RELEASE)], LIMITS)
    assert refused(sp, "a", ack(0, 0, ACK_ACCEPT)) == Errors.INVALID_RECORD_STATE
    assert refused(sp, "a", ack(1, 5, ACK_ACCEPT)) == Errors.INVALID_RECORD_STATE  # past the end
    sp.acknowledge("a", [ack(1, 1, ACK_ACCEPT)], LIMITS)
    assert refused(sp, "a", ack(1, 1, ACK_ACCEPT)) == Errors.INVALID_RECORD_STATE  # already done


def test_a_bad_batch_refuses_the_whole_acknowledgement():
    sp = SharePartition(0)
    sp.acquire("a", 4, 4, 0, LIMITS)
    assert refused(sp, "a", ack(0, 0, ACK_ACCEPT), ack(1, 1, ACK_ACCEPT), ack(9, 9, 1)) == (
        Errors.INVALID_RECORD_STATE
    )
    assert refused(sp, "a", ack(2, 1, ACK_ACCEPT)) == Errors.INVALID_REQUEST  # first > last
    assert refused(sp, "a", ack(0, 2, 1, 1)) == Errors.INVALID_REQUEST  # 2 types, 3 offsets
    assert refused(sp, "a", ack(0, 0, 7)) == Errors.INVALID_REQUEST  # unknown type
    assert refused(sp, "a", ack(0, 1, 1), ack(1, 2, 1)) == Errors.INVALID_REQUEST  # overlap
    assert refused(sp, "a", ack(2, 3, 1), ack(0, 1, 1)) == Errors.INVALID_REQUEST  # out of order
    assert refused(sp, "a", ack(-1, 0, 1)) == Errors.INVALID_REQUEST


def test_a_huge_range_is_refused_without_walking_it():
    sp = SharePartition(0)
    sp.acquire("a", 1, 1, 0, LIMITS)
    assert refused(sp, "a", ack(0, 2**62, ACK_ACCEPT)) == Errors.INVALID_RECORD_STATE


def test_the_state_round_trips_through_its_record():
    sp = SharePartition(7)
    sp.acquire("a", 3, 20, 0, LIMITS)
    sp.acquire("b", 3, 20, 100, LIMITS)
    sp.acknowledge("a", [ack(8, 9, ACK_ACCEPT, ACK_RELEASE)], LIMITS)
    record = Record(SharePartitionStateKey("g", "t", 0), sp.to_value())
    decoded = decode_record(encode_record(record))
    assert decoded == record
    assert SharePartition.from_value(decoded.value) == sp
    assert len(sp.to_value().batches) == 4  # 7 acquired by a, 8 acked, 9 available, 10-12 b's


def test_lag_counts_records_not_yet_done():
    sp = SharePartition(0)
    sp.acquire("a", 4, 10, 0, LIMITS)
    sp.acknowledge("a", [ack(1, 1, ACK_ACCEPT)], LIMITS)
    assert sp.lag(10) == 9
    assert sp.lag(-1) == -1


def test_a_lowered_delivery_limit_archives_records_already_past_it():
    sp = SharePartition(0)
    for _ in range(2):
        sp.acquire("a", 1, 2, 0, LIMITS)
        sp.release_member("a", LIMITS)
    assert state_of(sp, 0) == RecordState.AVAILABLE and sp.records[0].delivery_count == 2
    lowered = Limits(delivery_count_limit=2)
    assert sp.acquire("a", 5, 2, 0, lowered) == [AcquiredRecords(1, 1, 1)]
    assert sp.start_offset == 1  # offset 0 (2 deliveries) archived, never a 3rd


def test_in_flight_counts_the_records_acquired_now_and_nothing_done_or_released():
    sp = SharePartition(0)
    sp.acquire("a", 5, 10, 0, LIMITS)
    sp.acquire("b", 3, 10, 0, LIMITS)
    assert sp.in_flight() == 8
    sp.acknowledge("a", [ack(0, 1, ACK_ACCEPT), ack(2, 2, ACK_RELEASE)], LIMITS)
    assert sp.in_flight() == 5
