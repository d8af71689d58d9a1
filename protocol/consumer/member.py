"""A member of a KIP-848 consumer group: what it asked for and what it holds.

The kernel's member (``protocol.modern.member``) over the consumer records: its metadata
(subscription, rack, assignors...) and its current assignment (epoch, state, partitions).
Its units are ``(topic_id, partition)`` pairs. Immutable: changes produce a new member, so the
rules can compare before and after.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field, replace
from enum import IntEnum
from functools import partial
from typing import Any

from protocol import partitions as pm
from protocol.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
)
from protocol.modern.member import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ModernMember,
    fresh_assignment,
    read_through,
)

__all__ = [
    "JOIN_EPOCH",
    "LEAVE_EPOCH",
    "STATIC_LEAVE_EPOCH",
    "ConsumerGroupMember",
    "MemberState",
]


class MemberState(IntEnum):
    """Where a member is on its way to the target assignment (Kafka's MemberState)."""

    STABLE = 0  # holds its whole target (or all it can have) at the target epoch
    UNREVOKED_PARTITIONS = 1  # must give up partitions before it moves to the new epoch
    UNRELEASED_PARTITIONS = 2  # at the target epoch, waiting for others to release partitions
    UNKNOWN = 3

    @property
    def label(self) -> str:
        return self.name.lower()


Metadata = ConsumerGroupMemberMetadataValue
Current = ConsumerGroupCurrentMemberAssignmentValue
_fresh_assignment = partial(fresh_assignment, Current)


@dataclass(frozen=True)
class ConsumerGroupMember(ModernMember):
    member_id: str
    metadata: Metadata = field(default_factory=Metadata)
    current: Current = field(default_factory=_fresh_assignment)

    STATES = MemberState

    rack_id = read_through("metadata", "rack_id")
    subscribed_topic_names = read_through("metadata", "subscribed_topic_names")
    subscribed_topic_regex = read_through("metadata", "subscribed_topic_regex")
    topic_view = read_through("metadata", "topic_view")
    assigned_partitions = read_through("current", "assigned_partitions")
    partitions_pending_revocation = read_through("current", "partitions_pending_revocation")

    @classmethod
    def of(
        cls,
        member_id: str,
        metadata: ConsumerGroupMemberMetadataValue | None = None,
        current: ConsumerGroupCurrentMemberAssignmentValue | None = None,
    ) -> ConsumerGroupMember:
        """The member made of these records (a missing one: the default), the same as
        ``ConsumerGroupMember(member_id, ...)`` but filled directly rather than through the
        frozen dataclass's ``__init__``: a load builds one per member."""
        member = object.__new__(cls)
        fields = member.__dict__
        fields["member_id"] = member_id
        fields["metadata"] = ConsumerGroupMemberMetadataValue() if metadata is None else metadata
        fields["current"] = _fresh_assignment() if current is None else current
        return member

    @property
    def assigned_units(self) -> set[tuple[str, int]]:
        return pm.pairs(self.current.assigned_partitions)

    @property
    def pending_units(self) -> set[tuple[str, int]]:
        return pm.pairs(self.current.partitions_pending_revocation)

    def unit_fields(self, assigned: Set, pending: Set) -> dict[str, Any]:
        return {
            "assigned_partitions": pm.from_pairs(assigned),
            "partitions_pending_revocation": pm.from_pairs(pending),
        }

    def moved(self, **changes: Any) -> ConsumerGroupMember:
        """The member with some of its current-assignment fields changed."""
        if "state" in changes:
            changes["state"] = int(changes["state"])
        return replace(self, current=replace(self.current, **changes))
