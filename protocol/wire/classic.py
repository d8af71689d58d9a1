"""The classic group protocol on the wire: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
DescribeGroups, to and from Cohort's ``protocol.classic`` messages.

Two places where the wire and Cohort's rules differ, settled here:

* **Join reasons.** KIP-800 made ``reason`` a free-text field, and real clients fill it with
  prose ("rebalance failed due to ..."). Cohort's JoinGroup reads it as KIP-800's design
  names it (``restart``, ``topic_metadata_change``, ``upgrade``) and refuses anything else, so
  the gateway passes those names through (matched loosely: ``Restart``, ``topic metadata
  change``) and turns every other text into "no reason", which is what Kafka's coordinator
  makes of prose too (it logs it and applies its default rule).
* **Member ids before v4.** KIP-394's MEMBER_ID_REQUIRED exists from JoinGroup v4; an older
  client would not understand it, so for those the gateway rejoins at once with the id it
  was given (``needs_member_id_round_trip``), as Kafka's coordinator admits old clients.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic.group import JOIN_REASONS
from protocol.errors import Errors
from protocol.group_states import kafka_state_name
from protocol.wire.ids import kafka_client_host, kafka_error

# KIP-394: JoinGroup versions below this get their member id without a round trip.
MEMBER_ID_REQUIRED_SINCE = 4


def join_reason(text: str | None) -> str | None:
    """A KIP-800 reason Cohort knows, or None for free text (and for none)."""
    if not text:
        return None
    key = text.strip().lower().replace(" ", "_").replace("-", "_")
    return key if key in JOIN_REASONS else None


def needs_member_id_round_trip(version: int) -> bool:
    """Whether a client at this JoinGroup version handles MEMBER_ID_REQUIRED itself."""
    return version >= MEMBER_ID_REQUIRED_SINCE


def join_request(body: dict, client_id: str, client_host: str) -> m.JoinGroupRequest:
    session = body["session_timeout"]
    return m.JoinGroupRequest(
        group_id=body["group_id"],
        session_timeout_ms=session,
        # JoinGroup v0 has no rebalance timeout: Kafka uses the session timeout.
        rebalance_timeout_ms=body.get("rebalance_timeout", session),
        member_id=body.get("member_id", ""),
        group_instance_id=body.get("group_instance_id"),
        protocol_type=body.get("protocol_type", ""),
        protocols=[m.JoinGroupRequestProtocol(p["name"], p["metadata"])
                   for p in body.get("protocols", [])],
        reason=join_reason(body.get("reason")),
        client_id=client_id or "",
        client_host=kafka_client_host(client_host),
    )


def join_response(resp: m.JoinGroupResponse) -> dict:
    return {
        "throttle_time": 0,
        "error_code": kafka_error(resp.error_code),
        "generation_id": resp.generation_id,
        "protocol_type": resp.protocol_type,
        "protocol_name": resp.protocol_name or None,  # Kafka: null until a protocol is chosen
        "leader": resp.leader or "",
        "skip_assignment": resp.skip_assignment,
        "member_id": resp.member_id or "",
        "members": [{"member_id": mb.member_id, "group_instance_id": mb.group_instance_id,
                     "metadata": mb.metadata} for mb in resp.members],
    }


def sync_request(body: dict) -> m.SyncGroupRequest:
    return m.SyncGroupRequest(
        group_id=body["group_id"],
        generation_id=body["generation_id"],
        member_id=body["member_id"],
        group_instance_id=body.get("group_instance_id"),
        protocol_type=body.get("protocol_type"),
        protocol_name=body.get("protocol_name"),
        assignments=[m.SyncGroupRequestAssignment(a["member_id"], a["assignment"])
                     for a in body.get("assignments", [])],
    )


def sync_response(resp: m.SyncGroupResponse) -> dict:
    return {"throttle_time": 0, "error_code": kafka_error(resp.error_code),
            "protocol_type": resp.protocol_type, "protocol_name": resp.protocol_name,
            "assignment": resp.assignment or b""}


def heartbeat_request(body: dict) -> m.HeartbeatRequest:
    return m.HeartbeatRequest(
        group_id=body["group_id"],
        generation_id=body["generation_id"],
        member_id=body["member_id"],
        group_instance_id=body.get("group_instance_id"),
    )


def heartbeat_response(resp: m.HeartbeatResponse) -> dict:
    return {"throttle_time": 0, "error_code": kafka_error(resp.error_code)}


def leave_request(body: dict) -> m.LeaveGroupRequest:
    """v0-v2 name one member; v3+ a batch (KIP-345)."""
    if "members" in body:
        members = [m.MemberIdentity(x["member_id"], x.get("group_instance_id"), x.get("reason"))
                   for x in body["members"]]
    else:
        members = [m.MemberIdentity(body.get("member_id", ""))]
    return m.LeaveGroupRequest(group_id=body["group_id"], members=members)


def leave_response(resp: m.LeaveGroupResponse, version: int) -> dict:
    members = [{"member_id": x.member_id, "group_instance_id": x.group_instance_id,
                "error_code": kafka_error(x.error_code)} for x in resp.members]
    error = kafka_error(resp.error_code)
    if version < 3 and error == 0 and members:
        error = members[0]["error_code"]  # one member, no per-member errors before v3
    return {"throttle_time": 0, "error_code": error, "members": members}


def describe_groups_request(body: dict) -> m.DescribeGroupsRequest:
    return m.DescribeGroupsRequest(groups=list(body.get("groups", [])))


def describe_groups_response(resp: m.DescribeGroupsResponse) -> dict:
    return {"throttle_time": 0, "groups": [describe_group_entry(g) for g in resp.groups]}


def describe_groups_v6(reply: dict) -> dict:
    """The reply at v6 (KIP-1043), where Kafka 4.4 names a group it cannot describe instead of
    answering ``Dead``: GROUP_ID_NOT_FOUND, as its Admin client and tools then report."""
    for g in reply.get("groups", []):
        if g["error_code"] == 0 and g["group_state"] == "Dead":
            g["error_code"] = Errors.GROUP_ID_NOT_FOUND.value
            g["error_message"] = f"Group {g['group_id']} not found."
    return reply


def describe_group_entry(g: m.DescribeGroupsResponseGroup) -> dict:
    """A DescribeGroups entry as Kafka answers it up to v5 (the versions served): a group that
    does not exist, or is not a classic group (Kafka describes only those), is NONE and
    ``Dead`` with nothing else; Cohort's own callers see other types in the classic shape."""
    if g.group_type != "classic" or g.error_code == Errors.GROUP_ID_NOT_FOUND:
        return {"error_code": 0, "error_message": None, "group_id": g.group_id,
                "group_state": "Dead", "protocol_type": "", "protocol_data": "", "members": [],
                "authorized_operations": g.authorized_operations}
    return {
        "error_code": kafka_error(g.error_code),
        "error_message": g.error_message,
        "group_id": g.group_id,
        "group_state": kafka_state_name(g.group_state) if g.group_state else "",
        "protocol_type": g.protocol_type or "",
        "protocol_data": g.protocol_data or "",
        "members": [
            {"member_id": x.member_id, "group_instance_id": x.group_instance_id,
             "client_id": x.client_id, "client_host": x.client_host,
             "member_metadata": x.member_metadata, "member_assignment": x.member_assignment}
            for x in g.members
        ],
        "authorized_operations": g.authorized_operations,
    }
