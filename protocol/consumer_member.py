"""A member of a KIP-848 consumer group: what it asked for and what it holds.

Immutable: every change produces a new member through ``dataclasses.replace``, so the shard can
compare before and after to decide which records to write and whether the reply carries the
assignment.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

from protocol.records import (
    ClientAssignorEntry,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataValue,
    PartitionMap,
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


@dataclass(frozen=True)
class ConsumerGroupMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    client_assignors: tuple[ClientAssignorEntry, ...] = ()
    rebalance_timeout_ms: int = -1
    # current assignment
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned_partitions: PartitionMap = field(default_factory=dict)
    partitions_pending_revocation: PartitionMap = field(default_factory=dict)
    error: int = 0
    metadata_version: int = 0
    metadata_bytes: bytes = b""

    # --- record views -------------------------------------------------------------------

    def metadata_value(self) -> ConsumerGroupMemberMetadataValue:
        return ConsumerGroupMemberMetadataValue(
            instance_id=self.instance_id,
            rack_id=self.rack_id,
            client_id=self.client_id,
            client_host=self.client_host,
            subscribed_topic_names=self.subscribed_topic_names,
            subscribed_topic_regex=self.subscribed_topic_regex,
            server_assignor=self.server_assignor,
            client_assignors=self.client_assignors,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
        )

    def assignment_value(self) -> ConsumerGroupCurrentMemberAssignmentValue:
        return ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=self.member_epoch,
            previous_member_epoch=self.previous_member_epoch,
            state=int(self.state),
            assigned_partitions=self.assigned_partitions,
            partitions_pending_revocation=self.partitions_pending_revocation,
            error=self.error,
            metadata_version=self.metadata_version,
            metadata_bytes=self.metadata_bytes,
        )

    def with_metadata(self, v: ConsumerGroupMemberMetadataValue) -> ConsumerGroupMember:
        return replace(
            self,
            instance_id=v.instance_id,
            rack_id=v.rack_id,
            client_id=v.client_id,
            client_host=v.client_host,
            subscribed_topic_names=v.subscribed_topic_names,
            subscribed_topic_regex=v.subscribed_topic_regex,
            server_assignor=v.server_assignor,
            client_assignors=v.client_assignors,
            rebalance_timeout_ms=v.rebalance_timeout_ms,
        )

    def with_assignment(self, v: ConsumerGroupCurrentMemberAssignmentValue) -> ConsumerGroupMember:
        return replace(
            self,
            member_epoch=v.member_epoch,
            previous_member_epoch=v.previous_member_epoch,
            state=MemberState(v.state)
            if v.state in MemberState._value2member_map_
            else MemberState.UNKNOWN,
            assigned_partitions=v.assigned_partitions,
            partitions_pending_revocation=v.partitions_pending_revocation,
            error=v.error,
            metadata_version=v.metadata_version,
            metadata_bytes=v.metadata_bytes,
        )

    @property
    def uses_client_assignors(self) -> bool:
        return bool(self.client_assignors)

    def client_assignor(self, name: str) -> ClientAssignorEntry | None:
        return next((a for a in self.client_assignors if a.name == name), None)
