"""The group APIs: authorize, translate (``protocol/wire``), route to the owning partition,
translate back.

Every group API checks the principal's ACLs first, as Kafka's ``KafkaApis`` does: READ on the
group to join, sync, heartbeat, leave and commit; DESCRIBE to find the coordinator, describe,
fetch offsets and list; DELETE to delete groups or offsets; topics too where the request names
them (READ to commit, DESCRIBE to fetch offsets or subscribe). A refusal is
GROUP_AUTHORIZATION_FAILED or TOPIC_AUTHORIZATION_FAILED and the request never reaches the
partition, so it changes nothing.
"""

from __future__ import annotations

from actors.gateway.core import GatewayCore, WireRequest
from protocol import messages as m
from protocol.api import error_response
from protocol.errors import Errors
from protocol.wire import classic, consumer, offsets
from protocol.wire.coordinator import find_coordinator_response

GROUP, TOPIC, CLUSTER = "GROUP", "TOPIC", "CLUSTER"
DENIED_GROUP = "Not authorized to access group {group}."
DENIED_TOPIC = "Not authorized to access topic {topic}."


def _denied(request: object, group: str) -> object:
    return error_response(request, Errors.GROUP_AUTHORIZATION_FAILED,
                          DENIED_GROUP.format(group=group))


async def find_coordinator(core: GatewayCore, req: WireRequest) -> dict:
    return find_coordinator_response(req.body, req.version, core.node,
                                     lambda g: core.may(req, "DESCRIBE", GROUP, g))


# ------------------------------------------------------------------------ classic groups


async def join_group(core: GatewayCore, req: WireRequest) -> dict:
    request = classic.join_request(req.body, req.client_id, req.client_host)
    if not core.may(req, "READ", GROUP, request.group_id):
        return classic.join_response(_denied(request, request.group_id))
    resp = await core.router.call(request)
    if (resp.error_code == Errors.MEMBER_ID_REQUIRED
            and not classic.needs_member_id_round_trip(req.version)):
        request.member_id = resp.member_id  # an old client: rejoin for it with its new id
        resp = await core.router.call(request)
    core.saw_epoch(request.group_id, resp.member_id, resp.generation_id)
    return classic.join_response(resp)


async def sync_group(core: GatewayCore, req: WireRequest) -> dict:
    request = classic.sync_request(req.body)
    if not core.may(req, "READ", GROUP, request.group_id):
        return classic.sync_response(_denied(request, request.group_id))
    return classic.sync_response(await core.router.call(request))


async def heartbeat(core: GatewayCore, req: WireRequest) -> dict:
    request = classic.heartbeat_request(req.body)
    if not core.may(req, "READ", GROUP, request.group_id):
        return classic.heartbeat_response(_denied(request, request.group_id))
    return classic.heartbeat_response(await core.router.call(request))


async def leave_group(core: GatewayCore, req: WireRequest) -> dict:
    request = classic.leave_request(req.body)
    if not core.may(req, "READ", GROUP, request.group_id):
        return classic.leave_response(_denied(request, request.group_id), req.version)
    return classic.leave_response(await core.router.call(request), req.version)


async def describe_groups(core: GatewayCore, req: WireRequest) -> dict:
    ids = list(req.body.get("groups", []))
    allowed = [g for g in ids if core.may(req, "DESCRIBE", GROUP, g)]
    replies = await core.router.call_by_partition(
        allowed, lambda gs: m.DescribeGroupsRequest(groups=gs))
    entries = []
    for g in ids:
        if g not in replies:
            entries.append(m.DescribeGroupsResponseGroup(
                error_code=Errors.GROUP_AUTHORIZATION_FAILED, group_id=g))
        else:
            entries.append(_entry_for(replies[g].groups, g, m.DescribeGroupsResponseGroup))
    return classic.describe_groups_response(entries)


def _entry_for(entries: list, group_id: str, entry_type: type) -> object:
    for e in entries:
        if e.group_id == group_id:
            return e
    code = entries[0].error_code if entries else Errors.COORDINATOR_NOT_AVAILABLE
    return entry_type(error_code=code, group_id=group_id)


# ---------------------------------------------------------------------- consumer groups


async def consumer_group_heartbeat(core: GatewayCore, req: WireRequest) -> dict:
    body = req.body
    owned = [tp["topic_id"] for tp in body.get("topic_partitions") or []]
    subscribed = body.get("subscribed_topic_names") or []
    index = await core.topics_knowing(uuids=owned)
    request = consumer.heartbeat_request(body, index, req.client_id, req.client_host)
    if not core.may(req, "READ", GROUP, request.group_id):
        return consumer.heartbeat_response(_denied(request, request.group_id))
    hidden = [t for t in subscribed if not core.may(req, "DESCRIBE", TOPIC, t)]
    if hidden:
        return consumer.heartbeat_response(error_response(
            request, Errors.TOPIC_AUTHORIZATION_FAILED, DENIED_TOPIC.format(topic=hidden[0])))
    resp = await core.router.call(request)
    core.saw_epoch(request.group_id, resp.member_id, resp.member_epoch)
    return consumer.heartbeat_response(resp)


async def consumer_group_describe(core: GatewayCore, req: WireRequest) -> dict:
    ids = list(req.body.get("group_ids", []))
    allowed = [g for g in ids if core.may(req, "DESCRIBE", GROUP, g)]
    replies = await core.router.call_by_partition(
        allowed, lambda gs: m.ConsumerGroupDescribeRequest(group_ids=gs))
    entries = []
    for g in ids:
        if g not in replies:
            entries.append(m.DescribedGroup(error_code=Errors.GROUP_AUTHORIZATION_FAILED,
                                            error_message=DENIED_GROUP.format(group=g),
                                            group_id=g))
        else:
            entries.append(_entry_for(replies[g].groups, g, m.DescribedGroup))
    return consumer.describe_response(entries)


# ------------------------------------------------------------------------------ offsets


async def offset_commit(core: GatewayCore, req: WireRequest) -> dict:
    body = req.body
    group = body["group_id"]
    if not core.may(req, "READ", GROUP, group):
        return offsets.commit_refused(body, Errors.GROUP_AUTHORIZATION_FAILED)
    denied = {t["name"] for t in body.get("topics", []) if not core.may(req, "READ", TOPIC,
                                                                        t["name"])}
    allowed = {**body, "topics": [t for t in body.get("topics", []) if t["name"] not in denied]}
    reply = offsets.commit_response(allowed, await core.router.call(
        offsets.commit_request(allowed))) if allowed["topics"] else {"topics": []}
    refused = offsets.commit_refused(
        {"topics": [t for t in body.get("topics", []) if t["name"] in denied]},
        Errors.TOPIC_AUTHORIZATION_FAILED)
    by_name = {t["name"]: t for t in reply["topics"] + refused["topics"]}
    return {"throttle_time": 0, "topics": [by_name[t["name"]] for t in body.get("topics", [])]}


async def offset_fetch(core: GatewayCore, req: WireRequest) -> dict:
    entries = []
    for request in offsets.fetch_requests(req.body, req.version):
        if not core.may(req, "DESCRIBE", GROUP, request.group_id):
            entries.append(offsets.fetch_refused(request, Errors.GROUP_AUTHORIZATION_FAILED))
            continue
        if request.topics is not None:
            request.topics = [t for t in request.topics
                              if core.may(req, "DESCRIBE", TOPIC, t.name)]
        entries.append(offsets.fetch_group_entry(request, await core.router.call(request)))
    return offsets.fetch_response(entries, req.version)


async def offset_delete(core: GatewayCore, req: WireRequest) -> dict:
    request = offsets.delete_request(req.body)
    if not core.may(req, "DELETE", GROUP, request.group_id):
        return offsets.delete_response(_denied(request, request.group_id))
    for t in request.topics:
        if not core.may(req, "READ", TOPIC, t.name):
            return offsets.delete_response(error_response(
                request, Errors.TOPIC_AUTHORIZATION_FAILED, DENIED_TOPIC.format(topic=t.name)))
    return offsets.delete_response(await core.router.call(request))


async def delete_groups(core: GatewayCore, req: WireRequest) -> dict:
    ids = list(req.body.get("groups_names", []))
    allowed = [g for g in ids if core.may(req, "DELETE", GROUP, g)]
    replies = await core.router.call_by_partition(
        allowed, lambda gs: m.DeleteGroupsRequest(groups_names=gs))
    results = []
    for g in ids:
        if g not in replies:
            results.append(m.DeletableGroupResult(g, Errors.GROUP_AUTHORIZATION_FAILED))
        else:
            results.append(_entry_for(replies[g].results, g, m.DeletableGroupResult))
    return offsets.delete_groups_response(results)


async def list_groups(core: GatewayCore, req: WireRequest) -> dict:
    request = offsets.list_groups_request(req.body)
    see_all = core.may(req, "DESCRIBE", CLUSTER, "kafka-cluster")
    groups, error = [], Errors.NONE
    for reply in await core.router.call_all(request):
        if reply.error_code != Errors.NONE:
            error = reply.error_code
            continue
        groups += [g for g in reply.groups
                   if see_all or core.may(req, "DESCRIBE", GROUP, g.group_id)]
    return offsets.list_groups_response(error, sorted(groups, key=lambda g: g.group_id))
