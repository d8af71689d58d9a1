"""StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89) on the wire: kio's plain bodies to
the pure streams messages and back (``protocol.wire.entities`` builds the versioned entity,
keeping the fields that version has: a reply is written once, for v0 and v1 alike, but for the
heartbeat's recovery lag, whose v0 and v1 fields share kio's name).
Topics travel by name in both APIs, so no topic index is needed. The ``topics_to_create`` of a
heartbeat reply stays off the wire: the gateway acts on it."""

from __future__ import annotations

from protocol.group_states import kafka_state_name
from protocol.streams import messages as sm
from protocol.streams.records import (
    CopartitionGroup,
    Endpoint,
    KeyValue,
    Subtopology,
    TopicInfo,
)
from protocol.wire.ids import kafka_error


def _kv(items) -> tuple[KeyValue, ...]:
    return tuple(KeyValue(x["key"], x["value"]) for x in items or ())


def _topic_info(t: dict) -> TopicInfo:
    return TopicInfo(t["name"], t.get("partitions", 0), t.get("replication_factor", 0),
                     _kv(t.get("topic_configs")))


def _subtopology(s: dict) -> Subtopology:
    return Subtopology(
        s["subtopology_id"], tuple(s.get("source_topics") or ()),
        tuple(s.get("source_topic_regex") or ()),
        tuple(_topic_info(t) for t in s.get("state_changelog_topics") or ()),
        tuple(s.get("repartition_sink_topics") or ()),
        tuple(_topic_info(t) for t in s.get("repartition_source_topics") or ()),
        tuple(CopartitionGroup(tuple(g.get("source_topics") or ()),
                               tuple(g.get("source_topic_regex") or ()),
                               tuple(g.get("repartition_source_topics") or ()))
              for g in s.get("copartition_groups") or ()))


def _tasks(items) -> list[sm.TaskIds] | None:
    if items is None:
        return None
    return [sm.TaskIds(t["subtopology_id"], list(t.get("partitions") or ())) for t in items]


def _offsets(items) -> list[sm.TaskOffset] | None:
    if items is None:
        return None
    return [sm.TaskOffset(o["subtopology_id"], o["partition"], o["offset"]) for o in items]


def heartbeat_request(body: dict, client_id: str = "", client_host: str = "",
                      version: int = 0) -> sm.StreamsGroupHeartbeatRequest:
    topology = body.get("topology")
    endpoint = body.get("user_endpoint")
    tags = body.get("client_tags")
    return sm.StreamsGroupHeartbeatRequest(
        group_id=body["group_id"], member_id=body.get("member_id") or "",
        member_epoch=body.get("member_epoch", 0),
        endpoint_information_epoch=body.get("endpoint_information_epoch", 0),
        instance_id=body.get("instance_id"), rack_id=body.get("rack_id"),
        rebalance_timeout_ms=body.get("rebalance_timeout", -1),
        topology=None if topology is None else sm.StreamsTopology(
            topology["epoch"], tuple(_subtopology(s) for s in topology.get("subtopologies")
                                     or ())),
        active_tasks=_tasks(body.get("active_tasks")),
        standby_tasks=_tasks(body.get("standby_tasks")),
        warmup_tasks=_tasks(body.get("warmup_tasks")),
        process_id=body.get("process_id"),
        user_endpoint=None if endpoint is None else Endpoint(endpoint["host"], endpoint["port"]),
        client_tags=None if tags is None else list(_kv(tags)),
        task_offsets=_offsets(body.get("task_offsets")),
        task_end_offsets=_offsets(body.get("task_end_offsets")),
        shutdown_application=bool(body.get("shutdown_application")),
        client_id=client_id or "", client_host=client_host, api_version=version)


def _task_list(ts) -> list[dict] | None:
    if ts is None:
        return None
    return [{"subtopology_id": t.subtopology_id, "partitions": list(t.partitions)} for t in ts]


def _endpoint(e: Endpoint | None) -> dict | None:
    return None if e is None else {"host": e.host, "port": e.port}


def _tps(parts: dict[str, list[int]]) -> list[dict]:
    return [{"topic": n, "partitions": list(ps)} for n, ps in parts.items()]


def heartbeat_response(resp: sm.StreamsGroupHeartbeatResponse, version: int = 1) -> dict:
    """The reply's body at ``version``: v0's recovery lag is Kafka's "legacy" int32, which
    Kafka 4.4 never fills (0), v1's the int64 ``acceptable_recovery_lag``. Kafka always sends
    a status list (empty: no status), never null."""
    ep = resp.partitions_by_user_endpoint
    return {
        "throttle_time": resp.throttle_time_ms,
        "error_code": kafka_error(resp.error_code),
        "error_message": resp.error_message,
        "member_id": resp.member_id,
        "member_epoch": resp.member_epoch,
        "heartbeat_interval": resp.heartbeat_interval_ms,
        "acceptable_recovery_lag": resp.acceptable_recovery_lag if version >= 1 else 0,
        "task_offset_interval": resp.task_offset_interval_ms,
        "status": [{"status_code": s.status_code, "status_detail": s.status_detail}
                   for s in resp.status or ()],
        "active_tasks": _task_list(resp.active_tasks),
        "standby_tasks": _task_list(resp.standby_tasks),
        "warmup_tasks": _task_list(resp.warmup_tasks),
        "topology_description_required": resp.topology_description_required,
        "endpoint_information_epoch": resp.endpoint_information_epoch,
        "partitions_by_user_endpoint": None if ep is None else [
            {"user_endpoint": _endpoint(e.user_endpoint),
             "active_partitions": _tps(e.active_partitions),
             "standby_partitions": _tps(e.standby_partitions)} for e in ep],
    }


def describe_request(body: dict) -> sm.StreamsGroupDescribeRequest:
    return sm.StreamsGroupDescribeRequest(
        group_ids=list(body.get("group_ids", [])),
        include_authorized_operations=bool(body.get("include_authorized_operations")),
        include_topology_description=bool(body.get("include_topology_description")))


def _info(t: TopicInfo) -> dict:
    return {"name": t.name, "partitions": t.partitions,
            "replication_factor": t.replication_factor,
            "topic_configs": [{"key": kv.key, "value": kv.value} for kv in t.topic_configs]}


def _assignment(a: sm.StreamsAssignment) -> dict:
    return {"active_tasks": _task_list(a.active_tasks),
            "standby_tasks": _task_list(a.standby_tasks),
            "warmup_tasks": _task_list(a.warmup_tasks)}


def _offs(os_: list[sm.TaskOffset]) -> list[dict]:
    return [{"subtopology_id": o.subtopology_id, "partition": o.partition, "offset": o.offset}
            for o in os_]


def _described(g: sm.StreamsDescribedGroup) -> dict:
    t = g.topology
    return {
        "error_code": kafka_error(g.error_code), "error_message": g.error_message,
        "group_id": g.group_id,
        "group_state": kafka_state_name(g.group_state) if g.group_state else "",
        "group_epoch": g.group_epoch, "assignment_epoch": g.assignment_epoch,
        "topology": None if t is None else {"epoch": t.epoch, "subtopologies": [
            {"subtopology_id": s.subtopology_id, "source_topics": list(s.source_topics),
             "repartition_sink_topics": list(s.repartition_sink_topics),
             "state_changelog_topics": [_info(x) for x in s.state_changelog_topics],
             "repartition_source_topics": [_info(x) for x in s.repartition_source_topics]}
            for s in t.subtopologies]},
        "members": [{
            "member_id": x.member_id, "member_epoch": x.member_epoch,
            "instance_id": x.instance_id, "rack_id": x.rack_id, "client_id": x.client_id,
            "client_host": x.client_host, "topology_epoch": x.topology_epoch,
            "process_id": x.process_id, "user_endpoint": _endpoint(x.user_endpoint),
            "client_tags": [{"key": kv.key, "value": kv.value} for kv in x.client_tags],
            "task_offsets": _offs(x.task_offsets), "task_end_offsets": _offs(x.task_end_offsets),
            "assignment": _assignment(x.assignment),
            "target_assignment": _assignment(x.target_assignment),
            "is_classic": x.is_classic} for x in g.members],
        "authorized_operations": g.authorized_operations,
        "topology_description": None,
        "topology_description_status": g.topology_description_status,
        "assignor_name": g.assignor_name,
    }


def describe_response(resp: sm.StreamsGroupDescribeResponse) -> dict:
    return {"throttle_time": resp.throttle_time_ms,
            "groups": [_described(g) for g in resp.groups]}
