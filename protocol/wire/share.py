"""KIP-932 on the wire: ShareGroupHeartbeat (v1), ShareGroupDescribe (v1), ShareFetch and
ShareAcknowledge (v1-v2), between kio's plain bodies and the pure share messages.

Topics travel by UUID on the wire and by Cohort's string id inside (``wire.ids``). What the
pure messages leave to the entry point is done by the gateway, not here: the share session
(``wire.share_session``), the stream's end each fetched partition may be acquired up to, and
the record batches of the acquired offsets (``records_of``: the ``SyntheticStream``'s, or an
upstream's).
A decoded ShareFetch therefore names only the partitions the request itself named (with their
acknowledgements); the gateway widens it to the session's partitions.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import TYPE_CHECKING

from protocol import messages as m
from protocol.group_states import kafka_state_name
from protocol.wire import consumer
from protocol.wire.ids import kafka_client_host, kafka_error, topic_uuid

if TYPE_CHECKING:  # a type only: the API table imports this module
    from protocol.wire.topics import TopicIndex

# (topic_id, partition, acquired ranges) -> the record batch(es) holding those offsets.
RecordsOf = Callable[[str, int, "list[m.AcquiredRecords]"], bytes]
NO_LEADER_EPOCH = 0


# ------------------------------------------------------------------ ShareGroupHeartbeat


def heartbeat_request(body: dict, client_id: str = "",
                      client_host: str = "") -> m.ShareGroupHeartbeatRequest:
    names = body.get("subscribed_topic_names")
    return m.ShareGroupHeartbeatRequest(
        group_id=body["group_id"],
        member_id=body.get("member_id") or "",
        member_epoch=body.get("member_epoch", 0),
        rack_id=body.get("rack_id"),
        subscribed_topic_names=None if names is None else list(names),
        client_id=client_id or "",
        client_host=kafka_client_host(client_host),
    )


def heartbeat_response(resp: m.ShareGroupHeartbeatResponse) -> dict:
    """KIP-848's heartbeat reply shape (the fields are the same), with the share assignment."""
    body = consumer.heartbeat_response(dataclasses.replace(resp, assignment=None))
    if resp.assignment is not None:
        body["assignment"] = {"topic_partitions": [
            {"topic_id": topic_uuid(tp.topic_id), "partitions": list(tp.partitions)}
            for tp in resp.assignment.topic_partitions
        ]}
    return body


# ------------------------------------------------------------------- ShareGroupDescribe


def describe_request(body: dict) -> m.ShareGroupDescribeRequest:
    return m.ShareGroupDescribeRequest(
        group_ids=list(body.get("group_ids", [])),
        include_authorized_operations=bool(body.get("include_authorized_operations")))


def describe_response(resp: m.ShareGroupDescribeResponse) -> dict:
    return {"throttle_time": 0, "groups": [_described(g) for g in resp.groups]}


def _described(g: m.ShareDescribedGroup) -> dict:
    if g.error_code:
        return consumer.refused_entry(g)
    return {
        "error_code": kafka_error(g.error_code),
        "error_message": g.error_message,
        "group_id": g.group_id,
        "group_state": kafka_state_name(g.group_state) if g.group_state else "",
        "group_epoch": g.group_epoch,
        "assignment_epoch": g.assignment_epoch,
        "assignor_name": g.assignor_name,
        "members": [{
            "member_id": x.member_id,
            "rack_id": x.rack_id,
            "member_epoch": x.member_epoch,
            "client_id": x.client_id,
            "client_host": x.client_host,
            "subscribed_topic_names": list(x.subscribed_topic_names),
            "assignment": {"topic_partitions": [
                {"topic_id": topic_uuid(tp.topic_id), "topic_name": tp.topic_name,
                 "partitions": list(tp.partitions)}
                for tp in x.assignment.topic_partitions
            ]},
        } for x in g.members],
        "authorized_operations": g.authorized_operations,
    }


# --------------------------------------------------------- ShareFetch / ShareAcknowledge


def _acks(batches: list[dict]) -> list[m.AcknowledgementBatch]:
    return [m.AcknowledgementBatch(b["first_offset"], b["last_offset"],
                                   list(b.get("acknowledge_types", [])))
            for b in batches]


def _topic_ids(index: TopicIndex) -> Callable[[object], str]:
    """``index.topic_id_of``, remembered for one request: a request may name the same topic
    thousands of times (issue 30's fuzzer repeated entries), and an unknown id's spelling is
    worked out once, not once an entry."""
    return functools.cache(index.topic_id_of)  # type: ignore[return-value]


def fetch_request(body: dict, index: TopicIndex) -> m.ShareFetchRequest:
    """The pure ShareFetch of the partitions this request names (the session adds the rest);
    every named partition is fetched (``fetch=True``) and carries its acknowledgements."""
    topic_id = _topic_ids(index)
    return m.ShareFetchRequest(
        group_id=body.get("group_id") or "",
        member_id=body.get("member_id") or "",
        topics=[m.ShareFetchTopic(topic_id(t["topic_id"]), [
            m.ShareFetchPartition(p["partition_index"],
                                  _acks(p.get("acknowledgement_batches", [])))
            for p in t.get("partitions", [])
        ]) for t in body.get("topics", [])],
        max_records=body.get("max_records", 0) or m.ShareFetchRequest.max_records,
        acquire_mode=body.get("share_acquire_mode", 0),
    )


def forgotten(body: dict, index: TopicIndex) -> list[tuple[str, int]]:
    """The (topic id, partition) pairs a ShareFetch removes from its session."""
    topic_id = _topic_ids(index)
    pairs: list[tuple[str, int]] = []
    for t in body.get("forgotten_topics_data", []):
        tid = topic_id(t["topic_id"])
        pairs.extend((tid, p) for p in t.get("partitions", []))
    return pairs


def _leader(node_id: int) -> dict:
    return {"leader_id": node_id, "leader_epoch": NO_LEADER_EPOCH}


def _reply(resp: m.ShareFetchResponse | m.ShareAcknowledgeResponse,
           partition: Callable[[str, object], dict], node_id: int,
           endpoints: list[dict] | None) -> dict:
    """The envelope ShareFetch and ShareAcknowledge replies share; ``partition(topic_id, p)``
    writes a partition's own fields."""
    return {
        "throttle_time": 0,
        "error_code": kafka_error(resp.error_code),
        "error_message": resp.error_message,
        "acquisition_lock_timeout": resp.acquisition_lock_timeout_ms,
        "responses": [{"topic_id": topic_uuid(t.topic_id), "partitions": [{
            "partition_index": p.partition,
            "error_code": kafka_error(p.error_code),
            "error_message": p.error_message,
            "current_leader": _leader(node_id),
            **partition(t.topic_id, p),
        } for p in t.partitions]} for t in resp.topics],
        "node_endpoints": endpoints or [],
    }


def fetch_response(resp: m.ShareFetchResponse, records_of: RecordsOf, node_id: int,
                   endpoints: list[dict] | None = None) -> dict:
    """The wire reply: each partition's acquired ranges and the records they cover."""
    def partition(topic_id: str, p: m.ShareFetchResponsePartition) -> dict:
        return {
            "acknowledge_error_code": kafka_error(p.acknowledge_error_code),
            "acknowledge_error_message": p.acknowledge_error_message,
            "records": records_of(topic_id, p.partition, p.acquired) if p.acquired else b"",
            "acquired_records": [{"first_offset": a.first_offset, "last_offset": a.last_offset,
                                  "delivery_count": a.delivery_count} for a in p.acquired],
        }

    return _reply(resp, partition, node_id, endpoints)


def acknowledge_request(body: dict, index: TopicIndex) -> m.ShareAcknowledgeRequest:
    topic_id = _topic_ids(index)
    return m.ShareAcknowledgeRequest(
        group_id=body.get("group_id") or "",
        member_id=body.get("member_id") or "",
        topics=[m.ShareAcknowledgeTopic(topic_id(t["topic_id"]), [
            m.ShareAcknowledgePartition(p["partition_index"],
                                        _acks(p.get("acknowledgement_batches", [])))
            for p in t.get("partitions", [])
        ]) for t in body.get("topics", [])],
    )


def acknowledge_response(resp: m.ShareAcknowledgeResponse, node_id: int,
                         endpoints: list[dict] | None = None) -> dict:
    return _reply(resp, lambda topic_id, p: {}, node_id, endpoints)


def refused(error_code: int, message: str) -> dict:
    """A ShareFetch / ShareAcknowledge answered with one top-level error (a session error,
    or a request the gateway cannot route): nothing acquired, nothing acknowledged."""
    return {"throttle_time": 0, "error_code": error_code, "error_message": message,
            "acquisition_lock_timeout": 0, "responses": [], "node_endpoints": []}
