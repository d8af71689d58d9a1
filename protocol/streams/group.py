"""A ``streams`` group's state (KIP-1071), and how each record changes it.

The kernel's group over the streams records, plus the topology (record 23) and the group
record's extra fields (metadata hash, validated topology epoch, assignment configs). A new group
starts at group epoch 1 and assignment epoch 1, as Kafka 4.4's ``StreamsGroup`` does (KAFKA-20268;
no seed covers streams groups), so its first bump is to 2 and a member told to wait out the
initial rebalance delay holds epoch 1, below it. What Kafka keeps in memory only is soft state
here too, left out of equality: the configured topology (recomputed from the topology and the
image by the rules), the endpoint-information epoch, a member's shutdown request and the task
offsets members report; the initial rebalance delay is the shard's timer alone.

States as Kafka's ``StreamsGroup``: ``empty`` without members; ``not_ready`` while the topology
cannot be assigned (missing or wrongly partitioned topics); then the kernel's ``assigning``,
``reconciling``, ``stable``.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from typing import Any

from protocol.modern.group import (
    ASSIGNING,
    EMPTY,
    RECONCILING,
    STABLE_STATE,
    ModernGroup,
    RecordKinds,
)
from protocol.partitions import pairs
from protocol.records import Record
from protocol.streams import records
from protocol.streams.member import StreamsGroupMember, StreamsMemberState
from protocol.streams.records import (
    StreamsGroupMetadataKey,
    StreamsGroupTargetAssignmentMemberValue,
    StreamsGroupTopologyKey,
    StreamsGroupTopologyValue,
)
from protocol.streams.topology import ConfiguredTopology

__all__ = ["GROUP_TYPE", "NOT_READY", "STATES", "StreamsGroup", "group_tombstones"]

GROUP_TYPE = "streams"
NOT_READY = "not_ready"
DEAD = "dead"
STATES = (EMPTY, NOT_READY, ASSIGNING, RECONCILING, STABLE_STATE, DEAD)
NO_TARGET = StreamsGroupTargetAssignmentMemberValue()
STREAMS_RECORDS = RecordKinds.named(records, "StreamsGroup",
                                    extra_group_level=(StreamsGroupTopologyKey,))


@dataclass
class StreamsGroup(ModernGroup):
    group_epoch: int = 1
    assignment_epoch: int = 1  # Kafka's TargetAssignmentMetadata.INITIAL
    members: dict[str, StreamsGroupMember] = field(default_factory=dict)
    target: dict[str, StreamsGroupTargetAssignmentMemberValue] = field(default_factory=dict)
    topology: StreamsGroupTopologyValue | None = None
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    last_assignment_configs: tuple = ()
    # soft state (module docstring)
    configured: ConfiguredTopology | None = field(default=None, compare=False, repr=False)
    endpoint_information_epoch: int = field(default=0, compare=False)
    shutdown_requested_by: str | None = field(default=None, compare=False)
    task_offsets: dict[str, tuple[list, list]] = field(default_factory=dict, compare=False,
                                                       repr=False)

    group_type = GROUP_TYPE
    protocol_type = GROUP_TYPE
    RECORDS = STREAMS_RECORDS
    MEMBER = StreamsGroupMember
    NO_TARGET = NO_TARGET
    NOUN = "member"
    MAX_SIZE_CONFIG, ASSIGNOR_CONFIG = "group_max_size", "group_max_size"

    def _replay_group_record(self, kind: type, value: Any) -> None:
        if kind is StreamsGroupMetadataKey:
            self.group_epoch = value.epoch
            self.metadata_hash = value.metadata_hash
            self.validated_topology_epoch = value.validated_topology_epoch
            self.last_assignment_configs = value.last_assignment_configs
        elif kind is StreamsGroupTopologyKey:
            self.topology = value
            self.configured = None

    def _replay_member(self, member_id: str, value: Any) -> None:
        super()._replay_member(member_id, value)
        if value is None:
            self.task_offsets.pop(member_id, None)
            if self.shutdown_requested_by == member_id:
                self.shutdown_requested_by = None

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.configured is None or not self.configured.ready:
            return NOT_READY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        epoch = self.assignment_epoch
        for mm in self.members.values():
            if mm.member_epoch != epoch or mm.current.state != StreamsMemberState.STABLE:
                return RECONCILING
        return STABLE_STATE

    def target_units(self, member_id: str) -> Set:
        t = self.target.get(member_id)
        return frozenset(pairs(t.active_tasks)) if t is not None else frozenset()

    def on_wire(self, member: Any) -> tuple[Any, Any]:
        raise NotImplementedError("a streams heartbeat's tasks are built by streams/rules")

    def active_owner(self, task: tuple[str, int]) -> str | None:
        """The member holding ``task`` active (or pending its revocation), if any."""
        return self.owners.get(task)

    def tombstones(self) -> list[Record]:
        return super().tombstones()


def group_tombstones(group: StreamsGroup) -> list[Record]:
    return group.tombstones()
