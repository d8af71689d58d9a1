"""What a classic group leader's assignor is given, and the orders Kafka's assignors use.

A classic (JoinGroup/SyncGroup) group has no server-side assignment: the coordinator
hands the leader every member's subscription and the leader's client assignor computes
the whole group's assignment. These types are that hand-off, reduced to what the three
assignors read; the consumer code adapts its protocol messages into them.

Kafka's assignors break ties by comparing Java strings, which order by UTF-16 code
units, not by code points as Python does; :func:`java_string_key` reproduces Java's order
so that a group assigns the same way whichever language its leader runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

# (topic name, partition number)
TopicPartition = tuple[str, int]


@dataclass
class ClassicSubscription:
    """One member's JoinGroup metadata as the leader's assignor reads it.

    ``owned_partitions`` are what the member owned at ``generation_id`` (-1: unknown); the
    sticky assignor keeps them where balance allows and resolves two members claiming one
    partition in favour of the higher generation.
    """

    topics: list[str]
    owned_partitions: list[tuple[str, int]] = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None
    group_instance_id: str | None = None


@runtime_checkable
class ClassicAssignor(Protocol):
    """A classic client assignor: a pure, deterministic function of the group.

    ``name`` is Kafka's ``partition.assignment.strategy`` name; ``rebalance_protocol`` is
    ``"eager"`` (members give up everything before rejoining) or ``"cooperative"``
    (members keep what they own and revoke only what the assignment takes away).
    """

    name: str
    rebalance_protocol: str

    def assign(
        self,
        partitions_per_topic: dict[str, int],
        subscriptions: dict[str, ClassicSubscription],
    ) -> dict[str, list[tuple[str, int]]]:
        """member_id -> sorted list of (topic, partition). Every member id of `subscriptions`
        appears in the result (possibly with []). Topics missing from partitions_per_topic
        are ignored."""
        ...


def java_string_key(value: str) -> bytes:
    """A sort key that orders strings as Java's ``String.compareTo`` does (UTF-16 units).

    Big-endian UTF-16 bytes compare, byte by byte, exactly as their code units do.
    """
    return value.encode("utf-16-be", "surrogatepass")


def member_sort_key(member_id: str, subscription: ClassicSubscription) -> tuple[int, bytes, bytes]:
    """Kafka's member order (``AbstractPartitionAssignor.MemberInfo``) for range/roundrobin.

    Static members come first, by ``group.instance.id``, so that a static member restarting
    under a new member id keeps its place and its partitions; dynamic members follow, by
    member id.
    """
    if subscription.group_instance_id is not None:
        return (0, java_string_key(subscription.group_instance_id), java_string_key(member_id))
    return (1, java_string_key(member_id), b"")


def assignable_topics(
    partitions_per_topic: Mapping[str, int], subscription: ClassicSubscription
) -> frozenset[str]:
    """The subscribed topics that exist and have partitions: the only ones to assign."""
    return frozenset(t for t in subscription.topics if partitions_per_topic.get(t, 0) > 0)
