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
    PartitionEpochs,
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

    def moved_units(
        self,
        state: int,
        assigned: Set,
        pending: Set,
        member_epoch: int,
        previous_member_epoch: int,
    ) -> ConsumerGroupMember:
        """The kernel's move, and each held partition's assignment epoch (KIP-1251): a
        partition the member kept keeps the epoch it got it at; a new one is got at
        ``member_epoch``."""
        moved = super().moved_units(state, assigned, pending, member_epoch, previous_member_epoch)
        known = self._epochs_by_unit()
        held, own = self.held_units(), self.member_epoch
        epochs = {
            unit: known.get(unit, own) if unit in held else member_epoch
            for unit in assigned | pending
        }
        return replace(moved, current=replace(moved.current,
                                              assignment_epochs=_pack_epochs(epochs)))

    def assignment_epoch(self, topic_id: str, partition: int) -> int:
        """The member epoch at which the member got a partition it holds (its epoch when the
        record says nothing of it)."""
        for entry in self.current.assignment_epochs:
            if entry.topic_id == topic_id and partition in entry.partitions:
                return entry.epoch
        return self.member_epoch

    def _epochs_by_unit(self) -> dict[tuple[str, int], int]:
        return {(e.topic_id, p): e.epoch for e in self.current.assignment_epochs
                for p in e.partitions}

    def moved(self, **changes: Any) -> ConsumerGroupMember:
        """The member with some of its current-assignment fields changed."""
        if "state" in changes:
            changes["state"] = int(changes["state"])
        return replace(self, current=replace(self.current, **changes))


def _pack_epochs(epochs: dict[tuple[str, int], int]) -> tuple[PartitionEpochs, ...]:
    """``{(topic_id, partition): epoch}`` as the record keeps it: one entry per topic and
    epoch, sorted, so equal state is equal bytes."""
    grouped: dict[tuple[str, int], list[int]] = {}
    for (topic_id, partition), epoch in epochs.items():
        grouped.setdefault((topic_id, epoch), []).append(partition)
    return tuple(PartitionEpochs(t, e, tuple(sorted(ps))) for (t, e), ps in sorted(grouped.items()))
