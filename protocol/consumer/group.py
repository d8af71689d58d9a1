"""A KIP-848 consumer group's state, and how each record changes it.

Nothing here decides anything: the rules live in ``consumer/rules``. This module holds what the
records say (epochs, members, target and current assignments, the subscribed topics' metadata)
and what follows from them directly (who owns each partition, which member holds an instance
id, the group state). ``replay`` is the only way in, both for live events and for loading a
log, which is what makes a replayed shard equal to the one that wrote the log.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from protocol import partitions as pm
from protocol.assignor_choice import AssignorChoice, choose_assignor
from protocol.config import CoordinatorConfig
from protocol.consumer.member import ConsumerGroupMember, MemberState
from protocol.consumer.regex import InvalidRegex, matching_topics
from protocol.metadata import MetadataImage
from protocol.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    PartitionMap,
    Record,
    TopicMetadataEntry,
)

EMPTY = "empty"
ASSIGNING = "assigning"
RECONCILING = "reconciling"
STABLE = "stable"
DEAD = "dead"
STATES = (EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD)


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    target: dict[str, ConsumerGroupTargetAssignmentMemberValue] = field(default_factory=dict)
    subscription_metadata: dict[str, TopicMetadataEntry] = field(default_factory=dict)
    # derived from the records, kept in step by replay
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    owners: dict[tuple[str, int], str] = field(default_factory=dict)
    # Asked on every heartbeat; depends only on the members' metadata, so cached until it changes.
    _assignor: AssignorChoice | None = field(default=None, compare=False, repr=False)
    # How many members have each subscription (topic names, regex): the group's subscribed
    # topics come from the distinct ones, not from a pass over every member's list.
    _subscriptions: Counter = field(default_factory=Counter, compare=False, repr=False)
    # The target builder's derived data (``consumer/target_assignment.py``), valid while the
    # records and the metadata image it was made from are the same objects.
    builder_cache: dict = field(default_factory=dict, compare=False, repr=False)

    group_type = "consumer"

    # --- replay ---------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        key, value = record.key, record.value
        if isinstance(value, ConsumerGroupMetadataValue):
            self.group_epoch = value.epoch
        elif isinstance(value, ConsumerGroupPartitionMetadataValue):
            self.subscription_metadata = {t.topic_id: t for t in value.topics}
        elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
            self.assignment_epoch = value.assignment_epoch
        elif isinstance(key, ConsumerGroupMemberMetadataKey):
            self._replay_member(key.member_id, value)
        elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
            if value is None:
                self.target.pop(key.member_id, None)
            else:
                self.target[key.member_id] = value
        elif isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
            self._replay_assignment(key.member_id, value)

    def _replay_member(
        self, member_id: str, value: ConsumerGroupMemberMetadataValue | None
    ) -> None:
        self._assignor = None
        old = self.members.get(member_id)
        if old is not None and self.static_members.get(old.instance_id or "") == member_id:
            del self.static_members[old.instance_id]  # type: ignore[arg-type]
        if old is not None:
            key = subscription_key(old)
            self._subscriptions[key] -= 1
            if self._subscriptions[key] <= 0:
                del self._subscriptions[key]
        if value is not None:
            self._subscriptions[(value.subscribed_topic_names, value.subscribed_topic_regex)] += 1
        if value is None:
            if old is not None:
                self._set_owner(old, None)
                del self.members[member_id]
            return
        member = (old or ConsumerGroupMember(member_id)).with_metadata(value)
        self.members[member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member_id

    def _replay_assignment(
        self, member_id: str, value: ConsumerGroupCurrentMemberAssignmentValue | None
    ) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is not None:
                self._set_owner(old, None)
                self.members[member_id] = ConsumerGroupMember(member_id).with_metadata(old.metadata)
            return
        new = (old or ConsumerGroupMember(member_id)).with_assignment(value)
        if old is not None:
            self._set_owner(old, None)
        self._set_owner(new, member_id)
        self.members[member_id] = new

    def _set_owner(self, member: ConsumerGroupMember, owner: str | None) -> None:
        held = pm.pairs(member.assigned_partitions) | pm.pairs(member.partitions_pending_revocation)
        for tp in held:
            current = self.owners.get(tp)
            if owner is None:
                if current == member.member_id:
                    del self.owners[tp]
            else:
                # Invariant 1: a partition is never held by two members at once.
                assert current in (None, owner), f"{tp} held by {current} and {owner}"
                self.owners[tp] = owner

    # --- derived views --------------------------------------------------------------------

    def owner_of(self, topic_id: str, partition: int) -> str | None:
        return self.owners.get((topic_id, partition))

    def target_of(self, member_id: str) -> PartitionMap:
        t = self.target.get(member_id)
        return t.partitions if t is not None else {}

    def pending_of(self, member: ConsumerGroupMember) -> PartitionMap:
        """Seed 002's "pending-partitions": target partitions another member still holds.

        Only a member that has moved to the target epoch waits for partitions; before that its
        pending list is empty, as in the seed's Basic and member-failure tables.
        """
        if member.member_epoch != self.assignment_epoch:
            return {}
        missing = pm.pairs(self.target_of(member.member_id)) - pm.pairs(member.assigned_partitions)
        return pm.from_pairs(
            tp for tp in missing if self.owners.get(tp) not in (None, member.member_id)
        )

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE:
                return RECONCILING
        return STABLE

    def subscribed_topic_names(self, image: MetadataImage) -> set[str]:
        names: set[str] = set()
        for topics, regex in self._subscriptions:
            names.update(subscription_topic_names(topics, regex, image))
        return names

    def subscription_entries(self, image: MetadataImage) -> dict[str, TopicMetadataEntry]:
        """The metadata of the subscribed topics that exist, as the record stores it."""
        out = {}
        for name in sorted(self.subscribed_topic_names(image)):
            t = image.topic_by_name(name)
            if t is not None:
                out[t.topic_id] = TopicMetadataEntry(
                    t.topic_id, t.name, t.num_partitions, t.racks_digest()
                )
        return out

    def assignor(self, config: CoordinatorConfig) -> AssignorChoice:
        if self._assignor is None:
            self._assignor = choose_assignor(
                self.members.values(), config.default_server_assignor
            )
        return self._assignor


def subscription_key(member: ConsumerGroupMember) -> tuple:
    """What a member subscribes to, as one hashable value: (topic names, regex)."""
    return (member.subscribed_topic_names, member.subscribed_topic_regex)


def member_topic_names(member: ConsumerGroupMember, image: MetadataImage) -> set[str]:
    return subscription_topic_names(*subscription_key(member), image)


def subscription_topic_names(topics, regex: str | None, image: MetadataImage) -> set[str]:
    """The topic names a subscription (a list of names, or a regex) covers in ``image``."""
    if regex is not None:
        try:
            return set(matching_topics(regex, image.topic_names()))
        except InvalidRegex:  # validated on the way in; a log from elsewhere may still hold one
            return set()
    return set(topics)


__all__ = ["STATES", "AssignorChoice", "ConsumerGroup", "choose_assignor", "member_topic_names"]


def group_tombstones(group: ConsumerGroup) -> list[Record]:
    """Every record of a consumer group, deleted (DeleteGroups, offsets expiry, a downgrade to
    classic): members' and targets' records first, the group's own record last (its replay
    drops the group). The one place these tombstones are written."""
    gid = group.group_id
    out = []
    for mid in sorted(set(group.members) | set(group.target)):
        out.append(Record(ConsumerGroupCurrentMemberAssignmentKey(gid, mid), None))
        out.append(Record(ConsumerGroupTargetAssignmentMemberKey(gid, mid), None))
        out.append(Record(ConsumerGroupMemberMetadataKey(gid, mid), None))
    out.append(Record(ConsumerGroupTargetAssignmentMetadataKey(gid), None))
    out.append(Record(ConsumerGroupPartitionMetadataKey(gid), None))
    out.append(Record(ConsumerGroupMetadataKey(gid), None))
    return out
