"""A member of a ``share`` group: what it subscribed to and the partitions it reads.

The kernel's member (``protocol.modern.member``) over the share records. A share member has
no instance id, no assignors and no rebalance timeout, and it never revokes: its assignment is
its target at once (Kafka's ShareGroupAssignmentBuilder), because members may share a
partition. So it holds no unit exclusively (``held_units`` is empty) and the group keeps no
owners: what is exclusive is a record's acquisition lock (``partition_state``).
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from enum import IntEnum
from functools import partial

from protocol.modern.member import JOIN_EPOCH, LEAVE_EPOCH, ModernMember, fresh_assignment
from protocol.partitions import from_pairs, pairs
from protocol.share.records import (
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataValue,
)

__all__ = ["JOIN_EPOCH", "LEAVE_EPOCH", "ShareGroupMember", "ShareMemberState"]

Metadata = ShareGroupMemberMetadataValue
Current = ShareGroupCurrentMemberAssignmentValue


class ShareMemberState(IntEnum):
    """Kafka's MemberState numbers; a share member is always STABLE."""

    STABLE = 0
    UNREVOKED = 1
    UNRELEASED = 2
    UNKNOWN = 3

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class ShareGroupMember(ModernMember):
    member_id: str
    metadata: Metadata = field(default_factory=Metadata)
    current: Current = field(default_factory=partial(fresh_assignment, Current))

    STATES = ShareMemberState
    # What share members lack (the kernel reads them): no static membership, no assignors.
    instance_id = None
    is_classic = False
    uses_client_assignors = False
    rebalance_timeout_ms = -1

    @property
    def rack_id(self) -> str | None:
        return self.metadata.rack_id

    @property
    def subscribed_topic_names(self) -> tuple[str, ...]:
        return self.metadata.subscribed_topic_names

    @property
    def assigned_units(self) -> Set:
        return frozenset(pairs(self.current.assigned_partitions))

    @property
    def pending_units(self) -> Set:
        return frozenset()

    def held_units(self) -> Set:
        """None exclusively: share members may read the same partition."""
        return frozenset()

    def unit_fields(self, assigned: Set, pending: Set) -> dict[str, object]:
        return {"assigned_partitions": from_pairs(assigned)}
