"""Hand-written encoders for the responses that dominate group traffic: OffsetCommit (8),
OffsetFetch (9), Heartbeat (12), ConsumerGroupHeartbeat (68), and the classic rebalance's
JoinGroup (11), SyncGroup (14) and LeaveGroup (13), every version served.

Each writes exactly the bytes that ``entities.build`` followed by kio's writer would write for
the same plain body: a field the version lacks is ignored, a field the body lacks takes the
schema's default or a zero, None in a non-nullable field is written as its zero, and an error
code kio does not know as UNKNOWN_SERVER_ERROR (the coercions in ``primitives``).
``tests/gateway/test_fast_codec.py`` checks every version against kio (the oracle) with random
bodies. They exist for speed: building a kio entity per struct and writing it through kio's
per-field writers costs several times the coordinator's own work for a one-partition commit.

An encoder is ``encode(out, body, version)``: it appends the response body to ``out``.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import Any

from protocol.wire.ids import kafka_error
from protocol.wire.primitives import (
    INT16,
    INT32,
    blob,
    error_code,
    nullable_text,
    put_compact_array_length,
    put_compact_string,
    put_legacy_array_length,
    put_legacy_bytes,
    put_legacy_string,
    text,
)

_INDEX_ERROR = struct.Struct(">ih")  # partition_index, error_code
_THROTTLE_ERROR = struct.Struct(">ih")  # throttle_time, error_code
_INDEX_OFFSET = struct.Struct(">iq")  # partition_index, committed_offset
_EPOCH_INTERVAL = struct.Struct(">ii")  # member_epoch, heartbeat_interval
_ZERO_UUID = bytes(16)
Encoder = Callable[[bytearray, dict[str, Any], int], None]


def _int(value: object) -> int:
    return int(value or 0)


def _writers(flexible: bool):
    """(string, bytes, array length) in a version's encoding; the string writer takes None
    as null, so a non-nullable field passes ``text(value)``."""
    if flexible:
        return put_compact_string, put_compact_string, put_compact_array_length
    return put_legacy_string, put_legacy_bytes, put_legacy_array_length


def _int32s(out: bytearray, values: list, flexible: bool) -> None:
    """A non-nullable array of int32s (None is written as empty, each None entry as 0)."""
    values = values or []
    (put_compact_array_length if flexible else put_legacy_array_length)(out, len(values))
    try:
        out += struct.pack(f">{len(values)}i", *values)
    except struct.error:
        out += struct.pack(f">{len(values)}i", *[_int(v) for v in values])


def _throttle(out: bytearray, body: dict, version: int, since: int) -> None:
    if version >= since:
        out += INT32.pack(_int(body.get("throttle_time")))


# ---------------------------------------------------------------------------- OffsetCommit


def offset_commit(out: bytearray, body: dict[str, Any], version: int) -> None:
    _throttle(out, body, version, 3)
    topics = []
    for t in body.get("topics") or []:
        t = t or {}
        partitions = [p or {} for p in t.get("partitions") or []]
        topics.append((text(t.get("name")), [
            (_int(p.get("partition_index")), p.get("error_code")) for p in partitions]))
    _commit_topics(out, topics, version)


def offset_commit_reply(out: bytearray, resp: Any, body: dict[str, Any], version: int) -> None:
    """``offset_commit`` of ``offsets.commit_response(resp, body)``, with no dictionary between:
    a commit's reply on a partition's hot path (building the dictionary cost as much as writing
    it). ``body`` is the decoded request's, every field there; the reply names its partitions,
    and one request-level error goes to every one of them, as ``commit_response`` does."""
    _throttle(out, {}, version, 3)
    top = kafka_error(resp.error_code)
    errors = None if top else {(t.name, p.partition_index): p.error_code
                               for t in resp.topics for p in t.partitions if p.error_code}
    _commit_topics(out, [
        (t["name"], [(p["partition_index"], top or (
            kafka_error(errors.get((t["name"], p["partition_index"]), 0)) if errors else 0))
            for p in t["partitions"]])
        for t in body.get("topics") or []
    ], version)


def _commit_topics(out: bytearray, topics: list[tuple[str, list[tuple[int, object]]]],
                   version: int) -> None:
    """OffsetCommit's topics: (name, [(partition index, error code)])."""
    flexible = version >= 8
    string, _, array_length = _writers(flexible)
    array_length(out, len(topics))
    for name, partitions in topics:
        string(out, text(name))
        array_length(out, len(partitions))
        for index, code in partitions:
            out += _INDEX_ERROR.pack(index, error_code(code))
            if flexible:
                out.append(0)
        if flexible:
            out.append(0)
    if flexible:
        out.append(0)


# ----------------------------------------------------------------------------- OffsetFetch


def offset_fetch(out: bytearray, body: dict[str, Any], version: int) -> None:
    flexible = version >= 6
    string, _, array_length = _writers(flexible)
    _throttle(out, body, version, 3)
    if version >= 8:
        groups = body.get("groups") or []
        array_length(out, len(groups))
        for g in groups:
            g = g or {}
            string(out, text(g.get("group_id")))
            _fetch_topics(out, g.get("topics"), version, flexible)
            out += INT16.pack(error_code(g.get("error_code", 0)))
            out.append(0)
    else:
        _fetch_topics(out, body.get("topics"), version, flexible)
        if version >= 2:
            out += INT16.pack(error_code(body.get("error_code", 0)))
    if flexible:
        out.append(0)


def _fetch_topics(out: bytearray, topics: list | None, version: int, flexible: bool) -> None:
    string, _, array_length = _writers(flexible)
    topics = topics or []
    array_length(out, len(topics))
    for t in topics:
        t = t or {}
        string(out, text(t.get("name")))
        partitions = t.get("partitions") or []
        array_length(out, len(partitions))
        for p in partitions:
            p = p or {}
            out += _INDEX_OFFSET.pack(_int(p.get("partition_index")),
                                      _int(p.get("committed_offset")))
            if version >= 5:
                out += INT32.pack(_int(p.get("committed_leader_epoch", -1)))
            string(out, nullable_text(p.get("metadata")))
            out += INT16.pack(error_code(p.get("error_code")))
            if flexible:
                out.append(0)
        if flexible:
            out.append(0)


# ---------------------------------------------------------- Heartbeat, LeaveGroup, SyncGroup


def _throttle_and_error(out: bytearray, body: dict[str, Any], throttled: bool) -> None:
    """The classic group replies' head: the throttle time (from the version that has it) and
    the error code."""
    if throttled:
        out += _THROTTLE_ERROR.pack(_int(body.get("throttle_time")),
                                    error_code(body.get("error_code")))
    else:
        out += INT16.pack(error_code(body.get("error_code")))


def heartbeat(out: bytearray, body: dict[str, Any], version: int) -> None:
    _throttle_and_error(out, body, version >= 1)
    if version >= 4:
        out.append(0)


def leave_group(out: bytearray, body: dict[str, Any], version: int) -> None:
    """v0 is an error code; v1 adds the throttle time, v3 members, v4 is flexible."""
    flexible = version >= 4
    string, _, array_length = _writers(flexible)
    _throttle_and_error(out, body, version >= 1)
    if version >= 3:
        members = body.get("members") or []
        array_length(out, len(members))
        for x in members:
            x = x or {}
            string(out, text(x.get("member_id")))
            string(out, nullable_text(x.get("group_instance_id")))
            out += INT16.pack(error_code(x.get("error_code")))
            if flexible:
                out.append(0)
    if flexible:
        out.append(0)


def sync_group(out: bytearray, body: dict[str, Any], version: int) -> None:
    """v1 adds the throttle time, v4 is flexible, v5 names the protocol."""
    flexible = version >= 4
    string, bytes_, _ = _writers(flexible)
    _throttle_and_error(out, body, version >= 1)
    if version >= 5:
        string(out, nullable_text(body.get("protocol_type")))
        string(out, nullable_text(body.get("protocol_name")))
    bytes_(out, blob(body.get("assignment")))
    if flexible:
        out.append(0)


# ------------------------------------------------------------------------------- JoinGroup


def join_group(out: bytearray, body: dict[str, Any], version: int) -> None:
    """v2 adds the throttle time, v5 members' instance ids, v6 is flexible, v7 the protocol
    type (and a nullable protocol name), v9 ``skip_assignment`` (KIP-814)."""
    flexible = version >= 6
    string, bytes_, array_length = _writers(flexible)
    _throttle_and_error(out, body, version >= 2)
    out += INT32.pack(_int(body.get("generation_id", -1)))
    if version >= 7:
        string(out, nullable_text(body.get("protocol_type")))
        string(out, nullable_text(body.get("protocol_name")))
    else:
        string(out, text(body.get("protocol_name")))
    string(out, text(body.get("leader")))
    if version >= 9:
        out.append(1 if body.get("skip_assignment", False) else 0)
    string(out, text(body.get("member_id")))
    members = body.get("members") or []
    array_length(out, len(members))
    for x in members:
        x = x or {}
        string(out, text(x.get("member_id")))
        if version >= 5:
            string(out, nullable_text(x.get("group_instance_id")))
        bytes_(out, blob(x.get("metadata")))
        if flexible:
            out.append(0)
    if flexible:
        out.append(0)


# ------------------------------------------------------------------ ConsumerGroupHeartbeat


def consumer_group_heartbeat(out: bytearray, body: dict[str, Any], version: int) -> None:
    """KIP-848's heartbeat reply (always flexible; v0 and v1 are the same shape)."""
    out += _THROTTLE_ERROR.pack(_int(body.get("throttle_time")),
                                error_code(body.get("error_code")))
    put_compact_string(out, nullable_text(body.get("error_message")))
    put_compact_string(out, nullable_text(body.get("member_id")))
    out += _EPOCH_INTERVAL.pack(_int(body.get("member_epoch")),
                                _int(body.get("heartbeat_interval")))
    assignment = body.get("assignment")
    if assignment is None:
        out.append(0xFF)  # a null struct (KIP-893)
    else:
        out.append(1)
        owned = assignment.get("topic_partitions") or []
        put_compact_array_length(out, len(owned))
        for tp in owned:
            tp = tp or {}
            topic_id = tp.get("topic_id")
            out += topic_id.bytes if isinstance(topic_id, uuid.UUID) else _ZERO_UUID
            _int32s(out, tp.get("partitions"), True)
            out.append(0)
        out.append(0)
    out.append(0)


# By API key: the responses encoded here rather than by kio (every version the table serves).
ENCODERS: dict[int, Encoder] = {
    8: offset_commit,
    9: offset_fetch,
    11: join_group,
    12: heartbeat,
    13: leave_group,
    14: sync_group,
    68: consumer_group_heartbeat,
}
