"""The ``range`` server assignor: contiguous ranges per topic, co-partitioned, sticky.

Per topic, the subscribed members in member-id order get contiguous ranges of
``num_partitions // num_members`` partitions, the first ``num_partitions % num_members``
of them one more (Kafka's RangeAssignor). Topics with the same partition count and the
same subscribers form a *co-partitioned class* and are assigned as one: a member gets the
same partition numbers on every topic of its class, which is what joins of co-partitioned
streams need.

Stickiness follows Kafka's server-side range assignor: a member keeps the partitions of
its current assignment that still fit within its quota (lowest first), and only the
rest is handed out, ascending, to members under quota. A member's current holding in a
class is read per partition number by majority over the class's topics (ties to the
smaller member id), so a class that drifted apart is pulled back together.

Rack awareness: when members and partitions carry racks, a member keeps rack-matched
partitions first and receives rack-matched partitions first; a class's partition number
matches the racks holding it on every topic of the class (or on any, if no rack holds
all). Balance and co-partitioning always win over rack locality.
"""

from __future__ import annotations

import numpy as np

from assignors.server.racks import RackMatcher, build_rack_matcher
from assignors.server.uniform import UNASSIGNED, GroupLayout, sticky_quota_fill
from assignors.spec import AssignmentSpec, GroupAssignment


def co_partitioned_classes(layout: GroupLayout) -> list[tuple[np.ndarray, list[int]]]:
    """Topics grouped by (partition count, subscribers), in order of their first topic id."""
    classes: dict[tuple[int, bytes], tuple[np.ndarray, list[int]]] = {}
    for t, subscribers in enumerate(layout.subscribers):
        key = (int(layout.num_partitions[t]), subscribers.tobytes())
        classes.setdefault(key, (subscribers, []))[1].append(t)
    return list(classes.values())


def majority_holder(holdings: list[np.ndarray], num_members: int) -> np.ndarray:
    """Per slot, the member holding it on most of the class's topics (ties: smaller id)."""
    first = holdings[0]
    if all(np.array_equal(first, other) for other in holdings[1:]):
        return first
    stacked = np.vstack(holdings)
    slots = np.broadcast_to(np.arange(stacked.shape[1]), stacked.shape)
    valid = stacked >= 0
    codes = slots[valid].astype(np.int64) * num_members + stacked[valid]
    unique, counts = np.unique(codes, return_counts=True)
    slot_of, holder_of = np.divmod(unique, num_members)
    order = np.lexsort((holder_of, -counts, slot_of))
    best = np.ones(len(order), dtype=bool)
    best[1:] = slot_of[order][1:] != slot_of[order][:-1]
    result = np.full(stacked.shape[1], UNASSIGNED, dtype=np.int64)
    result[slot_of[order][best]] = holder_of[order][best]
    return result


def class_slot_racks(
    layout: GroupLayout, topics: list[int], slot_racks: list[frozenset[str] | None]
) -> list[frozenset[str] | None]:
    """Racks of each partition number of a class: held on every topic, else on any."""
    size = int(layout.num_partitions[topics[0]])
    offsets = [int(layout.offsets[t]) for t in topics]
    result: list[frozenset[str] | None] = []
    for p in range(size):
        known = [slot_racks[o + p] for o in offsets if slot_racks[o + p] is not None]
        if not known:
            result.append(None)
            continue
        common = frozenset.intersection(*known)
        result.append(common if common else frozenset.union(*known))
    return result


class RangeAssignor:
    """Kafka's ``range`` server assignor; see the module docstring."""

    name = "range"

    def assign(self, spec: AssignmentSpec) -> GroupAssignment:
        layout = GroupLayout(spec)
        if not layout.member_ids:
            return GroupAssignment(members={})
        current = layout.current_owners()
        owner = np.full(layout.num_slots, UNASSIGNED, dtype=np.int64)
        member_racks = layout.member_racks()
        slot_racks = None
        if any(rack is not None for rack in member_racks):
            slot_racks = layout.slot_racks()
        position = np.full(len(layout.member_ids), UNASSIGNED, dtype=np.int64)
        for subscribers, topics in co_partitioned_classes(layout):
            position[subscribers] = np.arange(len(subscribers))
            holdings = []
            for t in topics:
                segment = current[layout.offsets[t] : layout.offsets[t + 1]]
                holdings.append(np.where(segment >= 0, position[segment], UNASSIGNED))
            held = majority_holder(holdings, len(subscribers))
            racks: RackMatcher | None = None
            if slot_racks is not None:
                racks = build_rack_matcher(
                    member_racks, class_slot_racks(layout, topics, slot_racks)
                )
            chosen = subscribers[sticky_quota_fill(held, subscribers, racks)]
            for t in topics:
                owner[layout.offsets[t] : layout.offsets[t + 1]] = chosen
            position[subscribers] = UNASSIGNED
        return layout.build(owner)
