"""A member of a KIP-848 consumer group: what it asked for and what it holds.

A member *is* its two records: its metadata (subscription, rack, assignors...) and its current
assignment (epoch, state, partitions). Holding the record values themselves, rather than a copy
of their fields, means the record to write is always just the member's part, and replaying a
record is just swapping a part. Immutable: changes produce a new member, so the rules can
compare before and after.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any

from protocol.records import (
    ClientAssignorEntry,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
)

# Epochs with a meaning of their own in the heartbeat (seed 000 and Kafka).
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class MemberState(IntEnum):
    """Where a member is on its way to the target assignment (Kafka's MemberState)."""

    STABLE = 0  # holds its whole target (or all it can have) at the target epoch
    UNREVOKED_PARTITIONS = 1  # must give up partitions before it moves to the new epoch
    UNRELEASED_PARTITIONS = 2  # at the target epoch, waiting for others to release partitions
    UNKNOWN = 3

    @property
    def label(self) -> str:
        return self.name.lower()


def _fresh_assignment() -> ConsumerGroupCurrentMemberAssignmentValue:
    return ConsumerGroupCurrentMemberAssignmentValue(
        member_epoch=JOIN_EPOCH, previous_member_epoch=-1, state=int(MemberState.STABLE)
    )


def _read(part: str, name: str) -> Any:
    """A read-only attribute that reads through to one of the member's two records."""
    return property(lambda self: getattr(getattr(self, part), name))


@dataclass(frozen=True)
class ConsumerGroupMember:
    member_id: str
    metadata: ConsumerGroupMemberMetadataValue = field(
        default_factory=ConsumerGroupMemberMetadataValue
    )
    current: ConsumerGroupCurrentMemberAssignmentValue = field(default_factory=_fresh_assignment)

    instance_id = _read("metadata", "instance_id")
    rack_id = _read("metadata", "rack_id")
    client_id = _read("metadata", "client_id")
    client_host = _read("metadata", "client_host")
    subscribed_topic_names = _read("metadata", "subscribed_topic_names")
    subscribed_topic_regex = _read("metadata", "subscribed_topic_regex")
    server_assignor = _read("metadata", "server_assignor")
    client_assignors = _read("metadata", "client_assignors")
    rebalance_timeout_ms = _read("metadata", "rebalance_timeout_ms")
    member_epoch = _read("current", "member_epoch")
    previous_member_epoch = _read("current", "previous_member_epoch")
    assigned_partitions = _read("current", "assigned_partitions")
    partitions_pending_revocation = _read("current", "partitions_pending_revocation")

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
    def state(self) -> MemberState:
        s = self.current.state
        return MemberState(s) if s in MemberState._value2member_map_ else MemberState.UNKNOWN

    def with_metadata(self, value: ConsumerGroupMemberMetadataValue) -> ConsumerGroupMember:
        return replace(self, metadata=value)

    def with_assignment(
        self, value: ConsumerGroupCurrentMemberAssignmentValue
    ) -> ConsumerGroupMember:
        return replace(self, current=value)

    def updated(self, **changes: Any) -> ConsumerGroupMember:
        """The member with some of its metadata fields changed."""
        return replace(self, metadata=replace(self.metadata, **changes))

    def moved(self, **changes: Any) -> ConsumerGroupMember:
        """The member with some of its current-assignment fields changed."""
        if "state" in changes:
            changes["state"] = int(changes["state"])
        return replace(self, current=replace(self.current, **changes))

    @property
    def uses_client_assignors(self) -> bool:
        return bool(self.client_assignors)

    def client_assignor(self, name: str) -> ClientAssignorEntry | None:
        return next((a for a in self.client_assignors if a.name == name), None)
