"""KIP-932's share-offset admin APIs on the wire: DescribeShareGroupOffsets (v0-v1, many groups
per request: decoded to one pure request per group, as OffsetFetch is), AlterShareGroupOffsets
(v0) and DeleteShareGroupOffsets (v0). Topics travel by name; the replies add the topic's UUID.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.wire.ids import kafka_error, topic_uuid


def _uuid(topic_id: str | None):
    return None if topic_id is None else topic_uuid(topic_id)


def describe_offsets_requests(body: dict) -> list[m.DescribeShareGroupOffsetsRequest]:
    """One pure request per group the wire request names (``topics`` None: every
    share-partition the group has state for). The gateway sets ``log_end_offset``."""
    return [m.DescribeShareGroupOffsetsRequest(
        group_id=g["group_id"],
        topics=None if g.get("topics") is None else [
            m.ShareOffsetsTopic(t["topic_name"], list(t.get("partitions", [])))
            for t in g["topics"]])
        for g in body.get("groups", [])]


def describe_offsets_response(replies: list[m.DescribeShareGroupOffsetsResponse]) -> dict:
    return {"throttle_time": 0, "groups": [{
        "group_id": r.group_id,
        "error_code": kafka_error(r.error_code),
        "error_message": r.error_message,
        "topics": [{"topic_name": t.topic_name, "topic_id": _uuid(t.topic_id), "partitions": [{
            "partition_index": p.partition, "start_offset": p.start_offset,
            "leader_epoch": p.leader_epoch, "lag": p.lag,
            "error_code": kafka_error(p.error_code), "error_message": p.error_message,
        } for p in t.partitions]} for t in r.topics],
    } for r in replies]}


def alter_offsets_request(body: dict) -> m.AlterShareGroupOffsetsRequest:
    return m.AlterShareGroupOffsetsRequest(
        group_id=body["group_id"],
        topics=[m.AlterShareGroupOffsetsTopic(t["topic_name"], [
            m.AlterShareGroupOffsetsPartition(p["partition_index"], p["start_offset"])
            for p in t.get("partitions", [])]) for t in body.get("topics", [])])


def alter_offsets_response(resp: m.AlterShareGroupOffsetsResponse) -> dict:
    return {
        "throttle_time": 0,
        "error_code": kafka_error(resp.error_code),
        "error_message": resp.error_message,
        "responses": [{"topic_name": t.topic_name, "topic_id": _uuid(t.topic_id), "partitions": [
            {"partition_index": p.partition, "error_code": kafka_error(p.error_code),
             "error_message": p.error_message} for p in t.partitions]} for t in resp.topics],
    }


def delete_offsets_request(body: dict) -> m.DeleteShareGroupOffsetsRequest:
    return m.DeleteShareGroupOffsetsRequest(
        group_id=body["group_id"], topic_names=[t["topic_name"] for t in body.get("topics", [])])


def delete_offsets_response(resp: m.DeleteShareGroupOffsetsResponse) -> dict:
    return {
        "throttle_time": 0,
        "error_code": kafka_error(resp.error_code),
        "error_message": resp.error_message,
        "responses": [{"topic_name": t.topic_name, "topic_id": _uuid(t.topic_id),
                       "error_code": kafka_error(t.error_code), "error_message": t.error_message}
                      for t in resp.topics],
    }
