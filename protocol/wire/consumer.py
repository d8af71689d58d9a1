"""KIP-848 on the wire: ConsumerGroupHeartbeat (v0-v1) and ConsumerGroupDescribe (v0-v1).

The wire names topics by UUID, Cohort by its string id (the same id, ``wire.ids``); the
client header's id and the peer's address become the member's ``client_id`` and
``client_host``, which describe shows. The reply's assignment is what the member may own now:
Cohort's pending partitions (still being revoked elsewhere) are not sent, as Kafka sends them
only once they are free.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol import messages as m
from protocol.group_states import kafka_state_name
from protocol.wire.ids import kafka_client_host, kafka_error, topic_uuid

if TYPE_CHECKING:  # a type only: the API table imports this module, the shard the table
    from protocol.wire.topics import TopicIndex

# ConsumerGroupDescribe v1's member_type: the member speaks the classic or the new protocol.
MEMBER_TYPE_CLASSIC = 0
MEMBER_TYPE_CONSUMER = 1
MEMBER_TYPE_UNKNOWN = -1


def subscription(names: list[str] | None, regex: str | None
                 ) -> tuple[list[str] | None, str | None]:
    """The subscription a heartbeat sets. librdkafka sends both fields, the unused one empty
    (names with regex ``""``, or a regex with names ``[]``): an empty one beside a set one
    means "not this kind", which Cohort spells None (its rules refuse both set at once)."""
    if names is not None and regex is not None:
        if regex == "":
            regex = None
        elif not names:
            names = None
    return names, regex


def heartbeat_request(body: dict, index: TopicIndex, client_id: str,
                      client_host: str) -> m.ConsumerGroupHeartbeatRequest:
    owned = body.get("topic_partitions")
    names, regex = subscription(body.get("subscribed_topic_names"),
                                body.get("subscribed_topic_regex"))
    return m.ConsumerGroupHeartbeatRequest(
        group_id=body["group_id"],
        member_id=body.get("member_id", ""),
        member_epoch=body.get("member_epoch", 0),
        instance_id=body.get("instance_id"),
        rack_id=body.get("rack_id"),
        rebalance_timeout_ms=body.get("rebalance_timeout", -1),
        subscribed_topic_names=names,
        subscribed_topic_regex=regex,
        server_assignor=body.get("server_assignor"),
        topic_partitions=None if owned is None else [
            m.TopicPartitions(index.topic_id_of(tp["topic_id"]), list(tp["partitions"]))
            for tp in owned
        ],
        client_id=client_id or "",
        client_host=kafka_client_host(client_host),
    )


def heartbeat_response(resp: m.ConsumerGroupHeartbeatResponse) -> dict:
    assignment = None
    if resp.assignment is not None:
        assignment = {"topic_partitions": [
            {"topic_id": topic_uuid(tp.topic_id), "partitions": list(tp.partitions)}
            for tp in resp.assignment.assigned_topic_partitions
        ]}
    return {
        "throttle_time": 0,
        "error_code": kafka_error(resp.error_code),
        "error_message": resp.error_message,
        "member_id": resp.member_id,
        "member_epoch": resp.member_epoch,
        "heartbeat_interval": resp.heartbeat_interval_ms,
        "assignment": assignment,
    }


def describe_request(body: dict) -> m.ConsumerGroupDescribeRequest:
    return m.ConsumerGroupDescribeRequest(group_ids=list(body.get("group_ids", [])))


def describe_entry(g: m.DescribedGroup) -> dict:
    if g.error_code:
        return refused_entry(g)
    return {
        "error_code": kafka_error(g.error_code),
        "error_message": g.error_message,
        "group_id": g.group_id,
        "group_state": kafka_state_name(g.group_state) if g.group_state else "",
        "group_epoch": g.group_epoch,
        "assignment_epoch": g.assignment_epoch,
        "assignor_name": g.assignor_name or "",
        "members": [_member(x) for x in g.members],
        "authorized_operations": g.authorized_operations,
    }


def refused_entry(g: m.DescribedGroup | m.ShareDescribedGroup) -> dict:
    """A describe entry that carries an error: the group named and nothing else, as Kafka
    sends it (state "", epochs 0; Cohort's own callers see its ``dead`` and -1)."""
    return {"error_code": kafka_error(g.error_code), "error_message": g.error_message,
            "group_id": g.group_id, "group_state": "", "group_epoch": 0,
            "assignment_epoch": 0, "assignor_name": "", "members": [],
            "authorized_operations": g.authorized_operations}


def describe_response(resp: m.ConsumerGroupDescribeResponse) -> dict:
    return {"throttle_time": 0, "groups": [describe_entry(g) for g in resp.groups]}


def _member(x: m.DescribedMember) -> dict:
    return {
        "member_id": x.member_id,
        "instance_id": x.instance_id,
        "rack_id": x.rack_id,
        "member_epoch": x.member_epoch,
        "client_id": x.client_id,
        "client_host": x.client_host,
        "subscribed_topic_names": list(x.subscribed_topic_names),
        "subscribed_topic_regex": x.subscribed_topic_regex or "",  # Kafka: "" when none
        "assignment": _assignment(x.assignment),
        "target_assignment": _assignment(x.target_assignment),
        "member_type": MEMBER_TYPE_CLASSIC if x.classic else MEMBER_TYPE_CONSUMER,
    }


def _assignment(a: m.DescribedAssignment) -> dict:
    return {"topic_partitions": [
        {"topic_id": topic_uuid(tp.topic_id), "topic_name": tp.topic_name,
         "partitions": list(tp.partitions)}
        for tp in a.topic_partitions
    ]}
