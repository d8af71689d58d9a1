"""Invariant 7 (share groups) on hand-made histories: each rule catches its violation and
passes a correct history."""

from __future__ import annotations

from actors.tools.invariants_share import check_share

LIMIT = 5


def acq(t, member, first, last, count=1, p=0):
    return {"event": "acquired", "t": t, "member_id": member, "topic_id": "T", "partition": p,
            "first_offset": first, "last_offset": last, "delivery_count": count}


def ack(t, member, first, last, p=0):
    return {"event": "acknowledged", "t": t, "member_id": member, "topic_id": "T",
            "partition": p, "ranges": [(first, last, 1)]}


def _rules(violations) -> list[str]:
    return [v.message[:2] for v in violations]


def test_a_clean_history_of_two_members_passes():
    events = [acq(1, "a", 0, 4), acq(1.5, "b", 5, 9), ack(2, "a", 0, 4), ack(2.5, "b", 5, 9)]
    assert check_share(events, {("T", 0): 10}, LIMIT, set()) == []


def test_a_record_acquired_after_its_acknowledgement_is_caught():
    events = [acq(1, "a", 0, 4), ack(2, "a", 0, 4), acq(3, "b", 2, 2, count=2)]
    assert "7a" in _rules(check_share(events, {("T", 0): 5}, LIMIT, set()))


def test_two_holders_of_one_delivery_are_caught():
    events = [acq(1, "a", 0, 4), acq(1.2, "b", 3, 6)]
    assert "7b" in _rules(check_share(events, {}, LIMIT, set()))


def test_a_redelivery_with_a_higher_count_is_allowed():
    events = [acq(1, "a", 0, 4), acq(40, "b", 0, 4, count=2), ack(41, "b", 0, 4)]
    assert check_share(events, {("T", 0): 5}, LIMIT, set()) == []


def test_more_deliveries_than_the_limit_are_caught():
    events = [acq(i, "a", 0, 0, count=i) for i in range(1, 7)]
    assert "7c" in _rules(check_share(events, {}, LIMIT, set()))


def test_a_skipped_offset_below_the_start_is_caught():
    events = [acq(1, "a", 0, 2), acq(2, "a", 4, 6), ack(3, "a", 0, 2), ack(3, "a", 4, 6)]
    assert _rules(check_share(events, {("T", 0): 7}, LIMIT, set())) == ["7d"]


def test_an_unacknowledged_record_below_the_start_is_lost_unless_its_holder_was_killed():
    events = [acq(1, "a", 0, 2)]
    assert _rules(check_share(events, {("T", 0): 3}, LIMIT, set())) == ["7d"] * 3
    assert check_share(events, {("T", 0): 3}, LIMIT, {"a"}) == []


def test_an_archived_record_below_the_start_is_not_lost():
    events = [acq(i, f"m{i}", 0, 0, count=i) for i in range(1, LIMIT + 1)]
    assert check_share(events, {("T", 0): 1}, LIMIT, set()) == []


def test_an_acknowledgement_sent_whose_reply_was_lost_may_have_applied():
    events = [acq(1, "a", 0, 2), {"event": "acknowledging", "t": 2, "member_id": "a",
                                  "topic_id": "T", "partition": 0, "ranges": [(0, 2, 1)]}]
    assert check_share(events, {("T", 0): 3}, LIMIT, set()) == []
