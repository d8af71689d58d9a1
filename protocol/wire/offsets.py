"""Offsets and group listing on the wire: OffsetCommit, OffsetFetch (single and batched
groups), OffsetDelete, DeleteGroups, ListGroups.

Cohort's OffsetCommit reply may carry one request-level error (the coordinator moved, the
member is fenced); Kafka's has none, so that error is given to every partition of the request,
which is how Kafka's coordinator answers such a commit. OffsetFetch from v8 names many groups
at once; Cohort fetches one group per request, so the gateway asks each group's partition and
``fetch_response`` puts the answers back together in the version's shape.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.group_states import kafka_state_name
from protocol.wire.ids import kafka_error

# OffsetFetch names many groups from this version on (KIP-709).
OFFSET_FETCH_BATCHED_SINCE = 8


# --------------------------------------------------------------------------- OffsetCommit


def commit_request(body: dict, version: int = m.OFFSET_COMMIT_MEMBER_EPOCH_VERSION
                   ) -> m.OffsetCommitRequest:
    """The commit as Cohort takes it, with the version the client spoke (Kafka answers by
    it)."""
    return m.OffsetCommitRequest(
        group_id=body["group_id"],
        generation_id_or_member_epoch=body.get("generation_id_or_member_epoch", -1),
        member_id=body.get("member_id", ""),
        group_instance_id=body.get("group_instance_id"),
        retention_time_ms=body.get("retention_time", -1),
        topics=[
            m.OffsetCommitRequestTopic(t["name"], [
                m.OffsetCommitRequestPartition(
                    p["partition_index"], p["committed_offset"],
                    p.get("committed_leader_epoch", -1), p.get("committed_metadata"))
                for p in t["partitions"]
            ])
            for t in body.get("topics", [])
        ],
        api_version=version,
    )


def commit_response(resp: m.OffsetCommitResponse, body: dict) -> dict:
    errors = {(t.name, p.partition_index): p.error_code
              for t in resp.topics for p in t.partitions}
    top = kafka_error(resp.error_code)
    return {"throttle_time": 0, "topics": [
        {"name": t["name"], "partitions": [
            {"partition_index": p["partition_index"],
             "error_code": top or kafka_error(errors.get((t["name"], p["partition_index"]), 0))}
            for p in t["partitions"]
        ]}
        for t in body.get("topics", [])
    ]}


def commit_refused(body: dict, error: int) -> dict:
    """Every partition of the commit answered with ``error`` (authorization, mostly)."""
    return commit_response(m.OffsetCommitResponse(error_code=error), body)


# ---------------------------------------------------------------------------- OffsetFetch


def fetch_requests(body: dict, version: int) -> list[m.OffsetFetchRequest]:
    """One Cohort request per group the fetch names."""
    groups = body["groups"] if version >= OFFSET_FETCH_BATCHED_SINCE else [body]
    out = []
    for g in groups:
        topics = g.get("topics")
        out.append(m.OffsetFetchRequest(
            group_id=g["group_id"],
            member_id=g.get("member_id"),
            member_epoch=g.get("member_epoch", -1),
            topics=None if topics is None else [
                m.OffsetFetchRequestTopic(t["name"], list(t["partition_indexes"]))
                for t in topics
            ],
            require_stable=body.get("require_stable", False),
        ))
    return out


def fetch_group_entry(req: m.OffsetFetchRequest, resp: m.OffsetFetchResponse) -> dict:
    topics = [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "committed_offset": p.committed_offset,
             "committed_leader_epoch": p.committed_leader_epoch, "metadata": p.metadata,
             "error_code": kafka_error(p.error_code)}
            for p in t.partitions
        ]}
        for t in resp.topics
    ]
    return {"group_id": req.group_id, "topics": topics, "error_code": kafka_error(resp.error_code)}


def fetch_refused(req: m.OffsetFetchRequest, error: int) -> dict:
    return fetch_group_entry(req, m.OffsetFetchResponse(error_code=error))


def fetch_response(entries: list[dict], version: int) -> dict:
    if version >= OFFSET_FETCH_BATCHED_SINCE:
        return {"throttle_time": 0, "groups": entries}
    (entry,) = entries
    return {"throttle_time": 0, "topics": entry["topics"], "error_code": entry["error_code"]}


# --------------------------------------------------------------------------- OffsetDelete


def delete_request(body: dict) -> m.OffsetDeleteRequest:
    return m.OffsetDeleteRequest(
        group_id=body["group_id"],
        topics=[m.OffsetDeleteRequestTopic(t["name"], [
            m.OffsetDeleteRequestPartition(p["partition_index"]) for p in t["partitions"]])
            for t in body.get("topics", [])],
    )


def delete_response(resp: m.OffsetDeleteResponse) -> dict:
    return {"error_code": kafka_error(resp.error_code), "throttle_time": 0, "topics": [
        {"name": t.name, "partitions": [
            {"partition_index": p.partition_index, "error_code": kafka_error(p.error_code)}
            for p in t.partitions]}
        for t in resp.topics
    ]}


# --------------------------------------------------------------------- DeleteGroups, List


def delete_groups_request(body: dict) -> m.DeleteGroupsRequest:
    return m.DeleteGroupsRequest(groups_names=list(body.get("groups_names", [])))


def delete_groups_response(resp: m.DeleteGroupsResponse) -> dict:
    return {"throttle_time": 0, "results": [
        {"group_id": r.group_id, "error_code": kafka_error(r.error_code)} for r in resp.results]}


def list_groups_request(body: dict) -> m.ListGroupsRequest:
    return m.ListGroupsRequest(states_filter=list(body.get("states_filter", [])),
                               types_filter=list(body.get("types_filter", [])))


def list_groups_response(resp: m.ListGroupsResponse) -> dict:
    return {"throttle_time": 0, "error_code": kafka_error(resp.error_code), "groups": [
        {"group_id": g.group_id, "protocol_type": g.protocol_type,
         "group_state": kafka_state_name(g.group_state), "group_type": g.group_type}
        for g in resp.groups
    ]}
