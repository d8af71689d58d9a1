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

Small groups whose current assignment is the kind range hands out (and no racks) are
assigned in plain Python (``range_small``), where numpy's cost per call would dominate; the
answer is the same.

Rack awareness: when members and partitions carry racks, a member keeps rack-matched
partitions first and receives rack-matched partitions first; a class's partition number
matches the racks holding it on every topic of the class (or on any, if no rack holds
all). Balance and co-partitioning always win over rack locality.
"""

from __future__ import annotations

import numpy as np

from assignors.server.layout import UNASSIGNED, GroupLayout
from assignors.server.racks import RackMatcher, build_rack_matcher
from assignors.server.range_small import assign_small, eligible
from assignors.server.uniform import sticky_quota_fill
from assignors.spec import AssignmentSpec, GroupAssignment


def co_partitioned_classes(layout: GroupLayout) -> list[tuple[np.ndarray, list[int]]]:
    """Topics grouped by (partition count, subscribers), in order of their first topic id."""
    classes: dict[tuple[int, bytes], tuple[np.ndarray, list[int]]] = {}
    digests: dict[int, bytes] = {}  # topics often share one subscribers array: digest it once
    sizes = layout.num_partitions.tolist()
    for t, subscribers in enumerate(layout.subscribers):
        digest = digests.get(id(subscribers))
        if digest is None:
            digest = digests[id(subscribers)] = subscribers.tobytes()
        classes.setdefault((sizes[t], digest), (subscribers, []))[1].append(t)
    return list(classes.values())


def majority_holder(stacked: np.ndarray, num_members: int) -> np.ndarray:
    """Per slot (column), the member holding it on most of the class's topics (rows); ties
    go to the smaller member id."""
    first = stacked[0]
    if (stacked == first).all():
        return first
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
        """Small groups in plain Python (``range_small``) when their input allows, the
        rest on arrays; both give the same assignment."""
        if eligible(spec):
            result = assign_small(spec)
            if result is not None:
                return result
        return self.assign_arrays(spec)

    def assign_arrays(self, spec: AssignmentSpec) -> GroupAssignment:
        """The vectorised path: any size, any input (racks, stale assignments)."""
        layout = GroupLayout(spec)
        if not layout.member_ids:
            return GroupAssignment(members={})
        current = layout.current_owners()
        owner = np.full(layout.num_slots, UNASSIGNED, dtype=np.int64)
        member_racks = layout.member_racks()
        slot_racks = None
        if member_racks.count(None) < len(member_racks):
            slot_racks = layout.slot_racks()
        position = np.full(len(layout.member_ids), UNASSIGNED, dtype=np.int64)
        decided = []
        for subscribers, topics in co_partitioned_classes(layout):
            position[subscribers] = np.arange(len(subscribers))
            size = int(layout.num_partitions[topics[0]])
            # The class's slots, one row per topic: offsets[t] + partition number.
            rows = layout.offsets[topics][:, None] + np.arange(size, dtype=np.int64)
            segment = current[rows]
            held = majority_holder(
                np.where(segment >= 0, position[segment], UNASSIGNED), len(subscribers)
            )
            racks: RackMatcher | None = None
            if slot_racks is not None:
                racks = build_rack_matcher(
                    member_racks, class_slot_racks(layout, topics, slot_racks)
                )
            chosen = subscribers[sticky_quota_fill(held, subscribers, racks)]
            owner[rows] = chosen
            decided.append((chosen, topics))
            position[subscribers] = UNASSIGNED
        return build_by_class(layout, owner, current, decided)


def build_by_class(
    layout: GroupLayout,
    owner: np.ndarray,
    current: np.ndarray,
    decided: list[tuple[np.ndarray, list[int]]],
) -> GroupAssignment:
    """The API's mappings, made once per (member, class): a member has the same partition
    numbers on every topic of a class, so one frozenset serves them all. Members whose
    partitions did not change get their input mapping back (``GroupLayout.unchanged``)."""
    keep = layout.unchanged(owner, current)
    result = dict(zip(layout.member_ids, (m.assigned_partitions for m in layout.members),
                      strict=True))
    for m in np.flatnonzero(~keep).tolist():
        result[layout.member_ids[m]] = {}
    for chosen, topics in decided:
        numbers = np.flatnonzero((chosen >= 0) & ~keep[np.maximum(chosen, 0)])
        if len(numbers) == 0:
            continue
        holders = chosen[numbers]
        order = np.argsort(holders, kind="stable")  # per member, numbers stay ascending
        numbers, holders = numbers[order].tolist(), holders[order]
        firsts = np.flatnonzero(np.concatenate(([True], holders[1:] != holders[:-1])))
        lasts = np.concatenate((firsts[1:], [len(numbers)])).tolist()
        topic_ids = [layout.topic_ids[t] for t in topics]
        for m, first, last in zip(holders[firsts].tolist(), firsts.tolist(), lasts, strict=True):
            result[layout.member_ids[m]].update(
                dict.fromkeys(topic_ids, frozenset(numbers[first:last]))
            )
    return GroupAssignment(members=result)
