"""One driver for both online migrations: a classic group to a KIP-848-style group and back.

Consumer groups (seed 002, ``conversion``) and Connect groups (seed 004, ``connect_conversion``)
convert the same way; only what a member's classic bytes mean, which records the modern group
is written with and which policy key governs it differ. This module holds the common path and
asks a subclass for those differences through a few named hooks (see ``ConversionDriver``).

What it guarantees, for every group type:
- an upgrade is refused, and nothing changes, unless the policy allows it, the classic group
  speaks the type's embedded protocol, passes the type's own check, has room for the joiner
  and is stable (checked in that order: Kafka's order, then Cohort's stability rule: Kafka 4.4
  converts a rebalancing group too, which lets a partition be owned twice by Cohort's classic
  clients, ``TestUpgradeChaos``);
- a conversion is one event: a tombstone of the old representation, then the records of the
  new one, so the log never holds the group twice and replay rebuilds the same state;
- upgrade: the generation becomes the group epoch, and what each classic member holds becomes
  both its target and its current assignment (nobody loses or gains work in the conversion);
- downgrade: only when every member left speaks the classic protocol and the policy allows it;
  the group epoch becomes the generation, each member's holdings its classic assignment, and the
  classic rules start a rebalance.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from protocol.classic import group as cg
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.classic.records import GroupMetadataKey
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.records import ClassicMemberMetadata, ClassicProtocol, Record

POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")

G = TypeVar("G")  # the modern group type (ConsumerGroup, ConnectGroup)


@dataclass(frozen=True)
class ConvertedMember:
    """One classic member as the modern group's three member records will hold it."""

    member_id: str
    metadata: Any
    target: Any
    current: Any


def classic_member_metadata(member: ClassicMember) -> ClassicMemberMetadata:
    """What a converted member keeps of its classic self (its session and protocols)."""
    return ClassicMemberMetadata(
        session_timeout_ms=member.session_timeout_ms,
        supported_protocols=tuple(ClassicProtocol(n, md) for n, md in member.protocols),
    )


class ConversionDriver(Generic[G]):
    """The conversion path shared by every group type; subclasses name their differences.

    Hooks (class attributes): ``protocol_type`` (the classic embedded protocol), ``label``
    (the type's name in messages), ``policy_key`` and ``max_size_key`` (config fields), and
    ``member_keys`` (the metadata, target and current-assignment record keys). Hooks (methods):
    ``refuse`` (a type's own reason not to convert), ``convert_members``, ``group_records``
    (the records after the members'), ``classic_assignment`` and ``tombstones``.
    """

    protocol_type: str
    label: str
    policy_key: str
    max_size_key: str
    member_keys: tuple[type, type, type]

    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx

    def _allows(self, direction: str) -> bool:
        policy = getattr(self.ctx.config, self.policy_key)
        return policy == "bidirectional" or policy == direction

    # ------------------------------------------------------------------ upgrade

    def check_upgrade(self, group: ClassicGroup) -> None:
        """Raise the reason a non-empty classic group cannot convert now (nothing changes)."""
        refusal = self._refusal(group)
        if refusal is not None:
            raise CoordinatorError(*refusal)
        self.refuse(group)
        if len(group.members) >= getattr(self.ctx.config, self.max_size_key):
            raise CoordinatorError(
                Errors.GROUP_MAX_SIZE_REACHED,
                f"Group {group.group_id} is larger than {self.max_size_key}.",
            )
        if group.state != cg.STABLE:
            # Cohort's rule (Kafka 4.4 converts a rebalancing group and answers what it holds
            # REBALANCE_IN_PROGRESS): the assignment of a rebalancing group is not settled, and
            # converting it lets a partition be owned twice (TestUpgradeChaos). Try again soon.
            raise CoordinatorError(
                Errors.REBALANCE_IN_PROGRESS,
                f"Classic group {group.group_id} is "
                f"{group.state}; it converts to the new protocol once stable: retry.",
            )

    def _refusal(self, group: ClassicGroup) -> tuple[Errors, str] | None:
        """Kafka's two reasons a classic group is not this type's (GROUP_ID_NOT_FOUND)."""
        if not self._allows("upgrade"):
            why = f"online upgrade to {self.label} is disabled"
        elif group.protocol_type != self.protocol_type:
            why = f"its protocol type is {group.protocol_type!r}, not {self.protocol_type!r}"
        else:
            return None
        return Errors.GROUP_ID_NOT_FOUND, f"Group {group.group_id} is a classic group: {why}."

    def upgrade(self, group: ClassicGroup) -> None:
        """The classic group becomes the modern one, at its generation, in one event."""
        gid, epoch = group.group_id, group.generation_id
        converted = self.convert_members(group)
        metadata_key, target_key, current_key = self.member_keys
        self.ctx.emit(Record(GroupMetadataKey(gid), None))
        for c in converted:
            self.ctx.emit(Record(metadata_key(gid, c.member_id), c.metadata))
            self.ctx.emit(Record(target_key(gid, c.member_id), c.target))
            self.ctx.emit(Record(current_key(gid, c.member_id), c.current))
        for record in self.group_records(gid, epoch):
            self.ctx.emit(record)

    # ------------------------------------------------------------------ downgrade

    def maybe_downgrade(self, group: G) -> bool:
        """The last new-protocol member left (or turned classic): a group of classic members
        only converts back and rebalances as a classic group. Returns whether it did."""
        members = list(group.members.values())  # type: ignore[attr-defined]
        if (
            not members
            or any(mem.metadata.classic_member_metadata is None for mem in members)
            or not self._allows("downgrade")
        ):
            return False
        self.downgrade(group)
        return True

    def downgrade(self, modern: G) -> None:
        """The modern group becomes a stable classic one at its epoch, in one event."""
        gid: str = modern.group_id  # type: ignore[attr-defined]
        members = list(modern.members.values())  # type: ignore[attr-defined]
        classic = ClassicGroup(
            gid,
            state=cg.STABLE,
            generation_id=modern.group_epoch,  # type: ignore[attr-defined]
            protocol_type=self.protocol_type,
            state_timestamp_ms=self.ctx.now_ms,
        )
        for member in members:
            meta = member.metadata.classic_member_metadata
            assert meta is not None
            classic.add(
                ClassicMember(
                    member_id=member.member_id,
                    group_instance_id=member.instance_id,
                    client_id=member.client_id,
                    client_host=member.client_host,
                    rebalance_timeout_ms=max(member.rebalance_timeout_ms, 0),
                    session_timeout_ms=meta.session_timeout_ms,
                    protocol_type=self.protocol_type,
                    protocols=[(p.name, p.metadata) for p in meta.supported_protocols],
                )
            )
        classic.protocol_name = classic.select_protocol()
        for member in members:
            classic.members[member.member_id].assignment = self.classic_assignment(
                modern, member, classic.protocol_name
            )
        # The modern group's records go; its metadata tombstone takes the rest with it.
        for record in self.tombstones(modern):
            self.ctx.emit(record)
        self.ctx.groups[gid] = classic
        self.ctx.emit(Record(GroupMetadataKey(gid), classic.to_record()))
        self.ctx.classic.start_after_downgrade(classic)

    # ------------------------------------------------------------------ hooks

    def refuse(self, group: ClassicGroup) -> None:
        """A group type's own reason not to convert this classic group (default: none)."""

    def convert_members(self, group: ClassicGroup) -> list[ConvertedMember]:
        raise NotImplementedError

    def group_records(self, group_id: str, epoch: int) -> Iterator[Record]:
        """The target-metadata and group records, yielded one by one after the members' (each
        is applied before the next is made, so a hook may read the group built so far)."""
        raise NotImplementedError

    def classic_assignment(self, group: G, member: Any, protocol_name: str) -> bytes:
        raise NotImplementedError

    def tombstones(self, group: G) -> list[Record]:
        raise NotImplementedError
