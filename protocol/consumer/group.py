"""A KIP-848 consumer group's state, and how each record changes it.

The kernel's group (``protocol.modern.group``: epochs, members, targets, owners, static
members, state, tombstones) over the consumer records, plus what only consumers have: the
subscribed topics' metadata and the members' subscriptions. Nothing here decides anything: the
rules live in ``consumer/rules``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from protocol import partitions as pm
from protocol.assignor_choice import AssignorChoice, choose_assignor
from protocol.config import CoordinatorConfig
from protocol.consumer import records
from protocol.consumer.member import ConsumerGroupMember
from protocol.consumer.records import (
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMemberValue,
)
from protocol.consumer.regex import InvalidRegex, matching_topics
from protocol.metadata import MetadataImage
from protocol.modern.group import STATES as MODERN_STATES
from protocol.modern.group import ModernGroup, RecordKinds
from protocol.records import PartitionMap, Record, TopicMetadataEntry
from protocol.security.acls import TopicView

STATES = (*MODERN_STATES, "dead")


CONSUMER_RECORDS = RecordKinds.named(records, "ConsumerGroup", (ConsumerGroupPartitionMetadataKey,))


@dataclass
class ConsumerGroup(ModernGroup):
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    target: dict[str, ConsumerGroupTargetAssignmentMemberValue] = field(default_factory=dict)
    owners: dict[tuple[str, int], str] = field(default_factory=dict)
    subscription_metadata: dict[str, TopicMetadataEntry] = field(default_factory=dict)
    # How many members have each subscription (topic names, regex): the group's subscribed
    # topics come from the distinct ones, not from a pass over every member's list.
    _subscriptions: Counter = field(default_factory=Counter, compare=False, repr=False)
    # The target builder's derived data (``consumer/target_assignment.py``), valid while the
    # records and the metadata image it was made from are the same objects.
    builder_cache: dict = field(default_factory=dict, compare=False, repr=False)

    group_type = "consumer"
    RECORDS = CONSUMER_RECORDS
    MEMBER = ConsumerGroupMember
    NO_TARGET = ConsumerGroupTargetAssignmentMemberValue()
    NOUN = "member"  # how messages name a member
    # the config fields of the group size limit and of the default assignor
    MAX_SIZE_CONFIG, ASSIGNOR_CONFIG = "group_consumer_max_size", "default_server_assignor"

    # --- replay ---------------------------------------------------------------------------

    def _replay_group_record(self, kind: type, value: Any) -> None:
        if kind is ConsumerGroupMetadataKey:
            self.group_epoch = value.epoch
        elif kind is ConsumerGroupPartitionMetadataKey:
            self.subscription_metadata = {t.topic_id: t for t in value.topics}

    def _on_member_metadata(
        self, old: ConsumerGroupMember | None, value: ConsumerGroupMemberMetadataValue | None
    ) -> None:
        if old is not None:
            key = subscription_key(old)
            self._subscriptions[key] -= 1
            if self._subscriptions[key] <= 0:
                del self._subscriptions[key]
        if value is not None:
            self._subscriptions[(value.subscribed_topic_names, value.subscribed_topic_regex,
                                 value.topic_view)] += 1

    # --- derived views --------------------------------------------------------------------

    def owner_of(self, topic_id: str, partition: int) -> str | None:
        return self.owners.get((topic_id, partition))

    def target_of(self, member_id: str) -> PartitionMap:
        t = self.target.get(member_id)
        return t.partitions if t is not None else {}

    def target_units(self, member_id: str) -> set[tuple[str, int]]:
        t = self.target.get(member_id)
        return pm.pairs(t.partitions) if t is not None else set()

    def pending_of(self, member: ConsumerGroupMember) -> PartitionMap:
        """Seed 002's "pending-partitions": target partitions another member still holds
        (``ModernGroup.pending_units``)."""
        return pm.from_pairs(self.pending_units(member))

    def on_wire(self, member: ConsumerGroupMember) -> tuple[list, list]:
        return pm.to_wire(member.assigned_partitions), pm.to_wire(self.pending_of(member))

    def subscribed_topic_names(self, image: MetadataImage) -> set[str]:
        names: set[str] = set()
        for key in self._subscriptions:
            names.update(subscription_topic_names(*key, image))
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
                self.members.values(), config.default_server_assignor, self.assignor_tally()
            )
        return self._assignor


def subscription_key(member: ConsumerGroupMember) -> tuple:
    """What a member subscribes to, as one hashable value: (topic names, regex, the view of
    the topics a regex resolves within)."""
    return (member.subscribed_topic_names, member.subscribed_topic_regex, member.topic_view)


def member_topic_names(member: ConsumerGroupMember, image: MetadataImage) -> set[str]:
    return subscription_topic_names(*subscription_key(member), image)


def subscription_topic_names(topics, regex: str | None, view: TopicView | None,
                             image: MetadataImage) -> set[str]:
    """The topic names a subscription (a list of names, or a regex) covers in ``image``: a
    regex's matches that ``view`` may DESCRIBE (all with no view), as Kafka 4.0 resolves a
    regex for the principal that subscribed (KAFKA-18813), so no topic it may not see is ever
    assigned to it, one created later included."""
    if regex is not None:
        try:
            matched = matching_topics(regex, image.topic_names())
        except InvalidRegex:  # validated on the way in; a log from elsewhere may still hold one
            return set()
        return set(matched if view is None else filter(view.may_describe, matched))
    return set(topics)


__all__ = ["STATES", "AssignorChoice", "ConsumerGroup", "choose_assignor", "member_topic_names"]


def group_tombstones(group: ConsumerGroup) -> list[Record]:
    """Every record of a consumer group, deleted (DeleteGroups, offsets expiry, a downgrade to
    classic): ``ModernGroup.tombstones``, the one place these tombstones are written."""
    return group.tombstones()
