"""The heartbeat rules every modern group follows, whatever its units.

The group-type rules (``consumer/rules``, ``connect/rules``) subclass :class:`ModernRules`
and keep what is theirs: validation, which request fields a member has, what changes bump the
epoch, the reply's shape. What is here is decided once for every type:

- **Static membership.** A heartbeat naming an instance id must come from the member that
  holds it: an unknown instance id is UNKNOWN_MEMBER_ID, another holder's is
  FENCED_INSTANCE_ID. A join under a held instance id is UNRELEASED_INSTANCE_ID unless the
  holder left temporarily (epoch -2) or is a classic member (online upgrade); then the joiner
  takes the holder's place, target and units without a rebalance (docs/decisions.md).
- **The lost response.** A member that retries with its previous epoch is accepted when what
  it holds is a subset of what it was assigned (Kafka's check); it releases nothing until it
  reports at its current epoch.
- **Size, client assignors, leave and fence.** GROUP_MAX_SIZE_REACHED past the type's limit;
  UNSUPPORTED_ASSIGNOR when a member's client-side version range cannot meet the group's; a
  temporary leave keeps the member's units and place; a fence deletes its three records.

Every decision becomes records emitted through ``ctx.emit``, so memory is what the log
rebuilds.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar

from protocol.assignor_choice import choose_assignor
from protocol.errors import CoordinatorError, Errors
from protocol.modern.group import ModernGroup, RecordKinds
from protocol.modern.member import LEAVE_EPOCH, STATIC_LEAVE_EPOCH, ModernMember
from protocol.modern.sessions import MemberDeadlines
from protocol.records import Record

if TYPE_CHECKING:
    from protocol.context import ShardContext


@dataclass
class Admitted:
    """A heartbeat that passed its first step (``admit``) and waits for its turn's epoch bumps
    to be settled before it is answered (``complete``): the shard's batch path."""

    request: Any
    group_id: str
    member_id: str


class ModernRules:
    """The shared half of a modern group type's rules; see the module docstring."""

    GROUP: ClassVar[type]  # the group class (a ModernGroup: the type's row)
    ASSIGNMENT: ClassVar[type]  # the heartbeat reply's assignment struct

    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx
        self.NOUN = self.GROUP.NOUN
        self.sessions: MemberDeadlines  # the type's, set by the subclass

    def max_size(self) -> int:
        return getattr(self.ctx.config, self.GROUP.MAX_SIZE_CONFIG)

    def default_assignor(self) -> str:
        return getattr(self.ctx.config, self.GROUP.ASSIGNOR_CONFIG)

    @property
    def records(self) -> RecordKinds:
        return self.GROUP.RECORDS

    def group_of(self, group_id: str) -> Any:
        """The group ``group_id`` if it is of this type, else None."""
        group = self.ctx.groups.get(group_id)
        return group if group is not None and group.group_type == self.GROUP.group_type else None

    # --- static membership and the member's identity ----------------------------------------

    def existing_member(
        self, group: ModernGroup | None, group_id: str, member_id: str, instance_id: str | None
    ) -> Any:
        """The member a heartbeat (not a join) comes from, or the error that refuses it."""
        member = group.members.get(member_id) if group is not None else None
        if instance_id is not None and group is not None:
            holder = group.static_members.get(instance_id)
            if holder is None:
                raise CoordinatorError(
                    Errors.UNKNOWN_MEMBER_ID,
                    f"Instance id {instance_id} is unknown in group {group_id}.",
                )
            if holder != member_id:
                raise CoordinatorError(
                    Errors.FENCED_INSTANCE_ID,
                    f"Static {self.NOUN} {member_id} with instance id {instance_id} was "
                    f"replaced by {self.NOUN} {holder}.",
                )
        if member is None:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID,
                f"{self.NOUN.capitalize()} {member_id} is not a member of group {group_id}.",
            )
        return member

    def static_holder(
        self, group: ModernGroup | None, member_id: str, instance_id: str | None
    ) -> Any:
        """On a join: the member whose place the joiner takes (its instance id's holder, gone
        for a while or classic), None if it takes none; UNRELEASED_INSTANCE_ID if the holder
        is still there."""
        if group is None or instance_id is None:
            return None
        holder_id = group.static_members.get(instance_id)
        if holder_id is None or holder_id == member_id:
            return None
        holder = group.members[holder_id]
        # A classic member never says it left (static members don't): a restart with the new
        # protocol under its instance id replaces it (online upgrade).
        if holder.member_epoch != STATIC_LEAVE_EPOCH and not holder.is_classic:
            raise CoordinatorError(
                Errors.UNRELEASED_INSTANCE_ID,
                f"Static {self.NOUN} with instance id {instance_id} is still a member "
                f"({holder_id}); it must leave before another {self.NOUN} takes its place.",
            )
        return holder

    @staticmethod
    def lost_response(member: ModernMember, epoch: int, owned: Set | None) -> bool:
        """Seeds 000/004's edge case: the reply that moved the member to its epoch was lost,
        and it retries with its previous epoch. Accepted when what it holds is a subset of what
        it was assigned (part of its target at its epoch: Kafka's stricter form of the rule)."""
        return (
            epoch == member.previous_member_epoch
            and member.member_epoch >= 0
            and owned is not None
            and owned <= member.assigned_units
        )

    def check_size(self, group: ModernGroup | None) -> None:
        limit = self.max_size()
        if (len(group.members) if group is not None else 0) >= limit:
            raise CoordinatorError(
                Errors.GROUP_MAX_SIZE_REACHED,
                f"The {self.GROUP.group_type} group has reached its maximum capacity of "
                f"{limit} members.",
            )

    def check_client_assignors(
        self, group: ModernGroup | None, member: ModernMember, replacing: str | None = None
    ) -> None:
        """UNSUPPORTED_ASSIGNOR when the member's version range cannot meet the group's."""
        if not member.uses_client_assignors:
            return
        members = dict(group.members) if group is not None else {}
        members.pop(replacing or "", None)
        members[member.member_id] = member
        choice = choose_assignor(members.values(), self.default_assignor())
        if choice.client_side and choice.version_range is None:
            raise CoordinatorError(
                Errors.UNSUPPORTED_ASSIGNOR,
                f"The version range of client assignor {choice.name!r} does not overlap with "
                f"the other {self.NOUN}s of the group.",
            )

    # --- records -------------------------------------------------------------------------

    def emit_new_member(self, group_id: str, member: ModernMember) -> None:
        """A joining member's two records."""
        kinds = self.records
        self.ctx.emit(Record(kinds.member(group_id, member.member_id), member.metadata))
        self.ctx.emit(Record(kinds.current(group_id, member.member_id), member.current))

    def emit_metadata(self, group_id: str, member: ModernMember) -> None:
        self.ctx.emit(Record(self.records.member(group_id, member.member_id), member.metadata))

    def emit_assignment(self, group_id: str, member: ModernMember) -> None:
        self.ctx.emit(Record(self.records.current(group_id, member.member_id), member.current))

    def remove_member_records(self, group_id: str, member_id: str) -> None:
        for record in self.records.member_tombstones(group_id, member_id):
            self.ctx.emit(record)

    def take_place(self, group: ModernGroup, old: ModernMember, new: ModernMember) -> Any:
        """``new`` (a static member's new process) takes ``old``'s place: old's records go,
        new's metadata, old's target and new's (old's) assignment are written. Returns old's
        target."""
        gid, kinds = group.group_id, self.records
        target = group.target.get(old.member_id, group.NO_TARGET)
        self.remove_member_records(gid, old.member_id)
        self.ctx.emit(Record(kinds.member(gid, new.member_id), new.metadata))
        self.ctx.emit(Record(kinds.target(gid, new.member_id), target))
        self.ctx.emit(Record(kinds.current(gid, new.member_id), new.current))
        return target

    @staticmethod
    def renamed(member: Any, member_id: str) -> Any:
        return replace(member, member_id=member_id)

    def assignment(self, group: ModernGroup, member: ModernMember) -> Any:
        """The heartbeat reply's assignment: what the member holds, what it waits for, and its
        target's error and assignor metadata."""
        target = group.target.get(member.member_id, group.NO_TARGET)
        assigned, pending = group.on_wire(member)
        return self.ASSIGNMENT(
            target.error, assigned, pending, target.metadata_version, target.metadata_bytes
        )

    def leave(self, group: ModernGroup | None, req: Any) -> Any:
        """A leave heartbeat (epoch -1: fenced out; -2: away for a while, keeping its place);
        returns the member as it was."""
        member = self.existing_member(group, req.group_id, req.member_id, req.instance_id)
        assert group is not None
        if req.member_epoch == LEAVE_EPOCH:
            self.fence(group, member.member_id, f"{self.NOUN} left the group")
        else:
            self.leave_for_a_while(group, member)
            self.sessions.reset_session(group.group_id, member.member_id)
        return member

    def fence(self, group: Any, member_id: str, reason: str) -> None:
        raise NotImplementedError

    def leave_for_a_while(self, group: ModernGroup, member: ModernMember) -> None:
        """A static member going away for a while keeps its units and its place."""
        self.emit_assignment(group.group_id, member.away())
