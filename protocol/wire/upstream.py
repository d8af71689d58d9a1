"""What Cohort reads and rewrites of the frames it relays to an upstream Kafka cluster (pure).

In front of an upstream (DESIGN.md, "In front of a Kafka-compatible cluster") Cohort relays
the data and topic APIs frame for frame: it reads a request's header, never its body, and
sends the bytes on. Only replies that carry broker addresses are decoded and written again,
so that a client only ever learns Cohort's listeners (Kroxylicious's port-per-broker scheme):
Metadata's and DescribeCluster's brokers, FindCoordinator's host and port. Everything else,
Produce's records and Fetch's batches included, passes through untouched.

Produce (v10+) and Fetch (v16+) replies may carry a tagged ``NodeEndpoints`` list after a
leader change (KIP-951); Cohort advertises versions below those (``RELAY_CAPS``) rather than
decode every Fetch reply, so such a reply cannot reach a client.

This module also writes the few requests Cohort itself sends upstream (ApiVersions, Metadata,
the topic admin APIs) and reads their replies, through kio like the rest of ``wire/``.
"""

from __future__ import annotations

import functools
import io
import struct
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from protocol.metadata import TopicMetadata
from protocol.wire.codec import (
    EncodedBody,
    WireError,
    _request_schema,
    _response_schema,
    _skip_tagged_fields,
    _uvarint,
    _writer,
    encode_body,
    read_header,
)
from protocol.wire.entities import build, plain
from protocol.wire.ids import uuid_topic_id
from protocol.wire.versions import api_versions_body

METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER = 3, 10, 60
PRODUCE, FETCH, API_VERSIONS = 0, 1, 18
# FindCoordinator's key type for a transactional id (0 is a group, 2 a share-partition).
TRANSACTION_KEY = 1
# The APIs whose replies name brokers: decoded and rewritten, every other relayed as it is.
ADDRESS_APIS = frozenset({METADATA, FIND_COORDINATOR, DESCRIBE_CLUSTER})
# The highest version Cohort relays of an API whose newer replies may name brokers in a
# tagged field it would otherwise have to decode (KIP-951's NodeEndpoints), and of the APIs
# whose replies it rewrites (what kio can read and write).
RELAY_CAPS: dict[int, int] = {PRODUCE: 9, FETCH: 15, METADATA: 12, FIND_COORDINATOR: 6,
                              DESCRIBE_CLUSTER: 1}

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

# A listener's address for an upstream node id: (host, port), or None when Cohort presents
# no listener for it (the node is left out of the reply).
ListenerOf = Callable[[int], "tuple[str, int] | None"]


class UpstreamReplyError(Exception):
    """An upstream reply Cohort cannot read: the relay fails like a broken connection."""


# ------------------------------------------------------------------------ requests out


def encode_request(api_key: int, version: int, correlation_id: int, client_id: str | None,
                   body: Mapping[str, Any]) -> bytes:
    """A framed request of Cohort's own (header v1, or v2 when the version is flexible)."""
    schema = _request_schema(api_key, version)
    buf = io.BytesIO()
    buf.write(struct.pack(">hhi", api_key, version, correlation_id))
    if client_id is None:
        buf.write(_INT16.pack(-1))
    else:
        raw = client_id.encode()
        buf.write(_INT16.pack(len(raw)) + raw)
    if schema.__header_schema__.__flexible__:
        buf.write(b"\x00")
    _writer(schema)(buf, build(schema, dict(body)))
    data = buf.getvalue()
    return _INT32.pack(len(data)) + data


def decode_request_body(frame: bytes) -> dict[str, Any]:
    """A request's body (``frame`` without its size prefix) as plain values, through kio: for
    the relayed APIs Cohort has no row of its own for (their ACL checks)."""
    from kio.serial import entity_reader

    header, offset = read_header(frame)
    schema = _request_schema(header.api_key, header.api_version)
    if schema.__flexible__:
        offset = _skip_tags(frame, offset)
    return plain(entity_reader(schema)(frame, offset)[0])


def correlation_of_reply(frame: bytes) -> int:
    """The correlation id of a reply frame (its size prefix excluded)."""
    return _INT32.unpack_from(frame, 0)[0]


def decode_reply(api_key: int, version: int, frame: bytes) -> dict[str, Any]:
    """A reply frame (its size prefix excluded) as plain values."""
    from kio.serial import entity_reader

    schema = _response_schema(api_key, version)
    offset = 4
    if schema.__header_schema__.__flexible__ and api_key != API_VERSIONS:
        offset = _skip_tags(frame, offset)
    try:
        return plain(entity_reader(schema)(frame, offset)[0])
    except Exception as e:
        raise UpstreamReplyError(f"cannot read the upstream's API {api_key} v{version} reply: "
                                 f"{e}") from None


def encode_reply(api_key: int, version: int, correlation_id: int, body: Mapping[str, Any]
                 ) -> bytes:
    """A reply frame (size prefix excluded) from plain values."""
    schema = _response_schema(api_key, version)
    buf = io.BytesIO()
    buf.write(_INT32.pack(correlation_id))
    if schema.__header_schema__.__flexible__ and api_key != API_VERSIONS:
        buf.write(b"\x00")
    _writer(schema)(buf, build(schema, dict(body)))
    return buf.getvalue()


def _skip_tags(data: bytes, offset: int) -> int:
    """Past a tagged-field section (the codec's reader; a cut one is the upstream's fault)."""
    try:
        return _skip_tagged_fields(data, offset)
    except WireError as e:
        raise UpstreamReplyError(f"a frame's tagged fields are cut short: {e}") from None


# ------------------------------------------------------------------ relayed requests


def expects_reply(frame: bytes, version: int, body_offset: int | None = None) -> bool:
    """False for a Produce with ``acks=0`` (Kafka answers nothing), else True; ``frame`` is
    a request without its size prefix, ``body_offset`` where its header ends (read here when
    not given). Reads the one field before ``acks``."""
    if _INT16.unpack_from(frame, 0)[0] != PRODUCE:
        return True
    offset = read_header(frame)[1] if body_offset is None else body_offset
    flexible = version >= 9
    if flexible:
        offset = _skip_tags(frame, offset)
        n, offset = _uvarint(frame, offset)  # compact nullable string: length + 1
        offset += max(n - 1, 0)
    else:
        (n,) = _INT16.unpack_from(frame, offset)
        offset += 2 + max(n, 0)
    (acks,) = _INT16.unpack_from(frame, offset)
    return acks != 0


# -------------------------------------------------------------------- address rewrite


def rewrite_addresses(api_key: int, version: int, frame: bytes, listener_of: ListenerOf,
                      extra_brokers: Iterable[tuple[int, str, int]] = ()) -> bytes:
    """``frame`` (a reply, size prefix excluded) naming Cohort's listeners instead of the
    upstream's brokers; a node without a listener is left out of broker lists (and a
    coordinator without one answered COORDINATOR_NOT_AVAILABLE). ``extra_brokers``: Cohort's
    own brokers (its coordinators) added to Metadata's list."""
    if api_key not in ADDRESS_APIS:
        return frame
    body = rewrite_body(api_key, version, decode_reply(api_key, version, frame), listener_of,
                        extra_brokers)
    return encode_reply(api_key, version, correlation_of_reply(frame), body)


def rewrite_body(api_key: int, version: int, body: dict, listener_of: ListenerOf,
                 extra_brokers: Iterable[tuple[int, str, int]] = ()) -> dict:
    """``rewrite_addresses`` on a decoded reply (changed in place, and returned)."""
    if api_key == METADATA:
        body["brokers"] = _brokers(body.get("brokers", []), "node_id", listener_of)
        body["brokers"] += [{"node_id": n, "host": h, "port": p, "rack": None}
                            for n, h, p in extra_brokers]
    elif api_key == DESCRIBE_CLUSTER:
        body["brokers"] = _brokers(body.get("brokers", []), "broker_id", listener_of)
    elif api_key == FIND_COORDINATOR:
        _rewrite_coordinators(body, version, listener_of)
    return body


def _brokers(brokers: list[dict], id_field: str, listener_of: ListenerOf) -> list[dict]:
    out = []
    for b in brokers:
        where = listener_of(b[id_field])
        if where is not None:
            out.append({**b, "host": where[0], "port": where[1]})
    return out


_COORDINATOR_NOT_AVAILABLE = 15


def _rewrite_coordinators(body: dict, version: int, listener_of: ListenerOf) -> None:
    entries = body.get("coordinators") if version >= 4 else [body]
    for c in entries or []:
        if c.get("error_code", 0) != 0 or c.get("node_id", -1) < 0:
            continue
        where = listener_of(c["node_id"])
        if where is None:
            c.update(error_code=_COORDINATOR_NOT_AVAILABLE, node_id=-1, host="", port=-1,
                     error_message="The coordinator's broker has no Cohort listener yet.")
        else:
            c["host"], c["port"] = where


# -------------------------------------------------------------- exactly-once's commits

TXN_OFFSET_COMMIT = 28
# TxnOffsetCommit's versions Cohort answers (advertised so that transactional producers work:
# librdkafka turns transactions off when a broker lacks the API).
TXN_OFFSET_COMMIT_VERSIONS = (0, 3)
UNSUPPORTED_VERSION = 35


def with_txn_offset_commit(api_versions: dict) -> dict:
    """ApiVersions' reply body with TxnOffsetCommit listed (what a listener in front of an
    upstream advertises, and refuses: ``txn_offset_commit_refusal``)."""
    keys = [k for k in api_versions["api_keys"] if k["api_key"] != TXN_OFFSET_COMMIT]
    lo, hi = TXN_OFFSET_COMMIT_VERSIONS
    keys.append({"api_key": TXN_OFFSET_COMMIT, "min_version": lo, "max_version": hi})
    return {**api_versions, "api_keys": sorted(keys, key=lambda k: k["api_key"])}


def txn_offset_commit_refusal(frame: bytes) -> bytes:
    """The reply to a TxnOffsetCommit (``frame`` without its size prefix, framed reply out):
    every partition refused with UNSUPPORTED_VERSION, nothing committed.

    In front of an upstream, a transaction's markers are written by the upstream's transaction
    coordinator into the upstream's own ``__consumer_offsets``; Cohort, which keeps the
    group's offsets, never sees them, so it could not tell a committed transaction's offsets
    from an aborted one's. It refuses instead of guessing: the producer aborts the
    transaction (its records are never read committed), and offsets are committed outside
    transactions (docs/decisions.md, "Exactly-once in front of an upstream").
    """
    header, _ = read_header(frame)
    body = decode_request_body(frame)
    reply = {"throttle_time": 0, "topics": [
        {"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": UNSUPPORTED_VERSION}
            for p in t.get("partitions", [])]}
        for t in body.get("topics", [])]}
    data = encode_reply(TXN_OFFSET_COMMIT, header.api_version, header.correlation_id, reply)
    return _INT32.pack(len(data)) + data


# ------------------------------------------------------------------------- versions


def relayed_versions(upstream: Mapping[int, tuple[int, int]], relayed: Iterable[int],
                     own: Mapping[int, tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """What a Cohort listener in front of an upstream advertises: its own APIs at its own
    versions, and each relayed API at the versions both the upstream and Cohort's relay take
    (``RELAY_CAPS``), and within Cohort's own range too when Cohort also serves it (it may
    decode such a request to decide where it goes); a relayed API the upstream lacks, or whose
    ranges do not meet, is left out."""
    out = dict(own)
    for key in relayed:
        if key not in upstream:
            out.pop(key, None)
            continue
        lo, hi = upstream[key]
        hi = min(hi, RELAY_CAPS.get(key, hi))
        if key in own and key not in (PRODUCE, FETCH):
            lo, hi = max(lo, own[key][0]), min(hi, own[key][1])
        if lo <= hi:
            out[key] = (lo, hi)
        else:
            out.pop(key, None)
    return out


# -------------------------------------------------------------------------- topics


def metadata_topics(body: Mapping[str, Any]) -> list[TopicMetadata]:
    """The topics of an upstream Metadata reply, as Cohort's image holds them (internal
    topics and topics in error left out); partition racks from the leaders' racks."""
    rack_of = {b["node_id"]: b.get("rack") for b in body.get("brokers", [])}
    out = []
    for t in body.get("topics", []):
        if t.get("error_code", 0) != 0 or t.get("is_internal") or not t.get("name"):
            continue
        parts = sorted(t.get("partitions", []), key=lambda p: p["partition_index"])
        if not parts or [p["partition_index"] for p in parts] != list(range(len(parts))):
            continue  # partitions still being created: seen on the next poll
        racks = [{rack_of.get(n) for n in p.get("replica_nodes") or [p.get("leader_id")]}
                 for p in parts]
        partition_racks = racks if all(None not in r for r in racks) else None
        out.append(TopicMetadata(uuid_topic_id(t.get("topic_id")), t["name"], len(parts),
                                 partition_racks))
    return out



@functools.lru_cache(maxsize=32)
def versions_reply(version: int, versions: tuple[tuple[int, int, int], ...]) -> EncodedBody:
    """ApiVersions' reply listing ``versions`` ((key, min, max) ...), Cohort's features kept:
    what every Cohort listener in front of an upstream answers. Written once per version and
    list (shared, never changed): written per request it was 10% of a partition's time while
    400 consumers connected to it (py-spy, bench/upstream.py --stable)."""
    body = api_versions_body()
    body["api_keys"] = [{"api_key": k, "min_version": lo, "max_version": hi}
                        for k, lo, hi in versions]
    return encode_body(API_VERSIONS, version, body)
