"""A ``connect`` group's state (seed 004), and how each record changes it.

Nothing here decides anything: the rules live in ``connect/rules``. This module holds what the
records say (epochs, the connectors as of the group epoch, workers, target and current
assignments) and what follows from them directly (who runs each connector and task, which
worker holds an instance id, the group state). ``replay`` is the only way in, for live events
and for loading alike, so a replayed shard equals the one that wrote the log.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.assignor_choice import AssignorChoice, choose_assignor
from protocol.connect import units as u
from protocol.connect.member import ConnectWorkerMember, WorkerState
from protocol.records import (
    ConnectGroupCurrentMemberAssignmentKey,
    ConnectGroupCurrentMemberAssignmentValue,
    ConnectGroupMemberMetadataKey,
    ConnectGroupMemberMetadataValue,
    ConnectGroupMetadataKey,
    ConnectGroupMetadataValue,
    ConnectGroupTargetAssignmentMemberKey,
    ConnectGroupTargetAssignmentMemberValue,
    ConnectGroupTargetAssignmentMetadataKey,
    ConnectGroupTargetAssignmentMetadataValue,
    Record,
)

EMPTY = "empty"
ASSIGNING = "assigning"
RECONCILING = "reconciling"
STABLE = "stable"
STATES = (EMPTY, ASSIGNING, RECONCILING, STABLE)

GROUP_TYPE = "connect"
# What ListGroups shows as the protocol type: Kafka Connect's (WorkerCoordinator.protocolType).
PROTOCOL_TYPE = "connect"

NO_TARGET = ConnectGroupTargetAssignmentMemberValue()


@dataclass
class ConnectGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    # The group's connectors ({name: task count}) as of the last epoch bump.
    connectors: dict[str, int] = field(default_factory=dict)
    members: dict[str, ConnectWorkerMember] = field(default_factory=dict)
    target: dict[str, ConnectGroupTargetAssignmentMemberValue] = field(default_factory=dict)
    # derived from the records, kept in step by replay
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    owners: dict[u.Unit, str] = field(default_factory=dict)
    _assignor: AssignorChoice | None = field(default=None, compare=False, repr=False)

    group_type = GROUP_TYPE
    protocol_type = PROTOCOL_TYPE

    # --- replay ---------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        key, value = record.key, record.value
        if isinstance(value, ConnectGroupMetadataValue):
            self.group_epoch = value.epoch
            self.connectors = {c.name: c.task_count for c in value.connectors}
        elif isinstance(value, ConnectGroupTargetAssignmentMetadataValue):
            self.assignment_epoch = value.assignment_epoch
        elif isinstance(key, ConnectGroupMemberMetadataKey):
            self._replay_member(key.member_id, value)
        elif isinstance(key, ConnectGroupTargetAssignmentMemberKey):
            if value is None:
                self.target.pop(key.member_id, None)
            else:
                self.target[key.member_id] = value
        elif isinstance(key, ConnectGroupCurrentMemberAssignmentKey):
            self._replay_assignment(key.member_id, value)

    def _replay_member(self, member_id: str, value: ConnectGroupMemberMetadataValue | None) -> None:
        self._assignor = None
        old = self.members.get(member_id)
        if old is not None and self.static_members.get(old.instance_id or "") == member_id:
            del self.static_members[old.instance_id]  # type: ignore[arg-type]
        if value is None:
            if old is not None:
                self._set_owner(old, None)
                del self.members[member_id]
            return
        member = (old or ConnectWorkerMember(member_id)).with_metadata(value)
        self.members[member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member_id

    def _replay_assignment(
        self, member_id: str, value: ConnectGroupCurrentMemberAssignmentValue | None
    ) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is not None:
                self._set_owner(old, None)
                self.members[member_id] = ConnectWorkerMember(member_id, old.metadata)
            return
        new = (old or ConnectWorkerMember(member_id)).with_assignment(value)
        if old is not None:
            self._set_owner(old, None)
        self._set_owner(new, member_id)
        self.members[member_id] = new

    def _set_owner(self, member: ConnectWorkerMember, owner: str | None) -> None:
        for unit in member.held:
            current = self.owners.get(unit)
            if owner is None:
                if current == member.member_id:
                    del self.owners[unit]
            else:
                # Invariant 1: a connector or task is never held by two workers at once.
                assert current in (None, owner), f"{unit} held by {current} and {owner}"
                self.owners[unit] = owner

    # --- derived views --------------------------------------------------------------------

    def owner_of(self, unit: u.Unit) -> str | None:
        return self.owners.get(unit)

    def target_of(self, member_id: str) -> u.Units:
        t = self.target.get(member_id)
        return u.of(t.connectors, t.tasks) if t is not None else u.EMPTY

    def pending_of(self, member: ConnectWorkerMember) -> u.Units:
        """Target work another worker still holds (only once the worker is at the target
        epoch, as consumers' pending partitions)."""
        if member.member_epoch != self.assignment_epoch:
            return u.EMPTY
        missing = self.target_of(member.member_id) - member.assigned
        return frozenset(
            unit for unit in missing if self.owners.get(unit) not in (None, member.member_id)
        )

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        for mem in self.members.values():
            if mem.member_epoch != self.assignment_epoch or mem.state is not WorkerState.STABLE:
                return RECONCILING
        return STABLE

    def assignor(self, default_assignor: str) -> AssignorChoice:
        """The group's assignor (``assignor_choice``). Workers whose client-side ranges share
        no version (possible once a worker that bridged them left) cannot compute: the
        coordinator's own assignor serves the group until they can."""
        if self._assignor is None:
            choice = choose_assignor(self.members.values(), default_assignor)
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
    """Every record of an empty Connect group, deleted; the group's own record last (its
    replay drops the group)."""
    gid = group.group_id
    out = []
    for mid in sorted(set(group.members) | set(group.target)):
        out.append(Record(ConnectGroupCurrentMemberAssignmentKey(gid, mid), None))
        out.append(Record(ConnectGroupTargetAssignmentMemberKey(gid, mid), None))
        out.append(Record(ConnectGroupMemberMetadataKey(gid, mid), None))
    out.append(Record(ConnectGroupTargetAssignmentMetadataKey(gid), None))
    out.append(Record(ConnectGroupMetadataKey(gid), None))
    return out
