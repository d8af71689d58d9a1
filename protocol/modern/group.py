"""A KIP-848-style group's state, and how each of its records changes it.

Nothing here decides anything: the rules do. A modern group holds what its records say (the
group and assignment epochs, the members, their targets) and what follows from them directly
(who holds each unit, which member holds an instance id, the group state). ``replay`` is the
only way in, for live events and for loading alike, which is what makes a replayed shard equal
to the one that wrote the log. A group type subclasses :class:`ModernGroup`, names its record
classes (:class:`RecordKinds`) and its member class, and replays its own group-level record
(``_replay_group_record``: the consumer's subscribed topics, Connect's connectors).
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, ClassVar

from protocol.assignor_choice import AssignorChoice, AssignorTally
from protocol.modern.member import STABLE, ModernMember
from protocol.records import Record

EMPTY = "empty"
ASSIGNING = "assigning"
RECONCILING = "reconciling"
STABLE_STATE = "stable"
STATES = (EMPTY, ASSIGNING, RECONCILING, STABLE_STATE)


@dataclass(frozen=True)
class RecordKinds:
    """A group type's record classes, in the kernel's terms. Its records are named as the
    seeds name them, ``<Prefix>MetadataKey`` and so on, so a row is made from the prefix."""

    group: type  # the group's own record (epoch); its tombstone drops the group
    member: type  # a member's metadata
    target: type  # a member's target assignment
    current: type  # a member's current assignment
    target_epoch: type  # the target's epoch (assignment epoch)
    target_epoch_value: type  # its value: made from the epoch alone
    group_level: tuple[type, ...]  # every key with only a group id, its own record last

    @classmethod
    def named(
        cls, records: ModuleType, prefix: str, extra_group_level: tuple[type, ...] = ()
    ) -> RecordKinds:
        """The row of the records called ``<prefix>MetadataKey``, ``<prefix>MemberMetadataKey``,
        ``<prefix>TargetAssignmentMemberKey``, ``<prefix>CurrentMemberAssignmentKey`` and
        ``<prefix>TargetAssignmentMetadataKey/Value`` in the type's ``records`` module;
        ``extra_group_level``: the type's other group-level keys (tombstoned between the target
        epoch and the group's own record)."""
        def r(name: str) -> type:
            return getattr(records, prefix + name)

        return cls(
            group=r("MetadataKey"),
            member=r("MemberMetadataKey"),
            target=r("TargetAssignmentMemberKey"),
            current=r("CurrentMemberAssignmentKey"),
            target_epoch=r("TargetAssignmentMetadataKey"),
            target_epoch_value=r("TargetAssignmentMetadataValue"),
            group_level=(r("TargetAssignmentMetadataKey"), *extra_group_level, r("MetadataKey")),
        )

    def member_tombstones(self, group_id: str, member_id: str) -> list[Record]:
        """A member's three records, deleted: current, target, then metadata."""
        return [
            Record(self.current(group_id, member_id), None),
            Record(self.target(group_id, member_id), None),
            Record(self.member(group_id, member_id), None),
        ]


@dataclass
class ModernGroup:
    """The state every modern group shares; see the module docstring."""

    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    # When the coordinator's assignor last computed the target (KIP-1263; 0: never, or a
    # type that does not record it): the consumer's assignment interval counts from it.
    assignment_timestamp: int = 0
    members: dict[str, Any] = field(default_factory=dict)
    target: dict[str, Any] = field(default_factory=dict)
    # derived from the records, kept in step by replay
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id
    owners: dict[Any, str] = field(default_factory=dict)  # unit -> the member holding it
    # Asked on every heartbeat; depends only on the members' metadata, so cached until it changes.
    _assignor: AssignorChoice | None = field(default=None, compare=False, repr=False)
    # What the members ask of ``assignor_choice``, counted as they join, change and leave;
    # None until first asked (a bulk load fills ``members`` without replay).
    _tally: AssignorTally | None = field(default=None, compare=False, repr=False)

    group_type: ClassVar[str]
    RECORDS: ClassVar[RecordKinds]
    MEMBER: ClassVar[type]  # the member class (a ModernMember)
    NO_TARGET: ClassVar[Any]  # an empty target value of this type
    NOUN: ClassVar[str]  # how messages name a member: "member", "worker"
    MAX_SIZE_CONFIG: ClassVar[str]  # the CoordinatorConfig field limiting the group's size
    ASSIGNOR_CONFIG: ClassVar[str]  # the CoordinatorConfig field naming the default assignor

    def on_wire(self, member: Any) -> tuple[Any, Any]:
        """What ``member`` holds and waits for, in the type's wire shape (the heartbeat's
        assignment)."""
        raise NotImplementedError

    # --- replay ---------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        key, value = record.key, record.value
        kinds = self.RECORDS
        kind = type(key)
        if kind is kinds.member:
            self._replay_member(key.member_id, value)
        elif kind is kinds.current:
            self._replay_assignment(key.member_id, value)
        elif kind is kinds.target:
            if value is None:
                self.target.pop(key.member_id, None)
            else:
                self.target[key.member_id] = value
        elif kind is kinds.target_epoch:
            if value is not None:
                self.assignment_epoch = value.assignment_epoch
                self.assignment_timestamp = getattr(value, "assignment_timestamp", 0)
        elif value is not None:
            self._replay_group_record(kind, value)

    def _replay_group_record(self, kind: type, value: Any) -> None:
        """A group-level record other than the target epoch (never a tombstone)."""
        if kind is self.RECORDS.group:
            self.group_epoch = value.epoch

    def _on_member_metadata(self, old: Any, value: Any) -> None:
        """A hook: a member's metadata is about to change from ``old``'s to ``value``."""

    def _replay_member(self, member_id: str, value: Any) -> None:
        self._assignor = None
        old = self.members.get(member_id)
        if old is not None and self.static_members.get(old.instance_id or "") == member_id:
            del self.static_members[old.instance_id]
        self._on_member_metadata(old, value)
        if self._tally is not None:
            self._tally.change(None if old is None else old.metadata, value)
        if value is None:
            if old is not None:
                self._set_owner(old, None)
                del self.members[member_id]
            return
        member = (old or self.MEMBER(member_id)).with_metadata(value)
        self.members[member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member_id

    def _replay_assignment(self, member_id: str, value: Any) -> None:
        old = self.members.get(member_id)
        if value is None:
            if old is not None:
                self._set_owner(old, None)
                self.members[member_id] = self.MEMBER(member_id).with_metadata(old.metadata)
            return
        new = (old or self.MEMBER(member_id)).with_assignment(value)
        if old is None and self._tally is not None:  # a member made by its assignment record
            self._assignor = None
            self._tally.change(None, new.metadata)
        if old is not None:
            self._set_owner(old, None)
        self._set_owner(new, member_id)
        self.members[member_id] = new

    def assignor_tally(self) -> AssignorTally:
        """The members' ``AssignorTally``, counted from them the first time."""
        if self._tally is None:
            self._tally = AssignorTally.of(m.metadata for m in self.members.values())
        return self._tally

    def _set_owner(self, member: ModernMember, owner: str | None) -> None:
        owners = self.owners
        for unit in member.held_units():
            current = owners.get(unit)
            if owner is None:
                if current == member.member_id:
                    del owners[unit]
            else:
                # Invariant 1: a unit is never held by two members at once.
                assert current in (None, owner), f"{unit} held by {current} and {owner}"
                owners[unit] = owner

    # --- derived views --------------------------------------------------------------------

    def target_units(self, member_id: str) -> Set:
        """The member's target as units (the group type reads its target record)."""
        raise NotImplementedError

    def pending_units(self, member: ModernMember) -> set:
        """Target units another member still holds. Only a member that has moved to the
        target epoch waits for units; before that it waits for none (seed 002's tables)."""
        if member.member_epoch != self.assignment_epoch:
            return set()
        missing = self.target_units(member.member_id) - member.assigned_units
        owners, mine = self.owners, member.member_id
        return {unit for unit in missing if owners.get(unit) not in (None, mine)}

    @property
    def state(self) -> str:
        if not self.members:
            return EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ASSIGNING
        epoch = self.assignment_epoch
        for m in self.members.values():
            current = m.current
            if current.member_epoch != epoch or current.state != STABLE:
                return RECONCILING
        return STABLE_STATE

    def is_empty(self) -> bool:
        return not self.members

    def tombstones(self) -> list[Record]:
        """Every record of the group, deleted (DeleteGroups, offsets expiry, a downgrade):
        members' and targets' records first, the group's own record last (its replay drops the
        group). The one place a modern group's tombstones are written."""
        gid, kinds = self.group_id, self.RECORDS
        out = []
        for mid in sorted(set(self.members) | set(self.target)):
            out.extend(kinds.member_tombstones(gid, mid))
        out.extend(Record(key(gid), None) for key in kinds.group_level)
        return out
