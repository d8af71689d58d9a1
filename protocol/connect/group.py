"""A ``connect`` group's state (seed 004), and how each record changes it.

The kernel's group (``protocol.modern.group``: epochs, workers, targets, owners, static
workers, state, tombstones) over the Connect records, plus what only Connect groups have: the
connectors as of the group epoch. Nothing here decides anything: the rules live in
``connect/rules``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from protocol.assignor_choice import AssignorChoice, choose_assignor
from protocol.connect import records
from protocol.connect import units as u
from protocol.connect.member import ConnectWorkerMember
from protocol.connect.records import (
    ConnectGroupMetadataKey,
    ConnectGroupTargetAssignmentMemberValue,
)
from protocol.modern.group import STATES, ModernGroup, RecordKinds
from protocol.records import Record

__all__ = ["STATES", "ConnectGroup", "connector_changes", "group_tombstones"]

GROUP_TYPE = "connect"
# What ListGroups shows as the protocol type: Kafka Connect's (WorkerCoordinator.protocolType).
PROTOCOL_TYPE = "connect"

NO_TARGET = ConnectGroupTargetAssignmentMemberValue()


CONNECT_RECORDS = RecordKinds.named(records, "ConnectGroup")


@dataclass
class ConnectGroup(ModernGroup):
    # The group's connectors ({name: task count}) as of the last epoch bump.
    connectors: dict[str, int] = field(default_factory=dict)
    members: dict[str, ConnectWorkerMember] = field(default_factory=dict)
    target: dict[str, ConnectGroupTargetAssignmentMemberValue] = field(default_factory=dict)
    owners: dict[u.Unit, str] = field(default_factory=dict)

    group_type = GROUP_TYPE
    protocol_type = PROTOCOL_TYPE
    RECORDS = CONNECT_RECORDS
    MEMBER = ConnectWorkerMember
    NO_TARGET = NO_TARGET
    NOUN = "worker"  # how messages name a member
    # the config fields of the group size limit and of the default assignor
    MAX_SIZE_CONFIG, ASSIGNOR_CONFIG = "group_connect_max_size", "default_connect_assignor"

    def _replay_group_record(self, kind: type, value: Any) -> None:
        if kind is ConnectGroupMetadataKey:
            self.group_epoch = value.epoch
            self.connectors = {c.name: c.task_count for c in value.connectors}

    # --- derived views --------------------------------------------------------------------

    def owner_of(self, unit: u.Unit) -> str | None:
        return self.owners.get(unit)

    def target_of(self, member_id: str) -> u.Units:
        t = self.target.get(member_id)
        return u.of(t.connectors, t.tasks) if t is not None else u.EMPTY

    target_units = target_of

    def pending_of(self, member: ConnectWorkerMember) -> u.Units:
        """Target work another worker still holds (``ModernGroup.pending_units``)."""
        return frozenset(self.pending_units(member))

    def on_wire(self, member: ConnectWorkerMember) -> tuple[Any, Any]:
        return u.to_wire(member.assigned), u.to_wire(self.pending_of(member))

    def assignor(self, default_assignor: str) -> AssignorChoice:
        """The group's assignor (``assignor_choice``). Workers whose client-side ranges share
        no version (possible once a worker that bridged them left) cannot compute: the
        coordinator's own assignor serves the group until they can."""
        if self._assignor is None:
            choice = choose_assignor(self.members.values(), default_assignor,
                                     self.assignor_tally())
            if choice.client_side and choice.chosen_member_id is None:
                choice = AssignorChoice(default_assignor, client_side=False)
            self._assignor = choice
        return self._assignor


def connector_changes(before: dict[str, int], after: dict[str, int]) -> str:
    """The rebalance cause of a connector change, as the history shows it."""
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    resized = sorted(c for c in set(before) & set(after) if before[c] != after[c])
    parts = []
    if added:
        parts.append("added " + ", ".join(added))
    if removed:
        parts.append("removed " + ", ".join(removed))
    if resized:
        parts.append("task count of " + ", ".join(f"{c} {before[c]}->{after[c]}" for c in resized))
    return "connectors changed: " + "; ".join(parts or ["none"])


def group_tombstones(group: ConnectGroup) -> list[Record]:
    """Every record of an empty Connect group, deleted (``ModernGroup.tombstones``)."""
    return group.tombstones()
