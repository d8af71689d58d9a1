"""Rack awareness and slot placement shared by the server assignors.

A *slot* is whatever an assignor hands out as one unit: a partition of the whole group
(uniform) or a partition number of a class of co-partitioned topics (range). Both
assignors first decide *how many* new slots each member receives (that is where balance
lives) and only then *which* slots: :func:`place` makes that second choice, and when
members and partitions carry racks it gives each member slots with a replica in its own
rack first. So rack locality can never worsen balance: the counts are fixed before racks
are looked at.

Rack awareness switches itself off (:func:`build_rack_matcher` returns ``None``) when no
member has a rack, no partition has rack information, or every partition has a replica in
every member's rack; the assignors then behave exactly as without racks.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

import numpy as np


class RackMatcher:
    """Answers "does slot ``s`` have a replica in member ``m``'s rack?", in bulk or singly.

    Racks are interned to small ints (only the racks some member sits in matter). A slot
    with unknown racks (``None``) and a member without a rack match everything: rack
    awareness then has no preference to express, so it must not move anything.
    """

    def __init__(
        self, member_rack: np.ndarray, slot_racks: Sequence[tuple[int, ...] | None], num_racks: int
    ) -> None:
        self.member_rack = member_rack
        self._slot_racks = slot_racks
        self._num_racks = num_racks
        self._known = np.fromiter(
            (r is not None for r in slot_racks), dtype=bool, count=len(slot_racks)
        )
        keys = [
            slot * num_racks + rack
            for slot, racks in enumerate(slot_racks)
            if racks
            for rack in racks
        ]
        self._keys = np.array(keys, dtype=np.int64)  # ascending: slots ascend, racks sorted

    def racks_of(self, slot: int) -> tuple[int, ...]:
        """Member racks holding a replica of ``slot``; empty when unknown or none."""
        return self._slot_racks[slot] or ()

    def match_one(self, slot: int, member: int) -> bool:
        rack = int(self.member_rack[member])
        racks = self._slot_racks[slot]
        return rack < 0 or racks is None or rack in racks

    def matches(self, slots: np.ndarray, members: np.ndarray) -> np.ndarray:
        """Element-wise :meth:`match_one` over two aligned arrays."""
        rack = self.member_rack[members].astype(np.int64)
        key = slots.astype(np.int64) * self._num_racks + rack
        if len(self._keys):
            pos = np.minimum(np.searchsorted(self._keys, key), len(self._keys) - 1)
            hit = self._keys[pos] == key
        else:
            hit = np.zeros(len(key), dtype=bool)
        return (rack < 0) | ~self._known[slots] | hit


def build_rack_matcher(
    member_racks: Sequence[str | None], slot_racks: Sequence[frozenset[str] | None]
) -> RackMatcher | None:
    """A matcher when rack locality can make a difference, else ``None`` (rack-blind).

    ``member_racks[m]`` is member ``m``'s rack; ``slot_racks[s]`` the racks holding
    replicas of slot ``s`` (``None``: unknown).
    """
    names = sorted({rack for rack in member_racks if rack is not None})
    if not names:
        return None
    index = {rack: i for i, rack in enumerate(names)}
    encoded: list[tuple[int, ...] | None] = []
    useful = False
    for racks in slot_racks:
        if racks is None:
            encoded.append(None)
            continue
        mine = tuple(sorted(index[r] for r in racks if r in index))
        useful = useful or len(mine) < len(names)
        encoded.append(mine)
    if not useful:
        return None
    member_rack = np.array([-1 if r is None else index[r] for r in member_racks], dtype=np.int64)
    return RackMatcher(member_rack, encoded, len(names))


def place(
    slots: np.ndarray, recipients: np.ndarray, counts: np.ndarray, racks: RackMatcher | None
) -> np.ndarray:
    """Hand ``slots`` (ascending) out so that ``recipients[i]`` receives ``counts[i]`` of them.

    Returns, aligned with ``slots``, the position in ``recipients`` of each slot's new
    owner. Without racks the slots go in ascending order to the recipients taken in their
    given order (member-id order), contiguously. With racks, rack-matched pairs are made
    first (most constrained slots first), then the rest go as without racks.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if int(counts.sum()) != len(slots):
        raise AssertionError("placement counts must add up to the slots to place")
    out = np.full(len(slots), -1, dtype=np.int64)
    remaining = counts
    if racks is not None and len(slots):
        remaining = _place_rack_matched(slots, recipients, counts, racks, out)
    rest = np.flatnonzero(out < 0)
    out[rest] = np.repeat(np.arange(len(recipients), dtype=np.int64), remaining)
    return out


def _place_rack_matched(
    slots: np.ndarray,
    recipients: np.ndarray,
    counts: np.ndarray,
    racks: RackMatcher,
    out: np.ndarray,
) -> np.ndarray:
    """Greedy rack-matched placement into ``out``; returns the counts still to place."""
    remaining = counts.tolist()
    queues: dict[int, deque[int]] = {}
    member_rack = racks.member_rack[recipients].tolist()
    for i, (rack, count) in enumerate(zip(member_rack, remaining, strict=True)):
        if rack >= 0 and count > 0:
            queues.setdefault(rack, deque()).append(i)
    if not queues:
        return counts
    slot_list = slots.tolist()
    candidates = [j for j, s in enumerate(slot_list) if racks.racks_of(s)]
    candidates.sort(key=lambda j: len(racks.racks_of(slot_list[j])))  # stable: then ascending
    for j in candidates:
        for rack in racks.racks_of(slot_list[j]):
            queue = queues.get(rack)
            while queue and remaining[queue[0]] == 0:
                queue.popleft()
            if queue:
                i = queue[0]
                out[j] = i
                remaining[i] -= 1
                break
    return np.array(remaining, dtype=np.int64)
