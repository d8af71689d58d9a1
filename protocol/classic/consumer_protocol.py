"""The bytes classic consumers put in JoinGroup and SyncGroup: subscription and assignment.

Kafka's classic coordinator treats a member's protocol metadata as opaque, except where it
must understand the consumer protocol: online migration (a classic member's subscription and
owned partitions become a KIP-848 member's, and the coordinator writes the classic members'
assignments) and the seed-003 failover check (which topics a group subscribes to). Every
Kafka client writes Kafka's ``ConsumerProtocolSubscription`` / ``ConsumerProtocolAssignment``
schemas (versions 0-3: an int16 version, then the fields, no tagged fields), so that is what
Cohort reads and writes, its own consumers included: a Java or librdkafka classic consumer and
a Cohort one meet in the same group. A version above 3 is read as 3 (its extra fields
ignored), as Kafka reads it.

Cohort's consumers once wrote msgpack (``[1, topics, owned, generation, rack, user_data]`` and
``[1, assigned, user_data]``); logs keep such bytes, so they are still read (a msgpack array's
first byte, 0x9_, is never the high byte of a version number Kafka writes).
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

import msgpack

PROTOCOL_TYPE = "consumer"
VERSION = 3  # the newest schema version of both messages, and the one Cohort writes
_LEGACY_VERSION = 1  # Cohort's msgpack form

TopicPartitionList = list[tuple[str, list[int]]]

_I16, _I32 = struct.Struct(">h"), struct.Struct(">i")


class ConsumerProtocolError(ValueError):
    """The bytes are not a consumer-protocol subscription or assignment."""


@dataclass
class Subscription:
    topics: list[str]
    owned_partitions: TopicPartitionList = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None
    user_data: bytes = b""
    version: int = VERSION  # the schema version it was read in (the assignment answers in it)


@dataclass
class Assignment:
    assigned_partitions: TopicPartitionList = field(default_factory=list)
    user_data: bytes = b""


# ------------------------------------------------------------------------------ writing


def encode_subscription(s: Subscription) -> bytes:
    version = min(max(s.version, 0), VERSION)
    out = bytearray(_I16.pack(version))
    _put_array(out, sorted(set(s.topics)), _put_string)
    _put_bytes(out, s.user_data)
    if version >= 1:
        _put_partitions(out, s.owned_partitions)
    if version >= 2:
        out += _I32.pack(s.generation_id)
    if version >= 3:
        _put_string(out, s.rack_id)
    return bytes(out)


def encode_assignment(a: Assignment, version: int = VERSION) -> bytes:
    """The assignment in ``version`` (Kafka answers a member in its subscription's version;
    the fields are the same in every version)."""
    out = bytearray(_I16.pack(min(max(version, 0), VERSION)))
    _put_partitions(out, a.assigned_partitions)
    _put_bytes(out, a.user_data)
    return bytes(out)


def _put_string(out: bytearray, value: str | None) -> None:
    if value is None:
        out += _I16.pack(-1)
        return
    raw = value.encode()
    out += _I16.pack(len(raw)) + raw


def _put_bytes(out: bytearray, value: bytes | None) -> None:
    # Kafka's clients write a null user data as length -1; an empty one is sent as null too.
    if not value:
        out += _I32.pack(-1)
        return
    out += _I32.pack(len(value)) + value


def _put_array(out: bytearray, items: list, put) -> None:
    out += _I32.pack(len(items))
    for item in items:
        put(out, item)


def _put_partitions(out: bytearray, parts: TopicPartitionList) -> None:
    entries = sorted((t, sorted(ps)) for t, ps in parts)
    out += _I32.pack(len(entries))
    for topic, partitions in entries:
        _put_string(out, topic)
        out += _I32.pack(len(partitions))
        for p in partitions:
            out += _I32.pack(p)


# ------------------------------------------------------------------------------ reading


def decode_subscription(data: bytes) -> Subscription:
    if _legacy(data):
        return _legacy_subscription(data)
    r = _Reader(data)
    version = min(r.i16(), VERSION)
    if version < 0:
        raise ConsumerProtocolError(f"bad subscription version {version}")
    topics = r.array(r.string)
    user_data = r.nullable_bytes() or b""
    owned = r.partitions() if version >= 1 else []
    generation = r.i32() if version >= 2 else -1
    rack = r.nullable_string() if version >= 3 else None
    if any(t is None for t in topics):
        raise ConsumerProtocolError("subscription topics must be names")
    return Subscription(topics, owned, generation, rack, user_data, version)


def decode_assignment(data: bytes) -> Assignment:
    """An empty byte string is an empty assignment, as Kafka reads it."""
    if data == b"":
        return Assignment()
    if _legacy(data):
        return _legacy_assignment(data)
    r = _Reader(data)
    if r.i16() < 0:
        raise ConsumerProtocolError("bad assignment version")
    assigned = r.partitions()
    return Assignment(assigned, r.nullable_bytes() or b"")


def subscription_version(data: bytes) -> int:
    """The schema version a subscription was written in (VERSION when unreadable)."""
    try:
        return decode_subscription(data).version
    except ConsumerProtocolError:
        return VERSION


def answer_version(protocols: Iterable, name: str | None) -> int:
    """The version to write a classic member's assignment in: its subscription's for the
    protocol ``name`` (or its first), as Kafka answers. ``protocols``: (name, metadata) pairs
    or records with those fields."""
    pairs = [(p[0], p[1]) if isinstance(p, tuple) else (p.name, p.metadata) for p in protocols]
    chosen = next((md for n, md in pairs if n == name), pairs[0][1] if pairs else None)
    return VERSION if chosen is None else subscription_version(chosen)


class _Reader:
    def __init__(self, data: bytes) -> None:
        if not isinstance(data, (bytes, bytearray)):
            raise ConsumerProtocolError(f"expected bytes, got {type(data).__name__}")
        self.data, self.pos = bytes(data), 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ConsumerProtocolError("consumer-protocol bytes end too early")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def i16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def i32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def nullable_string(self) -> str | None:
        n = self.i16()
        if n == -1:
            return None
        try:
            return self._take(n).decode()
        except UnicodeDecodeError:
            raise ConsumerProtocolError("a string is not UTF-8") from None

    def string(self) -> str | None:
        return self.nullable_string()

    def nullable_bytes(self) -> bytes | None:
        n = self.i32()
        return None if n == -1 else self._take(n)

    def array(self, read) -> list:
        n = self.i32()
        if n < 0 or n > len(self.data):  # every entry takes at least a byte
            raise ConsumerProtocolError("bad array length")
        return [read() for _ in range(n)]

    def partitions(self) -> TopicPartitionList:
        def entry() -> tuple[str, list[int]]:
            topic = self.string()
            if topic is None:
                raise ConsumerProtocolError("a partition list names no topic")
            parts = self.array(self.i32)
            if any(p < 0 for p in parts):
                raise ConsumerProtocolError("a partition number is negative")
            return topic, parts

        return self.array(entry)


# ------------------------------------------------------------------- the old msgpack form


def _legacy(data: object) -> bool:
    return isinstance(data, (bytes, bytearray)) and len(data) > 0 and 0x90 <= data[0] <= 0x9F


def _legacy_subscription(data: bytes) -> Subscription:
    _, topics, owned, generation, rack, user_data = _unpack(data, 6)
    if not isinstance(topics, list) or not all(isinstance(t, str) for t in topics):
        raise ConsumerProtocolError("subscription topics must be a list of names")
    if type(generation) is not int or not (rack is None or isinstance(rack, str)):
        raise ConsumerProtocolError("bad generation or rack in subscription")
    if not isinstance(user_data, bytes):
        raise ConsumerProtocolError("subscription user data must be bytes")
    return Subscription(topics, _partitions(owned), generation, rack, user_data)


def _legacy_assignment(data: bytes) -> Assignment:
    _, assigned, user_data = _unpack(data, 3)
    if not isinstance(user_data, bytes):
        raise ConsumerProtocolError("assignment user data must be bytes")
    return Assignment(_partitions(assigned), user_data)


def _unpack(data: bytes, count: int) -> list:
    try:
        fields = msgpack.unpackb(bytes(data), raw=False, use_list=True, strict_map_key=True)
    except Exception as e:  # msgpack raises several unrelated types on bad input
        raise ConsumerProtocolError(f"not consumer-protocol bytes: {type(e).__name__}") from None
    if not isinstance(fields, list) or len(fields) != count or fields[0] != _LEGACY_VERSION:
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
