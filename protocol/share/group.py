"""A ``share`` group's state (KIP-932), and how each record changes it.

The kernel's group (``protocol.modern.group``: epochs, members, targets) over the share
records, plus what only share groups have: the state of each share-partition it has read
((topic id, partition) -> ``SharePartition``) and which share-partitions it may assign. A
share group's state is Kafka's: ``empty`` without members, else ``stable`` (no member ever
waits for another: nothing is revoked). Nothing here decides anything: the rules live in
``share/rules``, ``share/initialization`` and ``share/fetch``.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from typing import Any

from protocol.modern.group import EMPTY, STABLE_STATE, ModernGroup, RecordKinds
from protocol.partitions import pairs
from protocol.records import Record
from protocol.share import records
from protocol.share.member import ShareGroupMember
from protocol.share.partition_state import SharePartition
from protocol.share.records import (
    PartitionMap,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupTargetAssignmentMemberValue,
    SharePartitionStateKey,
)

__all__ = ["GROUP_TYPE", "STATES", "ShareGroup", "group_tombstones"]

GROUP_TYPE = "share"
PROTOCOL_TYPE = "share"
STATES = (EMPTY, STABLE_STATE)
NO_TARGET = ShareGroupTargetAssignmentMemberValue()
SHARE_RECORDS = RecordKinds.named(records, "ShareGroup",
                                  extra_group_level=(ShareGroupStatePartitionMetadataKey,))

TopicPartition = tuple[str, int]


@dataclass
class ShareGroup(ModernGroup):
    members: dict[str, ShareGroupMember] = field(default_factory=dict)
    target: dict[str, ShareGroupTargetAssignmentMemberValue] = field(default_factory=dict)
    partitions: dict[TopicPartition, SharePartition] = field(default_factory=dict)
    # The share-partitions the group may assign (their state initialised), and those being
    # initialised, by topic id (``ShareGroupStatePartitionMetadataValue``; ``initialization``).
    initialized: PartitionMap = field(default_factory=dict)
    initializing: PartitionMap = field(default_factory=dict)

    group_type = GROUP_TYPE
    protocol_type = PROTOCOL_TYPE
    RECORDS = SHARE_RECORDS
    MEMBER = ShareGroupMember
    NO_TARGET = NO_TARGET
    NOUN = "member"
    MAX_SIZE_CONFIG, ASSIGNOR_CONFIG = "group_share_max_size", "default_share_assignor"

    def replay(self, record: Record) -> None:
        key = record.key
        if type(key) is ShareGroupStatePartitionMetadataKey:
            value = record.value
            self.initialized = dict(value.initialized_topics) if value is not None else {}
            self.initializing = dict(value.initializing_topics) if value is not None else {}
            return
        if type(key) is SharePartitionStateKey:
            tp = (key.topic_id, key.partition)
            if record.value is None:
                self.partitions.pop(tp, None)
            else:
                self.partitions[tp] = SharePartition.from_value(record.value)
            return
        super().replay(record)

    @property
    def state(self) -> str:
        return STABLE_STATE if self.members else EMPTY

    def in_flight(self) -> dict[TopicPartition, int]:
        """Records acquired now per share-partition (Kafka's DescribeShareGroupOffsets
        carries no such count; ``cohort groups --describe`` shows it)."""
        return {tp: sp.in_flight() for tp, sp in self.partitions.items()}

    def target_units(self, member_id: str) -> Set:
        t = self.target.get(member_id)
        return frozenset(pairs(t.partitions)) if t is not None else frozenset()

    def on_wire(self, member: Any) -> tuple[Any, Any]:
        raise NotImplementedError("a share heartbeat's assignment is built by share/rules")

    def subscribed_topic_names(self) -> set[str]:
        return {t for mem in self.members.values() for t in mem.subscribed_topic_names}

    def tombstones(self) -> list[Record]:
        """The kernel's, and every share-partition's state before the group's own record."""
        gid = self.group_id
        states = [Record(SharePartitionStateKey(gid, t, p), None)
                  for t, p in sorted(self.partitions)]
        out = super().tombstones()
        return out[:-1] + states + out[-1:]


def group_tombstones(group: ShareGroup) -> list[Record]:
    return group.tombstones()
