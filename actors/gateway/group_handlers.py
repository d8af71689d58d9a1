"""The group APIs: authorize, translate (through the request's row of ``protocol.api``: its
``decode`` and ``encode``), route to the owning partition, translate back.

Every group API checks the principal's ACLs first, as Kafka's ``KafkaApis`` does: READ on the
group to join, sync, heartbeat, leave and commit; DESCRIBE to find the coordinator, describe,
fetch offsets and list; DELETE to delete groups or offsets; topics too where the request names
them (READ to commit, DESCRIBE to fetch offsets or subscribe). A refusal is
GROUP_AUTHORIZATION_FAILED or TOPIC_AUTHORIZATION_FAILED and the request never reaches the
partition, so it changes nothing.
"""

from __future__ import annotations

import dataclasses

from actors.gateway.core import GatewayCore, WireRequest
from protocol.api import error_response
from protocol.errors import Errors
from protocol.wire import classic, offsets
from protocol.wire.coordinator import find_coordinator_response
from protocol.wire.upstream import FIND_COORDINATOR, TRANSACTION_KEY, rewrite_body

GROUP, TOPIC, CLUSTER = "GROUP", "TOPIC", "CLUSTER"
DENIED_GROUP = "Not authorized to access group {group}."
DENIED_TOPIC = "Not authorized to access topic {topic}."


def _denied(request: object, group: str) -> object:
    return error_response(request, Errors.GROUP_AUTHORIZATION_FAILED,
                          DENIED_GROUP.format(group=group))


async def _one_group(core: GatewayCore, req: WireRequest, operation: str) -> dict:
    """A request for one group: authorized by ``operation`` on it, answered by its partition."""
    api = req.api
    request = api.decode(req.body)
    if not core.may(req, operation, GROUP, request.group_id):
        return api.encode(_denied(request, request.group_id))
    return api.encode(await core.router.call(request))


async def _per_group(core: GatewayCore, req: WireRequest, operation: str) -> dict:
    """A request naming many groups (DescribeGroups, ConsumerGroupDescribe, DeleteGroups,
    ShareGroupDescribe): each group authorized by ``operation``, the allowed ones asked of
    their partitions (one request per partition), the reply's entries in the order the client
    named the groups. A group named many times is authorized and asked about once and its
    entry repeated (Kafka answers each name): one id named 50,000 times is one question, not
    50,000 describes in the partition's turn."""
    api = req.api
    request = api.decode(req.body)
    field, entries_field = api.group_ids_field, api.per_group.list_field
    ids = list(getattr(request, field))
    distinct = list(dict.fromkeys(ids))
    allowed = [g for g in distinct if core.may(req, operation, GROUP, g)]
    replies = await core.router.call_by_partition(
        allowed, lambda gs: dataclasses.replace(request, **{field: gs}))
    entry_of = _entries_by_group(replies, entries_field, api.per_group.entry)
    entries = []
    for g in ids:
        entry = entry_of.get(g)
        if entry is None:
            entry = api.per_group.entry(error_code=Errors.GROUP_AUTHORIZATION_FAILED,
                                        error_message=DENIED_GROUP.format(group=g), group_id=g)
        entries.append(entry)
    return api.encode(api.response(**{entries_field: entries}))


def _entries_by_group(replies: dict[str, object], entries_field: str,
                      entry_type: type) -> dict[str, object]:
    """Each asked group's entry, from the reply of its partition: every reply is indexed once
    (many groups share one reply), so finding an entry is a lookup, not a scan."""
    by_reply: dict[int, dict[str, object]] = {}
    out = {}
    for g, reply in replies.items():
        index = by_reply.get(id(reply))
        if index is None:
            index = by_reply[id(reply)] = {}
            for e in getattr(reply, entries_field):
                index.setdefault(e.group_id, e)
        entry = index.get(g)
        if entry is None:  # the partition refused the request as a whole
            entries = getattr(reply, entries_field)
            code = entries[0].error_code if entries else Errors.COORDINATOR_NOT_AVAILABLE
            entry = entry_type(error_code=code, group_id=g)
        out[g] = entry
    return out


async def find_coordinator(core: GatewayCore, req: WireRequest) -> dict:
    """Each group's partition, as the broker it plays (``actors.gateway.brokers``); in front
    of an upstream, a transaction's coordinator is the upstream's, named by its listener."""
    if core.upstream is not None and req.body.get("key_type") == TRANSACTION_KEY:
        body = await core.upstream.call_at(FIND_COORDINATOR, req.version, req.body)
        return rewrite_body(FIND_COORDINATOR, req.version, body, core.listener_of)
    return find_coordinator_response(
        req.body, req.version, lambda g: core.brokers.node_of(core.router.partition_of(g)),
        lambda g: core.may(req, "DESCRIBE", GROUP, g))


# ------------------------------------------------------------------------ classic groups


async def join_group(core: GatewayCore, req: WireRequest) -> dict:
    request = req.api.decode(req.body, req.client_id, req.client_host)
    if not core.may(req, "READ", GROUP, request.group_id):
        return req.api.encode(_denied(request, request.group_id))
    resp = await core.router.call(request)
    if (resp.error_code == Errors.MEMBER_ID_REQUIRED
            and not classic.needs_member_id_round_trip(req.version)):
        request.member_id = resp.member_id  # an old client: rejoin for it with its new id
        resp = await core.router.call(request)
    core.saw_epoch(request.group_id, resp.member_id, resp.generation_id)
    return req.api.encode(resp)


async def sync_group(core: GatewayCore, req: WireRequest) -> dict:
    return await _one_group(core, req, "READ")


async def heartbeat(core: GatewayCore, req: WireRequest) -> dict:
    return await _one_group(core, req, "READ")


async def leave_group(core: GatewayCore, req: WireRequest) -> dict:
    request = req.api.decode(req.body)
    if not core.may(req, "READ", GROUP, request.group_id):
        return req.api.encode(_denied(request, request.group_id), req.version)
    return req.api.encode(await core.router.call(request), req.version)


async def describe_groups(core: GatewayCore, req: WireRequest) -> dict:
    return await _per_group(core, req, "DESCRIBE")


# ---------------------------------------------------------------------- consumer groups


async def consumer_group_heartbeat(core: GatewayCore, req: WireRequest) -> dict:
    body = req.body
    owned = [tp["topic_id"] for tp in body.get("topic_partitions") or []]
    subscribed = body.get("subscribed_topic_names") or []
    index = await core.topics_knowing(uuids=owned)
    request = req.api.decode(body, index, req.client_id, req.client_host)
    if not core.may(req, "READ", GROUP, request.group_id):
        return req.api.encode(_denied(request, request.group_id))
    hidden = [t for t in subscribed if not core.may(req, "DESCRIBE", TOPIC, t)]
    if hidden:
        return req.api.encode(error_response(
            request, Errors.TOPIC_AUTHORIZATION_FAILED, DENIED_TOPIC.format(topic=hidden[0])))
    resp = await core.router.call(request)
    core.saw_epoch(request.group_id, resp.member_id, resp.member_epoch)
    return req.api.encode(resp)


async def consumer_group_describe(core: GatewayCore, req: WireRequest) -> dict:
    return await _per_group(core, req, "DESCRIBE")


# ------------------------------------------------------------------------------ offsets


async def offset_commit(core: GatewayCore, req: WireRequest) -> dict:
    body = req.body
    group = body["group_id"]
    if not core.may(req, "READ", GROUP, group):
        return offsets.commit_refused(body, Errors.GROUP_AUTHORIZATION_FAILED)
    denied = {t["name"] for t in body.get("topics", []) if not core.may(req, "READ", TOPIC,
                                                                        t["name"])}
    if not denied:  # the hot path: every topic allowed, the reply is the partition's
        return req.api.encode(await core.router.call(req.api.decode(body, req.version)), body)
    allowed = {**body, "topics": [t for t in body.get("topics", []) if t["name"] not in denied]}
    reply = req.api.encode(await core.router.call(req.api.decode(allowed, req.version)),
                           allowed) if allowed["topics"] else {"topics": []}
    refused = offsets.commit_refused(
        {"topics": [t for t in body.get("topics", []) if t["name"] in denied]},
        Errors.TOPIC_AUTHORIZATION_FAILED)
    by_name = {t["name"]: t for t in reply["topics"] + refused["topics"]}
    return {"throttle_time": 0, "topics": [by_name[t["name"]] for t in body.get("topics", [])]}


async def offset_fetch(core: GatewayCore, req: WireRequest) -> dict:
    entries = []
    for request in req.api.decode(req.body, req.version):
        if not core.may(req, "DESCRIBE", GROUP, request.group_id):
            entries.append(offsets.fetch_refused(request, Errors.GROUP_AUTHORIZATION_FAILED))
            continue
        if request.topics is not None:
            request.topics = [t for t in request.topics
                              if core.may(req, "DESCRIBE", TOPIC, t.name)]
        entries.append(offsets.fetch_group_entry(request, await core.router.call(request)))
    return req.api.encode(entries, req.version)


async def offset_delete(core: GatewayCore, req: WireRequest) -> dict:
    request = req.api.decode(req.body)
    if not core.may(req, "DELETE", GROUP, request.group_id):
        return req.api.encode(_denied(request, request.group_id))
    for t in request.topics:
        if not core.may(req, "READ", TOPIC, t.name):
            return req.api.encode(error_response(
                request, Errors.TOPIC_AUTHORIZATION_FAILED, DENIED_TOPIC.format(topic=t.name)))
    return req.api.encode(await core.router.call(request))


async def delete_groups(core: GatewayCore, req: WireRequest) -> dict:
    return await _per_group(core, req, "DELETE")


async def list_groups(core: GatewayCore, req: WireRequest) -> dict:
    request = req.api.decode(req.body)
    see_all = core.may(req, "DESCRIBE", CLUSTER, "kafka-cluster")
    groups, error = [], Errors.NONE
    for reply in await core.router.call_all(request):
        if reply.error_code != Errors.NONE:
            error = reply.error_code
            continue
        groups += [g for g in reply.groups
                   if see_all or core.may(req, "DESCRIBE", GROUP, g.group_id)]
    return req.api.encode(req.api.response(error_code=error,
                                           groups=sorted(groups, key=lambda g: g.group_id)))
