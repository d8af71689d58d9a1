"""Client-side assignor interfaces (seed 004) and the coordinator's version-range rule.

With client-side assignment the coordinator does not compute the assignment: it picks
one member to run the group's assignor, hands it the group state (PrepareAssignment) and
installs what it returns (InstallAssignment). Consumers and Connect workers both do this,
so the seed introduces one :class:`Assignor` interface with two children:
:class:`PartitionAssignor` (units are topic partitions) and :class:`ConnectAssignor`
(units are connectors and tasks). Only the shapes live here; concrete client assignors
belong with the clients.

Each assignor advertises a ``[minimum_version, maximum_version]`` range of the metadata
format it speaks. :func:`select_by_version_range` is the coordinator's choice of the
member that runs the assignment.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class AssignorMetadata:
    """What a member advertises for its assignor: why it wants a rebalance, and data.

    ``reason`` lets an assignor ask the coordinator for a new assignment (Connect uses it
    for its delayed rebalances); ``version`` says how ``metadata`` is encoded.
    """

    reason: int
    version: int
    metadata: bytes = b""


@dataclass(frozen=True)
class GroupMember:
    """A member as the chosen assignor sees it (common part of both flavours)."""

    member_id: str
    instance_id: str | None = None
    reason: int = 0
    version: int = 0
    metadata: bytes = b""


@dataclass(frozen=True)
class Group:
    """The group state handed to the assignor."""

    members: tuple[GroupMember, ...]


@dataclass(frozen=True)
class MemberAssignment:
    """One member's result: an error, and metadata at a version that member speaks."""

    member_id: str
    error: int = 0
    version: int = 0
    metadata: bytes = b""


@dataclass(frozen=True)
class Assignment:
    """The assignor's answer for the whole group."""

    error: int
    members: tuple[MemberAssignment, ...]


class Assignor(ABC):
    """A client-side assignor: names itself, advertises versions, assigns, is told.

    ``minimum_version() <= maximum_version()`` bounds the metadata versions it can read
    and write; the coordinator uses the ranges to pick which member runs it.
    """

    @abstractmethod
    def name(self) -> str:
        """Unique name; members of a group must agree on it."""

    @abstractmethod
    def minimum_version(self) -> int: ...

    @abstractmethod
    def maximum_version(self) -> int: ...

    @abstractmethod
    def metadata(self) -> AssignorMetadata:
        """What this member sends along with its heartbeat for the assignor."""

    @abstractmethod
    def assign(self, group: Group) -> Assignment:
        """Compute the whole group's assignment (runs on the chosen member only)."""

    @abstractmethod
    def on_assignment(self, assignment: MemberAssignment) -> None:
        """Called on every member when the coordinator delivers its new assignment."""


# -- consumers: topic partitions ---------------------------------------------------------


@dataclass(frozen=True)
class TopicMetadata:
    topic_id: str
    num_partitions: int


@dataclass(frozen=True)
class PartitionGroupMember(GroupMember):
    """A consumer: its subscription and the partitions it owns at the current epoch."""

    subscribed_topic_ids: frozenset[str] = frozenset()
    owned_partitions: frozenset[tuple[str, int]] = frozenset()


@dataclass(frozen=True)
class PartitionGroup(Group):
    members: tuple[PartitionGroupMember, ...]
    topics: tuple[TopicMetadata, ...] = ()


@dataclass(frozen=True)
class PartitionMemberAssignment(MemberAssignment):
    partitions: frozenset[tuple[str, int]] = frozenset()


class PartitionAssignor(Assignor):
    """A consumer's client-side assignor: assigns (topic id, partition) pairs."""

    @abstractmethod
    def assign(self, group: PartitionGroup) -> Assignment: ...  # type: ignore[override]


# -- Connect: connectors and tasks -------------------------------------------------------


@dataclass(frozen=True)
class ConnectGroupMember(GroupMember):
    """A Connect worker: the connectors and tasks it runs now."""

    owned_connectors: frozenset[str] = frozenset()
    owned_tasks: frozenset[tuple[str, int]] = frozenset()


@dataclass(frozen=True)
class ConnectGroup(Group):
    members: tuple[ConnectGroupMember, ...]
    connectors: Mapping[str, int] = field(default_factory=dict)  # connector -> task count


@dataclass(frozen=True)
class ConnectMemberAssignment(MemberAssignment):
    connectors: frozenset[str] = frozenset()
    tasks: frozenset[tuple[str, int]] = frozenset()


class ConnectAssignor(Assignor):
    """A Connect worker's assignor: assigns connectors and (connector, task) pairs."""

    @abstractmethod
    def assign(self, group: ConnectGroup) -> Assignment: ...  # type: ignore[override]


# -- the coordinator's choice of assigning member ---------------------------------------


def common_version_range(ranges: Mapping[str, tuple[int, int]]) -> tuple[int, int] | None:
    """The versions every member supports, ``(low, high)``, or ``None`` if there are none.

    Ranges pairwise overlapping is the same as a common version (intervals on a line).
    """
    if not ranges:
        return None
    low = max(lo for lo, _ in ranges.values())
    high = min(hi for _, hi in ranges.values())
    return (low, high) if low <= high else None


def select_by_version_range(ranges: Mapping[str, tuple[int, int]]) -> str | None:
    """The member (id) to run the client-side assignor, or ``None``: UNSUPPORTED_ASSIGNOR.

    Seed 004: "the group coordinator must select a worker which is able to handle all the
    supported versions" (A [1-5], B [3-4], C [2-4] -> A). Preference, ties to the smaller
    member id: a member whose range covers every other member's; else, when all ranges
    share a version, the widest range; ranges without a common version -> ``None``.
    """
    if common_version_range(ranges) is None:
        return None
    lowest = min(lo for lo, _ in ranges.values())
    highest = max(hi for _, hi in ranges.values())
    members = sorted(ranges)
    covering = [m for m in members if ranges[m][0] <= lowest and ranges[m][1] >= highest]
    if covering:
        return covering[0]
    return min(members, key=lambda m: (-(ranges[m][1] - ranges[m][0]), m))
