"""Client-side assignor interfaces (seed 004).

With client-side assignment the coordinator does not compute the assignment: it picks
one member to run the group's assignor, hands it the group state (PrepareAssignment) and
installs what it returns (InstallAssignment). Consumers and Connect workers both do this,
so the seed introduces one :class:`Assignor` interface with two children:
:class:`PartitionAssignor` (units are topic partitions) and :class:`ConnectAssignor`
(units are connectors and tasks). Only the shapes live here; the concrete assignors are
:mod:`assignors.client.sticky` (consumers) and :mod:`assignors.connect` (Connect workers).

Each assignor advertises a ``[minimum_version, maximum_version]`` range of the metadata
format it speaks; the rule that picks the member running the assignment lives in
:mod:`assignors.client.version_range` and is re-exported here under its old names.

The shapes grew after the seed, always with defaults so older callers keep working:
``GroupMember.maximum_version`` (the highest version the member reads, so the assignor can
upgrade a member's metadata) and ``ConnectGroup.now_ms`` (the time, for Connect's delayed
rebalances: an assignor never reads a clock).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field

from assignors.client.version_range import (
    VersionRange,
    common_version_range,
    select_by_version_range,
)

__all__ = [
    "Assignment",
    "Assignor",
    "AssignorMetadata",
    "ConnectAssignor",
    "ConnectGroup",
    "ConnectGroupMember",
    "ConnectMemberAssignment",
    "Group",
    "GroupMember",
    "MemberAssignment",
    "PartitionAssignor",
    "PartitionGroup",
    "PartitionGroupMember",
    "PartitionMemberAssignment",
    "TopicMetadata",
    "VersionRange",
    "common_version_range",
    "select_by_version_range",
]


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
    """A member as the chosen assignor sees it (common part of both flavours).

    ``version`` is the version ``metadata`` is encoded in. ``maximum_version`` is the
    highest version the member's assignor reads, when the coordinator knows it (``None``:
    assume ``version``); it lets the assignor write newer metadata to a member that was
    last served an older version.
    """

    member_id: str
    instance_id: str | None = None
    reason: int = 0
    version: int = 0
    metadata: bytes = b""
    maximum_version: int | None = None

    def readable_version(self) -> int:
        """The highest metadata version this member is known to read."""
        return self.version if self.maximum_version is None else self.maximum_version


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
    """A Connect worker and its connectors and tasks.

    ``owned_*`` is the worker's current *target* (what PrepareAssignment reports, as for
    consumers): what it runs, or will run once their previous owners revoked them. That is
    what a sticky assignor keeps in place.
    """

    owned_connectors: frozenset[str] = frozenset()
    owned_tasks: frozenset[tuple[str, int]] = frozenset()


@dataclass(frozen=True)
class ConnectGroup(Group):
    """A Connect group as its assignor sees it.

    ``connectors`` maps each configured connector to its task count (tasks ``0..n-1``).
    ``now_ms`` is the assigning worker's wall-clock time in ms, for delayed rebalances;
    ``None`` when the caller has no clock to offer (an assignor that needs one says so).
    """

    members: tuple[ConnectGroupMember, ...]
    connectors: Mapping[str, int] = field(default_factory=dict)  # connector -> task count
    now_ms: int | None = None


@dataclass(frozen=True)
class ConnectMemberAssignment(MemberAssignment):
    connectors: frozenset[str] = frozenset()
    tasks: frozenset[tuple[str, int]] = frozenset()


class ConnectAssignor(Assignor):
    """A Connect worker's assignor: assigns connectors and (connector, task) pairs.

    Connect delays some rebalances (a departed worker's work is held for a while), and the
    coordinator only rebalances when something changes; an implementation may therefore
    accept ``metadata(now_ms=...)`` and set ``reason`` once a delay is over (see
    :mod:`assignors.connect`).
    """

    @abstractmethod
    def assign(self, group: ConnectGroup) -> Assignment: ...  # type: ignore[override]
