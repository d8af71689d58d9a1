"""The target-assignment builder: group state in, assignor spec out, records for what changed.

Kafka's ``TargetAssignmentBuilder``. The coordinator adapts its members and subscribed topics
into the assignor API's own types (``assignors.spec``), runs the group's server assignor, and
writes one record per member whose target changed followed by the epoch record, so a reader
of the log sees a target installed as a unit.

A rebalance in a large group usually changes a few members' targets, so the adaptation is
cached (``SpecCache``, kept on the group): a member's ``MemberSpec`` is rebuilt only when its
metadata record, its target record or the metadata image changed (the values are immutable,
so identity says it), members with the same subscription share one frozenset of topic ids,
and a member the assignor gives back its own input mapping keeps its target value as is. The
builder's cost is then a few dictionary lookups per member plus the assignor's own.

Step 2 of a heartbeat turn for consumer groups is here too (``EpochTurn``, the kernel's
``modern.epochs``): a bump records the subscribed topics' metadata when it changed, and the
target is the server assignor's.

KIP-1263's assignment interval, as Kafka 4.4's ``GroupMetadataManager.maybeUpdateTargetAssignment``
applies it: a target is computed only when the group's interval
(``consumer.assignment.interval.ms`` over ``group.consumer.assignment.interval.ms``) has passed
since the last computation, whose time the target epoch record keeps
(``assignment_timestamp``, so it survives a reload, as Kafka's tagged field does). A bump within
the interval leaves the target (and the assignment epoch) as they are: members reconcile toward
the current target, a new member joins at its epoch with nothing, and the first heartbeat of
any member once the interval is over computes the target (Kafka has no timer for it). A group
its last member left gets its empty target at once, with timestamp 0 (Kafka's fence writes the
target epoch so), so the next member to join is assigned at once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import repeat
from operator import is_

from assignors import AssignmentSpec, MemberSpec, TopicSpec, server_assignor
from protocol import partitions as pm
from protocol.consumer.group import ConsumerGroup, subscription_key, subscription_topic_names
from protocol.consumer.records import (
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
)
from protocol.metadata import MetadataImage
from protocol.modern.epochs import EpochTurn as ModernEpochTurn
from protocol.modern.epochs import target_records
from protocol.records import Record

__all__ = ["Targets", "assignment_spec", "compute_target", "target_records"]
from protocol.consumer.records import (
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupTargetAssignmentMemberValue,
)

Targets = dict[str, ConsumerGroupTargetAssignmentMemberValue]
CACHE_KEY = "target_builder"


@dataclass
class _Entry:
    """One member's spec and the records it was made from."""

    metadata: ConsumerGroupMemberMetadataValue
    target: ConsumerGroupTargetAssignmentMemberValue | None
    spec: MemberSpec
    # The target is exactly what normalizing the spec's mapping gives: it may be kept as is
    # when the assignor hands the mapping back.
    keepable: bool


@dataclass
class SpecCache:
    """Derived from one metadata image; dropped when the image changes."""

    image: MetadataImage
    topic_ids: dict[tuple, frozenset[str]] = field(default_factory=dict)  # per subscription
    topics: dict[str, TopicSpec] = field(default_factory=dict)
    members: dict[str, _Entry] = field(default_factory=dict)

    def subscribed_ids(self, key: tuple) -> frozenset[str]:
        ids = self.topic_ids.get(key)
        if ids is None:
            ids = frozenset(
                t.topic_id
                for n in subscription_topic_names(*key, self.image)
                if (t := self.image.topic_by_name(n)) is not None
            )
            self.topic_ids[key] = ids
        return ids

    def topic(self, topic_id: str) -> TopicSpec:
        spec = self.topics.get(topic_id)
        if spec is None:
            t = self.image.topic(topic_id)
            assert t is not None, topic_id
            spec = self.topics[topic_id] = TopicSpec(t.name, t.num_partitions, t.partition_racks)
        return spec


def _cache(group: ConsumerGroup, image: MetadataImage) -> SpecCache:
    cache = group.builder_cache.get(CACHE_KEY)
    if cache is None or cache.image is not image:
        cache = group.builder_cache[CACHE_KEY] = SpecCache(image)
    return cache


def _entry(cache: SpecCache, group: ConsumerGroup, mid: str) -> _Entry:
    """Member ``mid``'s spec, made anew (the caller found the cached one stale)."""
    member = group.members[mid]
    target = group.target.get(mid)
    partitions = target.partitions if target is not None else {}
    spec = MemberSpec(
        subscribed_topic_ids=cache.subscribed_ids(subscription_key(member)),
        assigned_partitions={t: frozenset(ps) for t, ps in partitions.items()},
        instance_id=member.instance_id,
        rack_id=member.rack_id,
    )
    keepable = target is not None and target == ConsumerGroupTargetAssignmentMemberValue(
        pm.normalize(partitions)
    )
    entry = cache.members[mid] = _Entry(member.metadata, target, spec, keepable)
    return entry


def assignment_spec(group: ConsumerGroup, image: MetadataImage) -> AssignmentSpec:
    """Members with their subscribed topic ids and current targets; the subscribed topics."""
    cache = _cache(group, image)
    if len(cache.members) > len(group.members):  # members left: forget them
        for mid in [m for m in cache.members if m not in group.members]:
            del cache.members[mid]
    entries, targets = cache.members, group.target
    members = {}
    for mid, member in group.members.items():
        entry = entries.get(mid)
        if (
            entry is None
            or entry.metadata is not member.metadata
            or entry.target is not targets.get(mid)
        ):
            entry = _entry(cache, group, mid)
        members[mid] = entry.spec
    subscriptions = [s.subscribed_topic_ids for s in members.values()]
    subscribed: set[str] = set()
    for ids in dict(zip(map(id, subscriptions), subscriptions, strict=True)).values():
        subscribed |= ids
    return AssignmentSpec(members=members, topics={t: cache.topic(t) for t in subscribed})


def compute_target(group: ConsumerGroup, image: MetadataImage, assignor_name: str) -> Targets:
    spec = assignment_spec(group, image)
    result = server_assignor(assignor_name).assign(spec)
    mids = sorted(group.members)
    entries = list(map(_cache(group, image).members.__getitem__, mids))
    got = list(map(result.members.get, mids, repeat({})))
    # Unchanged (the assignor handed the member's own mapping back): keep its target value.
    kept = map(is_, got, [e.spec.assigned_partitions if e.keepable else None for e in entries])
    targets: Targets = dict(zip(mids, [e.target for e in entries], strict=True))
    for mid, mapping, same in zip(mids, got, kept, strict=True):
        if not same:
            targets[mid] = ConsumerGroupTargetAssignmentMemberValue(pm.normalize(mapping))
    return targets


# ---------------------------------------------------------------- step 2 of a heartbeat turn


class EpochTurn(ModernEpochTurn):
    """The consumer groups a turn changed, and what settling them writes."""

    group_type = "consumer"

    def records_before_bump(self, group: ConsumerGroup, epoch: int) -> list[Record]:
        """The subscribed topics' metadata, when it changed."""
        entries = group.subscription_entries(self.ctx.image)
        if entries == group.subscription_metadata:
            return []
        value = ConsumerGroupPartitionMetadataValue(epoch, tuple(entries.values()))
        return [Record(ConsumerGroupPartitionMetadataKey(group.group_id), value)]

    def group_value(self, group: ConsumerGroup, epoch: int) -> ConsumerGroupMetadataValue:
        return ConsumerGroupMetadataValue(epoch)

    def client_side(self, group: ConsumerGroup) -> bool:
        return group.assignor(self.ctx.config).client_side

    def interval_ms(self, group_id: str) -> int:
        """The group's KIP-1263 assignment interval (its group config over the broker's)."""
        return self.ctx.group_config(group_id).effective_assignment_interval_ms(self.ctx.config)

    def compute_targets(self, group: ConsumerGroup) -> Targets:
        return compute_target(group, self.ctx.image, group.assignor(self.ctx.config).name)
