"""The assignor API's own types: what a server-side assignor is given and what it returns.

They follow the seed's ``PartitionAssignor.AssignmentSpec`` / ``GroupAssignment`` shape and
deliberately know nothing of ``protocol/``: the coordinator adapts its group state into an
``AssignmentSpec``, as Kafka's coordinator does with its assignor API module. Topics are
keyed by topic id (a string); partitions are plain ints.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from itertools import chain
from typing import NamedTuple, Protocol, runtime_checkable

# topic id -> partitions of that topic
Assignment = Mapping[str, frozenset[int]]


@dataclass(frozen=True)
class MemberSpec:
    """One member as the assignor sees it.

    ``assigned_partitions`` is the member's *current target* assignment: the input that
    lets a sticky assignor keep partitions where they are. It is never changed in place,
    neither by its maker nor by an assignor (which may hand the same object back): a
    spec's derived arrays (``flat_assignment``) are made once and trusted from then on.
    """

    subscribed_topic_ids: frozenset[str]
    assigned_partitions: Assignment = field(default_factory=dict)
    instance_id: str | None = None
    rack_id: str | None = None

    @cached_property
    def flat_assignment(self) -> FlatAssignment:
        """The assignment as arrays, made on first use and kept with the spec.

        The coordinator keeps a member's spec across rebalances while its target stands,
        so in a group of 10,000 members where one joins, an assignor flattens the few
        changed members' assignments, not 10,000 of them.
        """
        return FlatAssignment.of(self.assigned_partitions)

    @cached_property
    def shared_assignment(self) -> tuple[frozenset[int], frozenset[str]] | None:
        """The one value every topic of the assignment holds (the same object), as range
        hands a class's topics out, with the set of those topics; ``None`` when the values
        differ or there are none. Kept with the spec, as ``flat_assignment``."""
        values = list(self.assigned_partitions.values())
        if values and len(set(map(id, values))) == 1:
            return values[0], frozenset(self.assigned_partitions)
        return None


class FlatAssignment(NamedTuple):
    """One member's assignment in bulk form: its topic ids in the mapping's order, how many
    partitions each holds and every partition number laid end to end, both as the bytes of
    int64 arrays, so that a group's members join into one array with one ``bytes.join``
    (numpy would spend a microsecond per member concatenating small arrays)."""

    topic_ids: tuple[str, ...]
    lengths: bytes  # int64 per topic id
    partitions: bytes  # int64, as many as the lengths add up to
    all_frozensets: bool  # every value a frozenset (else no member gets its mapping back)

    @staticmethod
    def of(assignment: Assignment) -> FlatAssignment:
        values = list(assignment.values())
        return FlatAssignment(
            tuple(assignment),
            array("q", map(len, values)).tobytes(),
            array("q", chain.from_iterable(values)).tobytes(),
            all(type(v) is frozenset for v in values),
        )


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
