"""The version-range rule of client-side assignors (seed 004), on both sides of the wire.

Every client-side assignor advertises the ``[minimum_version, maximum_version]`` range of the
metadata format it reads and writes. Two decisions follow from the ranges, and they live
together here because they must agree:

* the coordinator picks the member that runs the group's assignor
  (:func:`select_by_version_range`), and gives up with ``UNSUPPORTED_ASSIGNOR`` when the ranges
  share no version (:func:`common_version_range`);
* the chosen assignor writes each member's metadata at a version that member reads
  (:func:`write_version`): the highest both speak, so a group with a lagging member keeps
  working during a rolling upgrade and upgrades that member's metadata once it can read it.
"""

from __future__ import annotations

from collections.abc import Mapping

VersionRange = tuple[int, int]  # (minimum_version, maximum_version), both inclusive


def common_version_range(ranges: Mapping[str, VersionRange]) -> VersionRange | None:
    """The versions every member supports, ``(low, high)``, or ``None`` if there are none.

    Ranges pairwise overlapping is the same as a common version (intervals on a line).
    """
    if not ranges:
        return None
    low = max(lo for lo, _ in ranges.values())
    high = min(hi for _, hi in ranges.values())
    return (low, high) if low <= high else None


def select_by_version_range(ranges: Mapping[str, VersionRange]) -> str | None:
    """The member (id) to run the client-side assignor, or ``None``: UNSUPPORTED_ASSIGNOR.

    Seed 004: "the group coordinator must select a worker which is able to handle all the
    supported versions" (A [1-5], B [3-4], C [2-4] -> A). Preference, ties to the smaller
    member id: a member whose range covers every other member's; else, when all ranges
    share a version, the widest range; ranges without a common version -> ``None``.
    """
    if common_version_range(ranges) is None:
        return None
    lowest = min(lo for lo, _ in ranges.values())
    highest = max(hi for _, hi in ranges.values())
    members = sorted(ranges)
    covering = [m for m in members if ranges[m][0] <= lowest and ranges[m][1] >= highest]
    if covering:
        return covering[0]
    return min(members, key=lambda m: (-(ranges[m][1] - ranges[m][0]), m))


def write_version(own: VersionRange, member_maximum: int) -> int:
    """The metadata version an assignor speaking ``own`` writes for a member.

    The highest version both read: ``min(own maximum, member maximum)``. A member claiming
    to read less than ``own``'s minimum gets the minimum: the coordinator only picks an
    assignor whose range covers every member's, so that member has not yet said what it
    reads (version 0 before its first assignment) and decodes defensively.
    """
    low, high = own
    return max(low, min(high, member_maximum))
