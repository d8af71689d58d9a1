"""A member of a KIP-848-style group: its two records, and the moves the kernel makes on it.

A member *is* its metadata record (what it asked for) and its current-assignment record (its
epoch, its state, the units it holds). Holding the record values themselves means the record
to write is always just the changed part, and replaying a record is swapping a part. A group
type's member is a frozen dataclass with these two fields that mixes in :class:`ModernMember`
and says how its units read from and write to its current-assignment record
(``assigned_units``, ``pending_units``, ``moved_units``). Units are hashable values (a
``(topic_id, partition)`` pair, a ``(connector, task)`` pair), so the kernel's rules are set
algebra whatever the group type.
"""

from __future__ import annotations

from collections.abc import Set
from dataclasses import replace
from typing import Any, TypeVar

from protocol.records import ClientAssignorEntry

# Epochs with a meaning of their own in the heartbeat (seeds 000 and 004, as Kafka).
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

# The numbers of Kafka's MemberState, as every modern group's current-assignment record holds
# them; each group type names them in its own enum (``MemberState``, ``WorkerState``).
STABLE = 0  # holds its whole target (or all it can have) at the target epoch
UNREVOKED = 1  # must give units up before it moves to the new epoch
UNRELEASED = 2  # at the target epoch, waiting for others to release units
UNKNOWN = 3

M = TypeVar("M", bound="ModernMember")


def fresh_assignment(value_type: type) -> Any:
    """A joining member's current assignment: epoch 0, no previous epoch, stable, no units."""
    return value_type(member_epoch=JOIN_EPOCH, previous_member_epoch=-1, state=STABLE)


def read_through(part: str, name: str) -> Any:
    """A read-only attribute that reads through to one of the member's two records."""
    return property(lambda self: getattr(getattr(self, part), name))


class ModernMember:
    """What every modern member offers the kernel; mixed into a frozen dataclass that has
    ``member_id``, ``metadata`` and ``current`` fields and the ``STATES`` enum of its type."""

    __slots__ = ()
    member_id: str
    metadata: Any
    current: Any
    STATES: Any  # the group type's IntEnum over the numbers above

    member_epoch = read_through("current", "member_epoch")
    previous_member_epoch = read_through("current", "previous_member_epoch")
    instance_id = read_through("metadata", "instance_id")
    client_id = read_through("metadata", "client_id")
    client_host = read_through("metadata", "client_host")
    server_assignor = read_through("metadata", "server_assignor")
    client_assignors = read_through("metadata", "client_assignors")
    rebalance_timeout_ms = read_through("metadata", "rebalance_timeout_ms")

    @property
    def state(self) -> Any:
        s = self.current.state
        states = self.STATES
        return states(s) if s in states._value2member_map_ else states(UNKNOWN)

    @property
    def is_classic(self) -> bool:
        """Whether the member speaks the classic protocol (online migration hosts it)."""
        return self.metadata.classic_member_metadata is not None

    # --- the units, as the group type stores them ------------------------------------------

    @property
    def assigned_units(self) -> Set:
        """What the coordinator lets the member use at ``member_epoch``."""
        raise NotImplementedError

    @property
    def pending_units(self) -> Set:
        """What the member must give up before it moves on."""
        raise NotImplementedError

    def held_units(self) -> Set:
        """Everything the member may be using: assigned plus pending revocation."""
        return self.assigned_units | self.pending_units

    def unit_fields(self, assigned: Set, pending: Set) -> dict[str, Any]:
        """The current-assignment record's fields for these assigned and pending units."""
        raise NotImplementedError

    def moved_units(
        self: M,
        state: int,
        assigned: Set,
        pending: Set,
        member_epoch: int,
        previous_member_epoch: int,
    ) -> M:
        """The member with a new current assignment."""
        value = replace(
            self.current,
            member_epoch=member_epoch,
            previous_member_epoch=previous_member_epoch,
            state=int(state),
            **self.unit_fields(assigned, pending),
        )
        return replace(self, current=value)  # type: ignore[type-var]

    # --- changes --------------------------------------------------------------------------

    def with_metadata(self: M, value: Any) -> M:
        return replace(self, metadata=value)  # type: ignore[type-var]

    def with_assignment(self: M, value: Any) -> M:
        return replace(self, current=value)  # type: ignore[type-var]

    def updated(self: M, **changes: Any) -> M:
        """The member with some of its metadata fields changed."""
        return replace(self, metadata=replace(self.metadata, **changes))  # type: ignore[type-var]

    def away(self: M) -> M:
        """A static member's temporary leave: it keeps its units and its place."""
        return self.moved_units(
            STABLE, self.assigned_units, frozenset(), STATIC_LEAVE_EPOCH, self.previous_member_epoch
        )

    @property
    def uses_client_assignors(self) -> bool:
        return bool(self.client_assignors)

    def client_assignor(self, name: str) -> ClientAssignorEntry | None:
        return next((a for a in self.client_assignors if a.name == name), None)
