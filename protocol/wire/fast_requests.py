"""Hand-written decoders for the requests that dominate group traffic: OffsetCommit (8),
OffsetFetch (9), Heartbeat (12) and ConsumerGroupHeartbeat (68), every version served.

Each turns a request body into exactly the plain dict that kio's reader followed by
``entities.plain`` makes of it (same keys in the same order, same values, None where kio gives
None), and refuses exactly the bodies kio refuses; ``tests/gateway/test_fast_codec.py`` checks
both against kio (the oracle) at every version with random and garbled frames. They exist for
speed: kio builds a frozen dataclass per struct and ``plain`` walks it again, which for a
one-partition commit costs more than the coordinator's own work. Versions are told apart as
Kafka's generated code does (``if version >= 7``), read off the schemas in kio.

A decoder is ``decode(data, pos, version) -> dict``; ``pos`` is where the body starts (after
the request header). Malformed input raises what ``primitives`` raises.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from protocol.wire.primitives import (
    INT32,
    boolean,
    compact_array_count,
    compact_array_length,
    compact_nullable_string,
    compact_string,
    int32s,
    legacy_array_count,
    legacy_array_length,
    legacy_nullable_string,
    legacy_string,
    no_tagged_fields,
    timedelta_i64_ms,
    uuid_or_none,
)

_PARTITION_V2 = struct.Struct(">iq")  # partition_index, committed_offset
_PARTITION_V6 = struct.Struct(">iqi")  # ... and committed_leader_epoch
Decoder = Callable[[bytes, int, int], dict[str, Any]]


# (string, nullable string, nullable array's length, array's length) in a version's encoding.
_COMPACT = (compact_string, compact_nullable_string, compact_array_length, compact_array_count)
_LEGACY = (legacy_string, legacy_nullable_string, legacy_array_length, legacy_array_count)


# ---------------------------------------------------------------------------- OffsetCommit


def offset_commit(data: bytes, pos: int, version: int) -> dict[str, Any]:
    """v2-v4 carry retention_time, v6 adds leader epochs, v7 the instance id, v8 is flexible."""
    flexible = version >= 8
    string, nullable_string, _, count = _COMPACT if flexible else _LEGACY
    group_id, pos = string(data, pos)
    (generation,) = INT32.unpack_from(data, pos)
    member_id, pos = string(data, pos + 4)
    body: dict[str, Any] = {"group_id": group_id, "generation_id_or_member_epoch": generation,
                            "member_id": member_id}
    if version <= 4:
        body["retention_time"], pos = timedelta_i64_ms(data, pos)
    if version >= 7:
        body["group_instance_id"], pos = nullable_string(data, pos)
    n, pos = count(data, pos)
    topics = []
    for _ in range(n):
        name, pos = string(data, pos)
        partitions, pos = _commit_partitions(data, pos, version, flexible)
        if flexible:
            pos = no_tagged_fields(data, pos)
        topics.append({"name": name, "partitions": partitions})
    body["topics"] = topics
    if flexible:
        no_tagged_fields(data, pos)
    return body


def _commit_partitions(data: bytes, pos: int, version: int, flexible: bool
                       ) -> tuple[list[dict], int]:
    _, nullable_string, _, count = _COMPACT if flexible else _LEGACY
    n, pos = count(data, pos)
    partitions = []
    for _ in range(n):
        if version >= 6:
            index, offset, epoch = _PARTITION_V6.unpack_from(data, pos)
            metadata, pos = nullable_string(data, pos + 16)
            p = {"partition_index": index, "committed_offset": offset,
                 "committed_leader_epoch": epoch, "committed_metadata": metadata}
        else:
            index, offset = _PARTITION_V2.unpack_from(data, pos)
            metadata, pos = nullable_string(data, pos + 12)
            p = {"partition_index": index, "committed_offset": offset,
                 "committed_metadata": metadata}
        if flexible:
            pos = no_tagged_fields(data, pos)
        partitions.append(p)
    return partitions, pos


# ----------------------------------------------------------------------------- OffsetFetch


def offset_fetch(data: bytes, pos: int, version: int) -> dict[str, Any]:
    """v1-v7 name one group (v2 may ask for all its topics: null topics; v6 is flexible, v7
    adds require_stable); v8 many groups; v9 adds the member id and epoch (KIP-848)."""
    flexible = version >= 6
    string, nullable_string, _, count = _COMPACT if flexible else _LEGACY
    if version < 8:
        group_id, pos = string(data, pos)
        topics, pos = _fetch_topics(data, pos, flexible, nullable=version >= 2)
        body: dict[str, Any] = {"group_id": group_id, "topics": topics}
    else:
        n, pos = count(data, pos)
        groups = []
        for _ in range(n):
            group_id, pos = string(data, pos)
            group: dict[str, Any] = {"group_id": group_id}
            if version >= 9:
                group["member_id"], pos = nullable_string(data, pos)
                (group["member_epoch"],) = INT32.unpack_from(data, pos)
                pos += 4
            group["topics"], pos = _fetch_topics(data, pos, flexible, nullable=True)
            pos = no_tagged_fields(data, pos)
            groups.append(group)
        body = {"groups": groups}
    if version >= 7:
        body["require_stable"], pos = boolean(data, pos)
    if flexible:
        no_tagged_fields(data, pos)
    return body


def _fetch_topics(data: bytes, pos: int, flexible: bool, nullable: bool
                  ) -> tuple[list[dict] | None, int]:
    string, _, length, count = _COMPACT if flexible else _LEGACY
    n, pos = (length if nullable else count)(data, pos)
    if n is None:
        return None, pos
    topics = []
    for _ in range(n):
        name, pos = string(data, pos)
        indexes, pos = int32s(data, *count(data, pos))
        if flexible:
            pos = no_tagged_fields(data, pos)
        topics.append({"name": name, "partition_indexes": indexes})
    return topics, pos


# ------------------------------------------------------------------------------- Heartbeat


def heartbeat(data: bytes, pos: int, version: int) -> dict[str, Any]:
    """The classic heartbeat: v3 adds the instance id, v4 is flexible."""
    flexible = version >= 4
    string, nullable_string, _, _ = _COMPACT if flexible else _LEGACY
    group_id, pos = string(data, pos)
    (generation,) = INT32.unpack_from(data, pos)
    member_id, pos = string(data, pos + 4)
    body: dict[str, Any] = {"group_id": group_id, "generation_id": generation,
                            "member_id": member_id}
    if version >= 3:
        body["group_instance_id"], pos = nullable_string(data, pos)
    if flexible:
        no_tagged_fields(data, pos)
    return body


# ------------------------------------------------------------------ ConsumerGroupHeartbeat


def consumer_group_heartbeat(data: bytes, pos: int, version: int) -> dict[str, Any]:
    """KIP-848's heartbeat (always flexible): v1 adds the subscribed topic regex."""
    group_id, pos = compact_string(data, pos)
    member_id, pos = compact_string(data, pos)
    (epoch,) = INT32.unpack_from(data, pos)
    instance_id, pos = compact_nullable_string(data, pos + 4)
    rack_id, pos = compact_nullable_string(data, pos)
    (rebalance_timeout,) = INT32.unpack_from(data, pos)
    n, pos = compact_array_length(data, pos + 4)
    names = None
    if n is not None:
        names = []
        for _ in range(n):
            name, pos = compact_string(data, pos)
            names.append(name)
    body: dict[str, Any] = {
        "group_id": group_id, "member_id": member_id, "member_epoch": epoch,
        "instance_id": instance_id, "rack_id": rack_id, "rebalance_timeout": rebalance_timeout,
        "subscribed_topic_names": names,
    }
    if version >= 1:
        body["subscribed_topic_regex"], pos = compact_nullable_string(data, pos)
    body["server_assignor"], pos = compact_nullable_string(data, pos)
    n, pos = compact_array_length(data, pos)
    owned = None
    if n is not None:
        owned = []
        for _ in range(n):
            topic_id, pos = uuid_or_none(data, pos)
            partitions, pos = int32s(data, *compact_array_count(data, pos))
            pos = no_tagged_fields(data, pos)
            owned.append({"topic_id": topic_id, "partitions": partitions})
    body["topic_partitions"] = owned
    no_tagged_fields(data, pos)
    return body


# By API key: the requests decoded here rather than by kio (every version the API table serves).
DECODERS: dict[int, Decoder] = {
    8: offset_commit,
    9: offset_fetch,
    12: heartbeat,
    68: consumer_group_heartbeat,
}
