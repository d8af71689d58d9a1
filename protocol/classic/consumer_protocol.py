"""The bytes classic consumers put in JoinGroup and SyncGroup: subscription and assignment.

Kafka's classic coordinator treats a member's protocol metadata as opaque, except where it
must understand the consumer protocol: online migration (a classic member's subscription and
owned partitions become a KIP-848 member's) and the seed-003 failover check (which topics a
group subscribes to). Cohort's consumers encode the same fields as Kafka's
``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment`` (topics by name), as msgpack
with a version number in front.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgpack

PROTOCOL_TYPE = "consumer"
VERSION = 1

TopicPartitionList = list[tuple[str, list[int]]]


class ConsumerProtocolError(ValueError):
    """The bytes are not a consumer-protocol subscription or assignment."""


@dataclass
class Subscription:
    topics: list[str]
    owned_partitions: TopicPartitionList = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None
    user_data: bytes = b""


@dataclass
class Assignment:
    assigned_partitions: TopicPartitionList = field(default_factory=list)
    user_data: bytes = b""


def encode_subscription(s: Subscription) -> bytes:
    owned = [[t, sorted(ps)] for t, ps in sorted(s.owned_partitions)]
    return msgpack.packb(
        [VERSION, sorted(set(s.topics)), owned, s.generation_id, s.rack_id, s.user_data],
        use_bin_type=True,
    )


def decode_subscription(data: bytes) -> Subscription:
    fields = _unpack(data, 6)
    _, topics, owned, generation, rack, user_data = fields
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise ConsumerProtocolError("subscription topics must be a list of names")
    if type(generation) is not int or not (rack is None or isinstance(rack, str)):
        raise ConsumerProtocolError("bad generation or rack in subscription")
    if not isinstance(user_data, bytes):
        raise ConsumerProtocolError("subscription user data must be bytes")
    return Subscription(topics, _partitions(owned), generation, rack, user_data)


def encode_assignment(a: Assignment) -> bytes:
    assigned = [[t, sorted(ps)] for t, ps in sorted(a.assigned_partitions)]
    return msgpack.packb([VERSION, assigned, a.user_data], use_bin_type=True)


def decode_assignment(data: bytes) -> Assignment:
    """An empty byte string is an empty assignment, as Kafka reads it."""
    if data == b"":
        return Assignment()
    _, assigned, user_data = _unpack(data, 3)
    if not isinstance(user_data, bytes):
        raise ConsumerProtocolError("assignment user data must be bytes")
    return Assignment(_partitions(assigned), user_data)


def _unpack(data: bytes, count: int) -> list:
    if not isinstance(data, (bytes, bytearray)):
        raise ConsumerProtocolError(f"expected bytes, got {type(data).__name__}")
    try:
        fields = msgpack.unpackb(bytes(data), raw=False, use_list=True, strict_map_key=True)
    except Exception as e:  # msgpack raises several unrelated types on bad input
        raise ConsumerProtocolError(f"not consumer-protocol bytes: {type(e).__name__}") from None
    if not isinstance(fields, list) or len(fields) != count or fields[0] != VERSION:
        raise ConsumerProtocolError("unknown consumer-protocol version or shape")
    return fields


def _partitions(wire: object) -> TopicPartitionList:
    if not isinstance(wire, list):
        raise ConsumerProtocolError("partitions must be a list of [topic, [partitions]]")
    out: TopicPartitionList = []
    for entry in wire:
        if (
            not isinstance(entry, list)
            or len(entry) != 2
            or not isinstance(entry[0], str)
            or not isinstance(entry[1], list)
            or not all(type(p) is int and 0 <= p < 2**31 for p in entry[1])
        ):
            raise ConsumerProtocolError("partitions must be a list of [topic, [partitions]]")
        out.append((entry[0], list(entry[1])))
    return out
