"""The assignor API's own types: what a server-side assignor is given and what it returns.

They follow the seed's ``PartitionAssignor.AssignmentSpec`` / ``GroupAssignment`` shape and
deliberately know nothing of ``protocol/``: the coordinator adapts its group state into an
``AssignmentSpec``, as Kafka's coordinator does with its assignor API module. Topics are
keyed by topic id (a string); partitions are plain ints.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

# topic id -> partitions of that topic
Assignment = Mapping[str, frozenset[int]]


@dataclass(frozen=True)
class MemberSpec:
    """One member as the assignor sees it.

    ``assigned_partitions`` is the member's *current target* assignment: the input that
    lets a sticky assignor keep partitions where they are.
    """

    subscribed_topic_ids: frozenset[str]
    assigned_partitions: Assignment = field(default_factory=dict)
    instance_id: str | None = None
    rack_id: str | None = None


@dataclass(frozen=True)
class TopicSpec:
    """A subscribed topic: its name, size and, optionally, the racks of each partition.

    ``partition_racks[p]`` is the set of racks holding replicas of partition ``p``; ``None``
    means rack information is unknown and rack awareness is off for this topic.
    """

    topic_name: str
    num_partitions: int
    partition_racks: tuple[frozenset[str], ...] | None = None


@dataclass(frozen=True)
class AssignmentSpec:
    """The members keyed by member id and the topics keyed by topic id."""

    members: Mapping[str, MemberSpec]
    topics: Mapping[str, TopicSpec]


@dataclass(frozen=True)
class GroupAssignment:
    """The new target partitions of every member, keyed by member id.

    Every member of the spec appears, possibly with an empty assignment.
    """

    members: Mapping[str, Assignment]


class PartitionAssignorError(Exception):
    """The assignor cannot produce an assignment for this spec."""


@runtime_checkable
class PartitionAssignor(Protocol):
    """A server-side assignor: a pure function from spec to assignment."""

    name: str

    def assign(self, spec: AssignmentSpec) -> GroupAssignment: ...
