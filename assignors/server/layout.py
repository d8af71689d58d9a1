"""A group flattened into arrays: what both server assignors work on.

Every partition of the group is one *slot* ``offsets[topic] + partition`` and an ``owner``
array maps slots to member indices (``UNASSIGNED``: nobody). The assignors decide on these
arrays; only the way in (``current_owners``) and the way out (``build``) touch the spec's
per-member mappings, and both do it in bulk, so an assignment costs a few array operations
per partition and a few Python operations per member, not per partition.

The way out reuses what did not change: a member whose partitions are exactly the ones it
came with gets its own input mapping back (the same object). In a group of 10,000 members
where one joins, the output is built for the dozen members that moved, and a caller (the
coordinator's target builder) can tell an unchanged member by identity alone.
"""

from __future__ import annotations

from itertools import chain, pairwise, repeat
from operator import attrgetter, is_

import numpy as np

from assignors.server.racks import RackMatcher, build_rack_matcher
from assignors.spec import AssignmentSpec, GroupAssignment, MemberSpec, PartitionAssignorError

UNASSIGNED = -1

# Per-member reads done with map() over C-level getters: a group of 10,000 members costs a
# few milliseconds of Python per pass, so the passes over members stay few and cheap.
_subscription = attrgetter("subscribed_topic_ids")
_assigned = attrgetter("assigned_partitions")
_rack = attrgetter("rack_id")
_size = attrgetter("num_partitions")
_partition_racks = attrgetter("partition_racks")
_flat = attrgetter("flat_assignment")
_flat_topics = attrgetter("topic_ids")
_flat_lengths = attrgetter("lengths")
_flat_partitions = attrgetter("partitions")
_all_frozensets = attrgetter("all_frozensets")


def _contains(sorted_values: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """Element-wise ``query in sorted_values``."""
    if len(sorted_values) == 0:
        return np.zeros(len(queries), dtype=bool)
    at = np.minimum(np.searchsorted(sorted_values, queries), len(sorted_values) - 1)
    return sorted_values[at] == queries


class GroupLayout:
    """An :class:`AssignmentSpec` flattened into arrays, shared by both server assignors.

    ``member_ids`` are sorted; member ``m`` is ``member_ids[m]``. ``topic_ids`` are the
    sorted ids of the existing topics someone subscribes to; topic ``t`` holds slots
    ``offsets[t] .. offsets[t + 1] - 1``. ``subscribers[t]`` lists, ascending, the members
    subscribed to topic ``t``.
    """

    def __init__(self, spec: AssignmentSpec) -> None:
        self.spec = spec
        self.member_ids: list[str] = sorted(spec.members)
        self.members: list[MemberSpec] = list(map(spec.members.__getitem__, self.member_ids))
        num_members = len(self.members)
        # Subscriptions are usually shared objects (one per distinct subscription), so the
        # identity test settles almost every member without comparing sets.
        subscriptions = list(map(_subscription, self.members))
        first = self.members[0].subscribed_topic_ids if self.members else frozenset()
        if all(map(is_, subscriptions, repeat(first))):  # one object: no grouping to do
            distinct = {id(first): first}
            same = True
            unique_ids = [id(first)]
            self.subscription_of = np.zeros(num_members, dtype=np.int64)
        else:
            distinct = dict(zip(map(id, subscriptions), subscriptions, strict=True))
            same = all(s == first for s in distinct.values())
            keys = np.fromiter(map(id, subscriptions), dtype=np.uint64, count=num_members)
            unique, self.subscription_of = np.unique(keys, return_inverse=True)
            self.subscription_of = self.subscription_of.reshape(-1)
            unique_ids = unique.tolist()
        subscribed = first if same else set().union(*distinct.values())
        self.topic_ids = sorted(t for t in subscribed if t in spec.topics)
        self.topic_index = {tid: t for t, tid in enumerate(self.topic_ids)}
        # Members grouped by subscription object (group g), and the (group, topic) pairs of
        # the subscriptions as sorted codes g * topics + t: no larger than the input itself.
        codes = []
        for g, key in enumerate(unique_ids):
            found = np.fromiter(map(self.topic_index.get, distinct[key], repeat(-1)),
                                dtype=np.int64, count=len(distinct[key]))
            codes.append(g * len(self.topic_ids) + found[found >= 0])
        self.subscription_codes = np.sort(np.concatenate(codes)) if codes else np.zeros(0, int)
        if same:
            everyone = np.arange(num_members, dtype=np.int64)
            self.subscribers = [everyone] * len(self.topic_ids)
        else:
            self.subscribers = self._subscribers_per_topic()
        # Homogeneous once vanished topics are ignored: everyone subscribes to every topic.
        # Topics with the same subscribers share one array: each distinct one is looked at once.
        self.homogeneous = same or all(
            len(s) == num_members for s in {id(s): s for s in self.subscribers}.values()
        )
        self.num_partitions = self._checked_sizes()
        self.offsets = np.concatenate(([0], np.cumsum(self.num_partitions))).astype(np.int64)
        self.num_slots = int(self.offsets[-1])
        # Members whose input mapping is exactly what ``build`` would make of their current
        # slots: they may get it back as is (set by ``current_owners``).
        self.reusable = np.zeros(num_members, dtype=bool)

    def _subscribers_per_topic(self) -> list[np.ndarray]:
        """Per topic, its subscribers ascending; topics subscribed by the same groups of
        members share one array (built once), which ``range`` also relies on to find its
        co-partitioned classes quickly."""
        num_groups, num_topics = int(self.subscription_of.max()) + 1, len(self.topic_ids)
        order = np.argsort(self.subscription_of, kind="stable")
        bounds = np.searchsorted(self.subscription_of[order], np.arange(num_groups + 1))
        members_of = [order[a:b] for a, b in pairwise(bounds.tolist())]
        group, topic = np.divmod(self.subscription_codes, num_topics)
        by_topic = np.argsort(topic, kind="stable")  # groups ascending within a topic
        cuts = np.searchsorted(topic[by_topic], np.arange(num_topics + 1)).tolist()
        groups_sorted = group[by_topic]
        shared: dict[bytes, np.ndarray] = {}
        out = []
        for a, b in pairwise(cuts):
            groups = groups_sorted[a:b]
            key = groups.tobytes()
            array = shared.get(key)
            if array is None:
                parts = [members_of[g] for g in groups.tolist()]
                array = np.sort(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)
                shared[key] = array
            out.append(array)
        return out

    def _checked_sizes(self) -> np.ndarray:
        """The subscribed topics' partition counts, checked in one pass (a group may have
        thousands of topics: a per-topic Python call would be most of a small group's cost)."""
        topics = list(map(self.spec.topics.__getitem__, self.topic_ids))
        sizes = np.fromiter(map(_size, topics), dtype=np.int64, count=len(topics))
        if len(sizes) and sizes.min() < 0:
            t = int(np.flatnonzero(sizes < 0)[0])
            raise PartitionAssignorError(
                f"topic {self.topic_ids[t]} has a negative partition count {sizes[t]}"
            )
        all_racks = list(map(_partition_racks, topics))
        if all_racks.count(None) == len(all_racks):
            return sizes
        for topic_id, topic, racks in zip(self.topic_ids, topics, all_racks, strict=True):
            if racks is not None and len(racks) != topic.num_partitions:
                raise PartitionAssignorError(
                    f"topic {topic_id}: {len(racks)} partition rack sets "
                    f"for {topic.num_partitions} partitions"
                )
        return sizes

    def current_owners(self) -> np.ndarray:
        """Owner of each slot per the members' current assignments, or ``UNASSIGNED``.

        Only partitions a member may still own are kept: its topic is subscribed and
        exists, the number is in range. Should two members claim one partition, the
        first in member-id order keeps it. Sets ``reusable``.
        """
        owner = np.full(self.num_slots, UNASSIGNED, dtype=np.int64)
        # Each member's assignment as arrays, cached on its spec (``MemberSpec.flat_assignment``):
        # a member whose spec the coordinator kept costs a few C-level steps here.
        flats = list(map(_flat, self.members))
        member_keys = list(map(_flat_topics, flats))
        per_member = np.fromiter(map(len, member_keys), dtype=np.int64, count=len(flats))
        keys = list(chain.from_iterable(member_keys))
        self.reusable[:] = True
        if not keys:
            return owner
        index = self.topic_index
        topic = np.fromiter(map(index.get, keys, [-1] * len(keys)), dtype=np.int64,
                            count=len(keys))
        member = np.repeat(np.arange(len(flats), dtype=np.int64), per_member)
        known = topic >= 0
        if not self.homogeneous:  # homogeneous: every known topic is everyone's
            codes = self.subscription_of[member] * len(self.topic_ids) + np.maximum(topic, 0)
            known &= _contains(self.subscription_codes, codes)
        lengths = np.frombuffer(b"".join(map(_flat_lengths, flats)), dtype=np.int64)
        flat = np.frombuffer(b"".join(map(_flat_partitions, flats)), dtype=np.int64)
        # A member gets its mapping back only if it holds frozensets with nothing to drop.
        if not all(map(_all_frozensets, flats)):
            self.reusable[:] = False
        self.reusable[member[lengths == 0]] = False
        each_topic = np.repeat(np.where(known, topic, 0), lengths)
        each_member = np.repeat(member, lengths)
        valid = np.repeat(known, lengths) & (flat >= 0)
        valid &= flat < self.num_partitions[each_topic] if len(self.num_partitions) else False
        self.reusable[each_member[~valid]] = False
        slots = (self.offsets[each_topic] + flat)[valid]
        claimants = each_member[valid]
        if len(slots) == 0 or np.bincount(slots).max() <= 1:
            owner[slots] = claimants  # the usual case: nobody claims another's partition
            return owner
        unique, first = np.unique(slots, return_index=True)
        owner[unique] = claimants[first]
        lost = np.ones(len(slots), dtype=bool)
        lost[first] = False
        self.reusable[claimants[lost]] = False
        return owner

    def slot_racks(self) -> list[frozenset[str] | None] | None:
        """Replica racks per slot, or ``None`` when no subscribed topic knows its racks."""
        topics = [self.spec.topics[tid] for tid in self.topic_ids]
        if all(topic.partition_racks is None for topic in topics):
            return None
        racks: list[frozenset[str] | None] = []
        for topic in topics:
            racks.extend(topic.partition_racks or [None] * topic.num_partitions)
        return racks

    def member_racks(self) -> list[str | None]:
        return list(map(_rack, self.members))

    def rack_matcher(self) -> RackMatcher | None:
        """Rack matcher over the global slots, or ``None`` when racks cannot matter."""
        racks = self.member_racks()
        if racks.count(None) == len(racks):
            return None
        racks = self.slot_racks()
        return None if racks is None else build_rack_matcher(self.member_racks(), racks)

    def unchanged(self, owner: np.ndarray, current: np.ndarray) -> np.ndarray:
        """Members that may get their input mapping back: reusable, and no slot of theirs
        came or went between ``current`` and ``owner``."""
        keep = self.reusable.copy()
        moved = np.flatnonzero(owner != current)
        for side in (owner[moved], current[moved]):
            keep[side[side >= 0]] = False
        return keep

    def build(self, owner: np.ndarray, current: np.ndarray | None = None) -> GroupAssignment:
        """Turn a slot -> member array into the API's per-member frozensets.

        With ``current`` (what ``current_owners`` returned), members whose slots did not
        change get their input mapping back, and only the others are built.
        """
        selected = owner >= 0
        if current is None:
            result: dict = {m: {} for m in self.member_ids}
        else:
            keep = self.unchanged(owner, current)
            result = dict(zip(self.member_ids, map(_assigned, self.members), strict=True))
            for m in np.flatnonzero(~keep).tolist():
                result[self.member_ids[m]] = {}
            selected &= ~keep[np.where(selected, owner, 0)]
        assigned = np.flatnonzero(selected)
        if len(assigned) == 0:
            return GroupAssignment(members=result)
        holders = owner[assigned]
        order = np.argsort(holders, kind="stable")  # per member, slots stay ascending
        slots = assigned[order]
        holders = holders[order]
        topics = np.searchsorted(self.offsets, slots, side="right") - 1
        partitions = (slots - self.offsets[topics]).tolist()
        breaks = np.flatnonzero((holders[1:] != holders[:-1]) | (topics[1:] != topics[:-1])) + 1
        starts = np.concatenate(([0], breaks))
        ends = np.concatenate((breaks, [len(slots)]))
        # One frozenset per (member, topic) run, one dict per member, both made by C loops.
        runs = map(partitions.__getitem__, map(slice, starts.tolist(), ends.tolist()))
        topic_ids = map(self.topic_ids.__getitem__, topics[starts].tolist())
        items = list(zip(topic_ids, map(frozenset, runs), strict=True))
        run_holders = holders[starts]
        firsts = np.flatnonzero(np.concatenate(([True], run_holders[1:] != run_holders[:-1])))
        lasts = np.concatenate((firsts[1:], [len(items)])).tolist()
        for m, first, last in zip(run_holders[firsts].tolist(), firsts.tolist(), lasts,
                                  strict=True):
            result[self.member_ids[m]] = dict(items[first:last])
        return GroupAssignment(members=result)
