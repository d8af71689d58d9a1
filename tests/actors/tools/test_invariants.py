"""The invariant checks: clean histories pass, and each kind of breakage is reported by name."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.tools.invariants import (
    Interval,
    Violation,
    check_all,
    check_converged,
    check_durable,
    check_epochs,
    check_exclusive_ownership,
    ownership_intervals,
    summarize,
)

FOO0 = ("foo", 0)


def ev(
    t: float, event: str, member: str, *partitions: Any, epoch: int = 1, group: str = "g1"
) -> dict[str, Any]:
    return {
        "t": t,
        "event": event,
        "partitions": list(partitions),
        "epoch": epoch,
        "member_id": member,
        "group_id": group,
    }


def exclusive(
    events: list[dict[str, Any]],
    end_times: dict[str, float] | None = None,
    default_end: float = 100.0,
) -> list[Violation]:
    return check_exclusive_ownership(events, end_times or {}, default_end)


# invariant 1 -----------------------------------------------------------------------------


@pytest.mark.parametrize("taken_at", [1.0, 1.5])
def test_clean_handover_after_revocation_is_not_an_overlap(taken_at: float) -> None:
    events = [
        ev(0.0, "assigned", "a", FOO0),
        ev(1.0, "revoked", "a", FOO0),
        ev(taken_at, "assigned", "b", FOO0),
    ]
    assert exclusive(events) == []


def test_overlapping_owners_are_reported_with_the_partition_named() -> None:
    events = [
        ev(0.0, "assigned", "a", FOO0),
        ev(0.5, "assigned", "b", FOO0),
        ev(1.0, "revoked", "a", FOO0),
    ]
    [violation] = exclusive(events)
    assert violation.invariant == 1
    assert "g1" in violation.message and "foo-0" in violation.message
    assert "a" in violation.message and "b" in violation.message


def kafka(event: dict[str, Any]) -> dict[str, Any]:
    """The event as a real Kafka client's timeline writes it."""
    return {**event, "fencing": "commit"}


def test_a_real_clients_late_revocation_that_committed_nothing_is_a_fenced_zombie() -> None:
    # librdkafka heard late that it was fenced: it still held the partition while b took it,
    # but its coordinator acknowledged none of its commits meanwhile.
    events = [
        kafka(ev(0.0, "assigned", "a", FOO0)),
        kafka({**ev(0.8, "committed", "a", FOO0), "offset": 10}),
        ev(1.0, "assigned", "b", FOO0),
        kafka(ev(1.4, "revoked", "a", FOO0)),
    ]
    assert exclusive(events) == []


def test_a_real_clients_commit_acknowledged_while_another_owned_the_partition_is_reported() -> None:
    events = [
        kafka(ev(0.0, "assigned", "a", FOO0)),
        ev(1.0, "assigned", "b", FOO0),
        kafka({**ev(1.2, "committed", "a", FOO0), "offset": 10}),
        kafka(ev(1.4, "revoked", "a", FOO0)),
    ]
    [violation] = exclusive(events)
    assert "overlapping 0.400 s" in violation.message


def test_a_real_clients_stale_assignment_after_another_took_the_partition_is_tolerated() -> None:
    events = [
        ev(0.0, "assigned", "b", FOO0),
        kafka(ev(1.0, "assigned", "a", FOO0)),
        kafka(ev(1.3, "lost", "a", FOO0)),
    ]
    assert exclusive(events) == []


def test_the_same_overlap_between_two_cohort_clients_is_a_violation() -> None:
    events = [
        ev(0.0, "assigned", "a", FOO0),
        ev(1.0, "assigned", "b", FOO0),
        ev(1.4, "revoked", "a", FOO0),
    ]
    assert len(exclusive(events)) == 1


def test_killed_member_partitions_handed_over_after_its_end_time_pass() -> None:
    events = [ev(0.0, "assigned", "a", FOO0), ev(5.0, "assigned", "b", FOO0)]
    assert exclusive(events, end_times={"a": 4.0}) == []


def test_killed_member_partitions_handed_over_before_its_end_time_overlap() -> None:
    events = [ev(0.0, "assigned", "a", FOO0), ev(3.0, "assigned", "b", FOO0)]
    [violation] = exclusive(events, end_times={"a": 4.0})
    assert "foo-0" in violation.message


def test_member_missing_from_end_times_owns_until_default_end() -> None:
    events = [ev(0.0, "assigned", "a", FOO0)]
    assert ownership_intervals(events, {}, 9.0) == [Interval("g1", "foo", 0, "a", 0.0, 9.0)]


def test_lost_closes_ownership() -> None:
    events = [
        ev(0.0, "assigned", "a", FOO0),
        ev(2.0, "lost", "a", FOO0),
        ev(2.0, "assigned", "b", FOO0),
    ]
    assert exclusive(events) == []
    assert Interval("g1", "foo", 0, "a", 0.0, 2.0) in ownership_intervals(events, {}, 9.0)


def test_assigning_an_owned_partition_again_is_flagged() -> None:
    events = [ev(0.0, "assigned", "a", FOO0), ev(1.0, "assigned", "a", FOO0)]
    [violation] = exclusive(events)
    assert "assigned it again" in violation.message and "foo-0" in violation.message


def test_revoking_an_unowned_partition_is_flagged() -> None:
    [violation] = exclusive([ev(1.0, "revoked", "a", FOO0)])
    assert "without owning it" in violation.message and "foo-0" in violation.message


def test_same_partition_in_another_group_or_topic_is_owned_independently() -> None:
    events = [
        ev(0.0, "assigned", "a", FOO0),
        ev(0.0, "assigned", "b", FOO0, group="g2"),
        ev(0.0, "assigned", "c", ("bar", 0)),
    ]
    assert exclusive(events) == []


def test_partitions_given_as_lists_are_read_as_topic_partitions() -> None:
    events = [ev(0.0, "assigned", "a", ["foo", 0]), ev(1.0, "revoked", "a", ("foo", 0))]
    assert ownership_intervals(events, {}, 9.0) == [Interval("g1", "foo", 0, "a", 0.0, 1.0)]


def test_long_clean_history_has_no_violation() -> None:
    members = ["a", "b", "c"]
    events = []
    for i in range(50_000):
        owner = members[i % 3]
        events += [
            ev(float(i), "assigned", owner, ("foo", i % 7), epoch=i),
            ev(float(i + 7), "revoked", owner, ("foo", i % 7), epoch=i + 7),
        ]
    events.sort(key=lambda e: e["t"])
    assert len(events) == 100_000
    assert check_all(events, {}, 1e9, {"g1": 50_007}) == []


# invariant 2 -----------------------------------------------------------------------------


def test_epoch_going_down_is_flagged() -> None:
    events = [ev(0.0, "assigned", "a", FOO0, epoch=3), ev(1.0, "revoked", "a", FOO0, epoch=2)]
    [violation] = check_epochs(events, {"g1": 3})
    assert violation.invariant == 2 and "from 3" in violation.message


def test_epoch_above_group_epoch_is_flagged() -> None:
    [violation] = check_epochs([ev(0.0, "assigned", "a", FOO0, epoch=5)], {"g1": 4})
    assert "above the group epoch 4" in violation.message


def test_rising_epochs_within_group_epoch_pass() -> None:
    events = [
        ev(0.0, "assigned", "a", FOO0, epoch=1),
        ev(1.0, "revoked", "a", FOO0, epoch=2),
        ev(0.5, "assigned", "b", ("foo", 1), epoch=1),
    ]
    assert check_epochs(events, {"g1": 2}) == []


def test_groups_not_described_are_checked_for_order_only() -> None:
    assert check_epochs([ev(0.0, "assigned", "a", FOO0, epoch=99)], {}) == []


# invariant 3 -----------------------------------------------------------------------------

EXPECTED = {"g1": [("foo", 0), ("foo", 1)]}


def test_each_partition_owned_once_is_converged() -> None:
    assignments = {("g1", "a"): [("foo", 0)], ("g1", "b"): [["foo", 1]], ("g2", "c"): []}
    assert check_converged(assignments, EXPECTED) == []


def test_partition_owned_twice_is_not_converged() -> None:
    assignments = {("g1", "a"): [("foo", 0), ("foo", 1)], ("g1", "b"): [("foo", 1)]}
    [violation] = check_converged(assignments, EXPECTED)
    assert violation.invariant == 3 and "foo-1" in violation.message
    assert "owned by 2 members: a, b" in violation.message


def test_unowned_partition_is_not_converged() -> None:
    [violation] = check_converged({("g1", "a"): [("foo", 0)]}, EXPECTED)
    assert "foo-1" in violation.message and "no member" in violation.message


def test_unexpected_partition_is_not_converged() -> None:
    assignments = {("g1", "a"): [("foo", 0), ("foo", 1), ("bar", 0)]}
    [violation] = check_converged(assignments, EXPECTED)
    assert "bar-0" in violation.message and "not subscribed" in violation.message


# invariant 4 -----------------------------------------------------------------------------


def state(
    group_epoch: int = 3,
    assignment_epoch: int = 3,
    member_epoch: int = 3,
    assigned: frozenset[tuple[str, int]] = frozenset({FOO0}),
) -> dict[str, Any]:
    return {
        "group_epoch": group_epoch,
        "assignment_epoch": assignment_epoch,
        "members": {"a": {"member_epoch": member_epoch, "assigned": set(assigned)}},
    }


def test_reloaded_state_equal_to_acknowledged_is_durable() -> None:
    assert check_durable({"g1": state()}, {"g1": state()}) == []


@pytest.mark.parametrize(
    ("reloaded", "says"),
    [
        ({}, "g1: vanished"),
        ({"g1": state(group_epoch=2)}, "group_epoch went back: 3 acknowledged, 2 reloaded"),
        ({"g1": state(assignment_epoch=4)}, "assignment_epoch changed: 3 acknowledged, 4"),
        ({"g1": state(member_epoch=2)}, "member a: member_epoch 3 acknowledged, 2 reloaded"),
        (
            {"g1": state(assigned=frozenset({("foo", 1)}))},
            "assignment lost [('foo', 0)], gained [('foo', 1)]",
        ),
        ({"g1": {**state(), "members": {}}}, "member a: missing after reload"),
        ({"g1": state(), "g2": state()}, "g2: appeared after reload"),
    ],
)
def test_each_difference_after_reload_is_reported(reloaded: dict, says: str) -> None:
    [violation] = check_durable({"g1": state()}, reloaded)
    assert violation.invariant == 4 and says in violation.message


def test_member_that_appears_only_after_reload_is_reported() -> None:
    grown = state()
    grown["members"]["b"] = {"member_epoch": 3, "assigned": set()}
    [violation] = check_durable({"g1": state()}, {"g1": grown})
    assert "member b: appeared after reload" in violation.message


# check_all and summarize -----------------------------------------------------------------


def test_check_all_reports_both_invariants_sorted() -> None:
    events = [ev(0.0, "assigned", "b", FOO0, epoch=9), ev(1.0, "assigned", "a", FOO0)]
    found = check_all(iter(events), {}, 5.0, {"g1": 1})
    assert [v.invariant for v in found] == [1, 2]


def test_summary_of_nothing_says_zero() -> None:
    assert summarize([]) == "violations: 0"


def test_summary_is_bounded_and_grouped_by_invariant() -> None:
    many = [Violation(2, f"m{i}") for i in range(100)] + [Violation(1, "overlap")]
    text = summarize(many)
    assert text.startswith("violations: 101")
    assert "invariant 1: 1" in text and "invariant 2: 100" in text
    assert "... and 95 more" in text and "m99" not in text


# property: handovers of one partition ----------------------------------------------------


@st.composite
def handovers(draw: st.DrawFn) -> tuple[list[str], list[int]]:
    """Owners of foo-0 in turn (never the same twice in a row) and when each took it."""
    first = draw(st.integers(0, 3))
    steps = draw(st.lists(st.integers(1, 3), min_size=1, max_size=11))  # never 0: a new owner
    owners = ["abcd"[(first + sum(steps[:i])) % 4] for i in range(len(steps) + 1)]
    gaps = draw(st.lists(st.integers(2, 50), min_size=len(owners), max_size=len(owners)))
    starts = [sum(gaps[:i]) for i in range(len(owners))]
    return owners, starts


def history(owners: list[str], starts: list[int], taken: list[int]) -> list[dict[str, Any]]:
    """Owner i is revoked at ``starts[i + 1]`` but takes the partition at ``taken[i]``."""
    events = []
    for i, owner in enumerate(owners):
        events.append(ev(taken[i], "assigned", owner, FOO0))
        if i + 1 < len(owners):  # the last owner keeps it until the run ends
            events.append(ev(starts[i + 1], "revoked", owner, FOO0))
    return sorted(events, key=lambda e: e["t"])


@given(handovers(), st.data())
def test_only_the_assignment_moved_before_a_revocation_is_reported(
    run: tuple[list[str], list[int]], data: st.DataObject
) -> None:
    owners, starts = run
    assert exclusive(history(owners, starts, starts), default_end=10_000.0) == []

    k = data.draw(st.integers(1, len(owners) - 1))
    early = starts[k - 1] + data.draw(st.integers(1, starts[k] - starts[k - 1] - 1))
    taken = [*starts[:k], early, *starts[k + 1 :]]
    [violation] = exclusive(history(owners, starts, taken), default_end=10_000.0)
    assert "foo-0" in violation.message
    assert f"owned by {owners[k - 1]} [{starts[k - 1]:.3f}, {starts[k]:.3f})" in violation.message
    assert f"by {owners[k]} [{early:.3f}" in violation.message


def _described(epoch: int, members: dict[str, int], error_code: int = 0):
    """The fields of a ConsumerGroupDescribe entry that check_not_behind reads."""
    from types import SimpleNamespace

    return SimpleNamespace(
        error_code=error_code, group_id="g", group_epoch=epoch,
        members=[SimpleNamespace(member_id=mid, member_epoch=e) for mid, e in members.items()],
    )


def test_a_group_that_moved_on_across_a_restart_is_not_behind():
    from actors.tools.invariants import check_not_behind

    before = _described(5, {"a": 5, "b": 4})
    after = _described(6, {"a": 6, "c": 6})  # b left, c joined: allowed while clients run
    assert check_not_behind(before, after) == []


def test_a_lower_epoch_after_a_restart_is_behind():
    from actors.tools.invariants import check_not_behind

    before = _described(5, {"a": 5})
    violations = check_not_behind(before, _described(4, {"a": 4}))
    assert [v.invariant for v in violations] == [4, 4]
    assert "group epoch 5 -> 4" in violations[0].message
    assert check_not_behind(before, _described(0, {}, error_code=69))[0].invariant == 4


def test_unowned_seconds_counts_the_gaps_in_each_partitions_ownership_once():
    from actors.tools.invariants import Interval, unowned_seconds

    ivs = [
        Interval("g", "t", 0, "a", 0.0, 4.0),
        Interval("g", "t", 0, "b", 3.0, 6.0),  # overlaps a: counted once
        Interval("g", "t", 0, "a", 8.0, 12.0),  # gap 6..8, then past the window's end
        Interval("g", "t", 1, "a", 1.0, 2.0),
    ]
    # partition 0: owned 0..6 and 8..10 of [0, 10) -> 2 s; partition 1: 9 s; partition 2: 10 s
    assert unowned_seconds(ivs, [("t", 0), ("t", 1), ("t", 2)], 0.0, 10.0) == 21.0


def test_check_stream_finds_a_gap_between_owners_and_a_commit_beyond_processing():
    from actors.tools.invariants_offsets import check_stream

    def processed(lo, hi):
        return {"group_id": "g", "member_id": "a", "t": 0.0, "event": "processed",
                "partitions": [("t", 0)], "from": lo, "to": hi}

    ok = [processed(0, 10), processed(8, 20)]  # overlap: re-processing is fine
    assert check_stream(ok, {("g", "t", 0): 20}) == []
    gap = [processed(0, 10), processed(12, 20)]
    assert [v.invariant for v in check_stream(gap, {})] == [5]
    assert [v.invariant for v in check_stream(ok, {("g", "t", 0): 25})] == [5]


def test_check_offsets_monotonic_reports_offsets_going_back_or_vanishing():
    from actors.tools.invariants_offsets import check_offsets_monotonic

    k = ("g", "t", 0)
    assert check_offsets_monotonic([{k: 1}, {k: 1}, {k: 5}]) == []
    assert "went back" in check_offsets_monotonic([{k: 5}, {k: 3}])[0].message
    assert "vanished" in check_offsets_monotonic([{k: 5}, {}])[0].message


# ----------------------------------------------------------------------------- acknowledged


def committed(t: float, member: str, offset: int, tp=FOO0, group: str = "g1") -> dict[str, Any]:
    return {"t": t, "event": "committed", "partitions": [list(tp)], "offset": offset,
            "member_id": member, "group_id": group}


def test_an_acknowledged_commit_the_coordinator_no_longer_holds_is_reported_as_lost():
    from actors.tools.invariants_offsets import check_acknowledged_commits

    events = [committed(1.0, "a", 10), committed(2.0, "a", 25), committed(3.0, "b", 30, ("foo", 1))]
    assert check_acknowledged_commits(events, {("g1", "foo", 0): 25, ("g1", "foo", 1): 31}) == []
    lost = check_acknowledged_commits(events, {("g1", "foo", 0): 24})
    assert [v.invariant for v in lost] == [5, 5]
    assert "commit of 25 was acknowledged, the coordinator holds 24" in lost[0].message
    assert "acknowledged to a at 2.000" in lost[0].message  # whom and when: where a hunt starts
    assert "holds nothing" in lost[1].message


def test_a_real_clients_failed_commit_in_its_timeline_is_neither_ownership_nor_acknowledged():
    from actors.tools.invariants_offsets import check_acknowledged_commits

    failed = {"t": 1.5, "event": "commit_failed", "partitions": [list(FOO0)], "offset": 40,
              "error": "Broker: Coordinator load in progress", "member_id": "a",
              "group_id": "g1"}
    events = [ev(1.0, "assigned", "a", FOO0), failed, committed(2.0, "a", 25),
              ev(3.0, "revoked", "a", FOO0)]
    assert check_all(events, {}, 10.0, {"g1": 1}) == []
    assert check_acknowledged_commits(events, {("g1", "foo", 0): 25}) == []  # 40 never acked


def test_a_controller_restart_that_loses_a_topic_or_an_acknowledged_config_is_reported():
    from actors.tools.controller_invariants import check_controller_kept, check_images_caught_up

    before = {"orders": ("id-1", 6), "audit": ("id-2", 2)}
    assert check_controller_kept(before, {**before, "new": ("id-3", 1)}, {"g": 1}, {"g": 1}) == []
    broken = check_controller_kept(before, {"orders": ("id-1", 3)}, {"g": 1}, {"g": 2})
    assert [v.invariant for v in broken] == [4, 4, 4]
    assert "audit vanished" in broken[0].message and "id-1/6" in broken[1].message
    assert check_images_caught_up(7, {0: 7, 1: 8}) == []
    assert [v.message for v in check_images_caught_up(7, {0: 7, 1: 6})] == [
        "offsets-1 holds image 6, the controller is at 7"]
