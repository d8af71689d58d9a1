"""The ``uniform`` server assignor: Kafka's default, balanced and sticky.

Guarantees, in priority order (balance > rack locality > nothing else):

* **Complete.** Every partition of every subscribed, existing topic goes to exactly one
  member subscribed to it. Partitions of topics a member left, of topics that vanished and
  numbers beyond a topic's size are dropped from its assignment.
* **Balanced.** Homogeneous groups (every member subscribes to the same topics): sizes
  differ by at most one. Heterogeneous groups: *locally* balanced, as Kafka's
  UniformHeterogeneousAssignmentBuilder aims for: no member owns a partition that a
  member subscribed to its topic and holding 2+ fewer partitions could take.
* **Sticky.** A member keeps its current partitions unless balance needs them; an
  over-quota member keeps its *lowest* partitions (rack-matched ones first) and releases
  its highest. Re-running the assignor on its own output changes nothing.
* **Deterministic.** Members are taken in sorted member-id order, topics in sorted topic-id
  order, partitions ascending; ties on load go to the smaller member id.

The group is flattened into numpy arrays (:class:`~assignors.server.layout.GroupLayout`):
every partition of the group is one *slot* ``offset[topic] + partition``, and an ``owner``
array maps slots to member indices (``-1``: unassigned). Quotas, retention and hand-out are
array operations; a member whose partitions did not change gets its input mapping back.
"""

from __future__ import annotations

import heapq

import numpy as np

from assignors.server.layout import UNASSIGNED, GroupLayout
from assignors.server.racks import RackMatcher, place
from assignors.spec import AssignmentSpec, GroupAssignment


def sticky_quota_fill(
    current: np.ndarray, members: np.ndarray, racks: RackMatcher | None
) -> np.ndarray:
    """Balance ``len(current)`` slots over ``len(members)`` members to within one, stickily.

    ``current[s]`` is the position in ``members`` (ascending member ids) of slot ``s``'s
    current owner, or ``UNASSIGNED``; ``members`` holds the global member indices (for
    racks). Returns the new owner positions. Each member's quota is ``n // k``; the
    ``n % k`` extra slots go first to members already holding more than that (in member
    order), then to the others in member order. A member keeps its lowest slots
    (rack-matched first) up to its quota; the freed and unowned slots are handed out
    ascending to the members under quota, in member order.

    Shared by ``uniform`` (slots: all partitions of a homogeneous group) and ``range``
    (slots: the partition numbers of one co-partitioned class of topics).
    """
    num_slots, num_members = len(current), len(members)
    if num_members == 0:
        return np.full(num_slots, UNASSIGNED, dtype=np.int64)
    min_quota, extra = divmod(num_slots, num_members)
    assigned = np.flatnonzero(current >= 0)
    holders = current[assigned]
    held = np.bincount(holders, minlength=num_members)

    limit = np.full(num_members, min_quota, dtype=np.int64)
    keeps_extra = np.flatnonzero(held > min_quota)[:extra]
    limit[keeps_extra] += 1
    target = limit.copy()
    spare = extra - len(keeps_extra)
    if spare:
        target[np.flatnonzero(limit == min_quota)[:spare]] += 1

    # Rank each member's slots: rack-matched before mismatched, then ascending.
    if racks is not None and len(assigned):
        mismatched = ~racks.matches(assigned, members[holders])
        order = np.lexsort((assigned, mismatched, holders))
    else:
        order = np.argsort(holders, kind="stable")
    sorted_holders = holders[order]
    first_of_holder = np.cumsum(held) - held
    rank = np.arange(len(order)) - first_of_holder[sorted_holders]
    released = assigned[order[rank >= limit[sorted_holders]]]

    owner = current.copy()
    owner[released] = UNASSIGNED
    need = target - np.minimum(held, limit)
    free = np.flatnonzero(owner < 0)
    owner[free] = place(free, members, need, racks)
    return owner


def water_fill(loads: np.ndarray, units: int) -> np.ndarray:
    """How many of ``units`` new items each member gets, least loaded first.

    Same counts as giving items one at a time to the least-loaded member (ties to the
    smaller position, i.e. member id): raises the lowest loads to a common level ``h``,
    then one more to the first members sitting at ``h``.
    """
    if units == 0 or len(loads) == 0:
        return np.zeros(len(loads), dtype=np.int64)
    order = np.argsort(loads, kind="stable")
    ascending = loads[order]
    prefix = np.concatenate(([0], np.cumsum(ascending)))

    def needed(level: int) -> int:
        below = int(np.searchsorted(ascending, level, side="left"))
        return level * below - int(prefix[below])

    low, high = int(ascending[0]), int(ascending[0]) + units  # needed(low)=0, needed(high)>=units
    while low < high:
        mid = (low + high + 1) // 2
        if needed(mid) <= units:
            low = mid
        else:
            high = mid - 1
    add = np.maximum(low - loads, 0)
    left = units - int(add.sum())
    if left:
        at_level = np.flatnonzero(loads <= low)  # ascending positions = member-id order
        add[at_level[:left]] += 1
    return add


class HeterogeneousBalancer:
    """Assigns the unowned slots of a heterogeneous group, then restores local balance.

    Local balance: for every topic, no owner of one of its partitions holds 2+ more
    partitions than some other subscriber. Each fixing move takes a partition from the
    most-loaded owner to the least-loaded subscriber; it lowers the sum of squared loads
    by at least 2, so the number of moves is bounded by half the initial sum of squares.
    """

    def __init__(self, layout: GroupLayout, owner: np.ndarray, racks: RackMatcher | None):
        self.layout = layout
        self.owner = owner
        self.racks = racks
        held = owner[owner >= 0]
        self.load = np.bincount(held, minlength=len(layout.members)).astype(np.int64)

    def run(self) -> np.ndarray:
        self._assign_unowned()
        self._rebalance()
        return self.owner

    def _segment(self, t: int) -> np.ndarray:
        start, end = self.layout.offsets[t], self.layout.offsets[t + 1]
        return self.owner[start:end]  # a view: writes go to self.owner

    def _assign_unowned(self) -> None:
        """Least-loaded subscribers first; most constrained topics (fewest subscribers) first."""
        layout = self.layout
        order = sorted(range(len(layout.topic_ids)), key=lambda t: len(layout.subscribers[t]))
        for t in order:
            segment = self._segment(t)
            free = np.flatnonzero(segment < 0)
            if len(free) == 0:
                continue
            subscribers = layout.subscribers[t]
            add = water_fill(self.load[subscribers], len(free))
            positions = place(free + layout.offsets[t], subscribers, add, self.racks)
            segment[free] = subscribers[positions]
            self.load[subscribers] += add

    def _rebalance(self) -> None:
        budget = int((self.load**2).sum()) // 2 + 1  # the move bound stated above
        contested = [
            t
            for t, s in enumerate(self.layout.subscribers)
            if len(s) >= 2 and self.layout.num_partitions[t] > 0
        ]
        moved = True
        while moved:
            moved = False
            for t in contested:
                moves = self._rebalance_topic(t)
                budget -= moves
                moved = moved or moves > 0
            if budget < 0:
                raise AssertionError("local balancing exceeded its move bound")

    def _rebalance_topic(self, t: int) -> int:
        segment = self._segment(t)
        subscribers = self.layout.subscribers[t]
        load = self.load
        sub_loads = load[subscribers]
        owner_loads = load[segment]
        lowest, highest = int(sub_loads.min()), int(owner_loads.max())
        if highest < lowest + 2:
            return 0
        donor_slots = np.flatnonzero(owner_loads >= lowest + 2)
        by_donor = donor_slots[np.argsort(segment[donor_slots], kind="stable")]
        donors: dict[int, list[int]] = {}
        for slot, donor in zip(by_donor.tolist(), segment[by_donor].tolist(), strict=True):
            donors.setdefault(donor, []).append(slot)  # ascending per donor
        donor_heap = [(-int(load[u]), u) for u in donors]
        receiver_heap = [(int(load[v]), int(v)) for v in subscribers[sub_loads <= highest - 2]]
        heapq.heapify(donor_heap)
        heapq.heapify(receiver_heap)
        offset = int(self.layout.offsets[t])
        moves = 0
        while donor_heap and receiver_heap:
            neg_load, u = donor_heap[0]
            if -neg_load != load[u] or not donors[u]:
                heapq.heappop(donor_heap)
                if donors[u]:
                    heapq.heappush(donor_heap, (-int(load[u]), u))
                continue
            receiver_load, v = receiver_heap[0]
            if receiver_load != load[v]:
                heapq.heapreplace(receiver_heap, (int(load[v]), v))
                continue
            if load[u] - load[v] < 2:
                break
            slot = self._pick_release(donors[u], u, v, offset)
            segment[slot] = v
            load[u] -= 1
            load[v] += 1
            heapq.heapreplace(receiver_heap, (int(load[v]), v))
            heapq.heappop(donor_heap)
            if donors[u]:
                heapq.heappush(donor_heap, (-int(load[u]), u))
            moves += 1
        return moves

    def _pick_release(self, slots: list[int], donor: int, receiver: int, offset: int) -> int:
        """Which of the donor's slots moves: its highest, rack locality permitting."""
        racks = self.racks
        if racks is None:
            return slots.pop()
        ranked = [
            (not racks.match_one(offset + s, donor), racks.match_one(offset + s, receiver), s)
            for s in slots
        ]
        best = max(ranked)
        slots.remove(best[2])
        return best[2]


class UniformAssignor:
    """Kafka's ``uniform`` server assignor (the default); see the module docstring."""

    name = "uniform"

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        layout = GroupLayout(spec)
        if not layout.member_ids:
            return GroupAssignment(members={})
        current = layout.current_owners()
        racks = layout.rack_matcher()
        if layout.homogeneous:
            everyone = np.arange(len(layout.member_ids), dtype=np.int64)
            owner = sticky_quota_fill(current, everyone, racks)
        else:
            owner = HeterogeneousBalancer(layout, current.copy(), racks).run()
        if (owner < 0).any():
            raise AssertionError("uniform assignor left a subscribed partition unassigned")
        return layout.build(owner, current)
