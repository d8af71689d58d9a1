"""The benchmark's test of a stable group (actors/tools/stable_group.py), the same for every
system it compares."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from actors.tools.stable_group import Owners


def test_a_group_is_stable_once_every_member_was_told_its_one_partition() -> None:
    owners = Owners(3)
    owners.expect({"a", "b", "c"})
    owners.add("a", [0])
    owners.add("b", [1])
    assert owners.wait(0) is None  # c has been told nothing yet
    owners.add("c", [2])
    assert owners.wait(0) is not None


def test_a_partition_held_by_two_members_is_not_stable() -> None:
    owners = Owners(2)
    owners.expect({"a", "b"})
    owners.add("a", [0, 1])
    owners.add("b", [1])
    assert owners.wait(0) is None
    owners.remove("a", [1])
    assert owners.wait(0) is not None


def test_assignments_seen_before_the_members_were_declared_count() -> None:
    owners = Owners(2)
    owners.add("a", [0])
    owners.add("b", [1])
    owners.expect({"a", "b"})
    assert owners.wait(0) is not None


def test_after_a_leave_the_others_must_hold_its_partition_and_its_late_callbacks_are_ignored(
) -> None:
    owners = Owners(3)
    owners.expect({"a", "b", "c"})
    for member, p in (("a", 0), ("b", 1), ("c", 2)):
        owners.add(member, [p])
    owners.expect({"a", "b"})  # c leaves: partition 2 is no one's from now on
    assert owners.wait(0) is None
    owners.add("c", [2])  # a late callback of the leaver
    assert owners.wait(0) is None
    owners.add("b", [2])
    assert owners.wait(0) is not None


@given(st.integers(1, 40), st.integers(1, 40))
def test_a_balanced_assignment_is_stable_and_one_member_with_too_many_is_not(
        partitions: int, members: int) -> None:
    balanced, skewed = Owners(partitions), Owners(partitions)
    for owners in (balanced, skewed):
        owners.expect(set(range(members)))
    for p in range(partitions):
        balanced.add(p % members, [p])  # round robin
        skewed.add(0 if p < -(-partitions // members) + 1 else p % members, [p])
    assert balanced.wait(0) is not None
    assert skewed.wait(0) is None or -(-partitions // members) + 1 > partitions


def test_an_unbalanced_group_names_the_members_outside_their_share_and_counts_holders():
    owners = Owners(4)
    owners.expect({"a", "b"})
    owners.add("a", [0, 1, 2])
    assert owners.holding() == (1, 3)
    assert owners.unbalanced() == {"a": [0, 1, 2], "b": []}
    owners.remove("a", [2])
    owners.add("b", [2, 3])
    assert owners.holding() == (2, 4) and owners.unbalanced() == {}
