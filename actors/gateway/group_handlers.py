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
from collections.abc import Callable

from actors.gateway.core import GatewayCore, WireRequest
from actors.runtime.offload import pure
from protocol import messages as m
from protocol.api import error_response
from protocol.errors import Errors
from protocol.wire import classic, offsets
from protocol.wire.coordinator import find_coordinator_response
from protocol.wire.upstream import FIND_COORDINATOR, TRANSACTION_KEY, rewrite_body

GROUP, TOPIC, CLUSTER = "GROUP", "TOPIC", "CLUSTER"
DENIED_GROUP = "Not authorized to access group {group}."
DENIED_TOPIC = "Not authorized to access topic {topic}."
UNDESCRIBABLE_TOPICS = ("The group has described topic(s) that the client is not authorized "
                        "to describe.")


def _denied(request: object, group: str) -> object:
    return error_response(request, Errors.GROUP_AUTHORIZATION_FAILED,
                          DENIED_GROUP.format(group=group))


async def _one_group(core: GatewayCore, req: WireRequest, operation: str) -> dict:
    """A request for one group: authorized by ``operation`` on it, answered by its partition."""
    api = req.api
    request = await pure(api.decode, req.body)
    if not core.may(req, operation, GROUP, request.group_id):
        return await pure(api.encode, _denied(request, request.group_id))
    return await pure(api.encode, await core.router.call(request))


async def _per_group(core: GatewayCore, req: WireRequest, operation: str,
                     shown: Callable[[object], object] | None = None) -> dict:
    """A request naming many groups (DescribeGroups, ConsumerGroupDescribe, DeleteGroups,
    ShareGroupDescribe): each group authorized by ``operation``, the allowed ones asked of
    their partitions (one request per partition), the reply's entries in the order the client
    named the groups. A group named many times is authorized and asked about once and its
    entry repeated (Kafka answers each name): one id named 50,000 times is one question, not
    50,000 describes in the partition's turn. ``shown``: what the principal may see of each
    group's entry (``describable``)."""
    api = req.api
    request = await pure(api.decode, req.body)
    field, entries_field = api.group_ids_field, api.per_group.list_field
    ids = list(getattr(request, field))
    distinct = list(dict.fromkeys(ids))
    allowed = [g for g in distinct if core.may(req, operation, GROUP, g)]
    replies = await core.router.call_by_partition(
        allowed, lambda gs: dataclasses.replace(request, **{field: gs}))
    entry_of = _entries_by_group(replies, entries_field, api.per_group.entry)
    if shown is not None:
        entry_of = {g: shown(e) for g, e in entry_of.items()}
    for g in distinct:
        if g not in entry_of:
            entry_of[g] = api.per_group.entry(error_code=Errors.GROUP_AUTHORIZATION_FAILED,
                                              error_message=DENIED_GROUP.format(group=g),
                                              group_id=g)
    return await pure(_encoded_once_each, api, [entry_of[g] for g in ids])


def _encoded_once_each(api, entries: list[object]) -> dict:
    """The per-group reply, each distinct entry translated once and repeated for every name
    that shares it: a group named 100,000 times is one translated entry, referenced 100,000
    times (kio then writes it 100,000 times without building it again), not 100,000 entries
    built, the memory and the seconds the wire fuzzer's repeated names cost."""
    field = api.per_group.list_field
    distinct = list({id(e): e for e in entries}.values())
    body = api.encode(api.response(**{field: distinct}))
    translated = dict(zip(map(id, distinct), body[field], strict=True))
    body[field] = [translated[id(e)] for e in entries]
    return body


def describable(core: GatewayCore, req: WireRequest) -> Callable[[object], object]:
    """A described group (ConsumerGroupDescribe, ShareGroupDescribe) as the principal may see
    it: whole, or, if a member's assignment or target names a topic it may not DESCRIBE, only
    TOPIC_AUTHORIZATION_FAILED and no members, as Kafka 4.0 answers (KAFKA-18813): "clients
    are not allowed to see topics that are not authorized for Describe"."""

    def shown(entry: object) -> object:
        if entry.error_code != Errors.NONE:
            return entry
        for member in entry.members:
            for assignment in (member.assignment, getattr(member, "target_assignment", None)):
                for tp in assignment.topic_partitions if assignment is not None else ():
                    if not core.may(req, "DESCRIBE", TOPIC, tp.topic_name):
                        return type(entry)(error_code=Errors.TOPIC_AUTHORIZATION_FAILED,
                                           error_message=UNDESCRIBABLE_TOPICS,
                                           group_id=entry.group_id)
        return entry

    return shown


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
    return await pure(
        find_coordinator_response,
        req.body, req.version, lambda g: core.brokers.node_of(core.router.partition_of(g)),
        lambda g: core.may(req, "DESCRIBE", GROUP, g))


# ------------------------------------------------------------------------ classic groups


async def join_group(core: GatewayCore, req: WireRequest) -> dict:
    request = await pure(req.api.decode, req.body, req.client_id, req.client_host)
    if not core.may(req, "READ", GROUP, request.group_id):
        return await pure(req.api.encode, _denied(request, request.group_id))
    resp = await core.router.call(request)
    if (resp.error_code == Errors.MEMBER_ID_REQUIRED
            and not classic.needs_member_id_round_trip(req.version)):
        request.member_id = resp.member_id  # an old client: rejoin for it with its new id
        resp = await core.router.call(request)
    core.saw_epoch(request.group_id, resp.member_id, resp.generation_id)
    return await pure(req.api.encode, resp)


async def sync_group(core: GatewayCore, req: WireRequest) -> dict:
    return await _one_group(core, req, "READ")


async def heartbeat(core: GatewayCore, req: WireRequest) -> dict:
    return await _one_group(core, req, "READ")


async def leave_group(core: GatewayCore, req: WireRequest) -> dict:
    request = await pure(req.api.decode, req.body)
    if not core.may(req, "READ", GROUP, request.group_id):
        return await pure(req.api.encode, _denied(request, request.group_id), req.version)
    return await pure(req.api.encode, await core.router.call(request), req.version)


async def describe_groups(core: GatewayCore, req: WireRequest) -> dict:
    reply = await _per_group(core, req, "DESCRIBE")
    return classic.describe_groups_v6(reply) if req.version >= 6 else reply


# ---------------------------------------------------------------------- consumer groups


async def consumer_group_heartbeat(core: GatewayCore, req: WireRequest) -> dict:
    body = req.body
    owned = [tp["topic_id"] for tp in body.get("topic_partitions") or []]
    subscribed = body.get("subscribed_topic_names") or []
    index = await core.topics_knowing(uuids=owned)
    request = await pure(req.api.decode, body, index, req.client_id, req.client_host)
    if not core.may(req, "READ", GROUP, request.group_id):
        return await pure(req.api.encode, _denied(request, request.group_id))
    hidden = [t for t in dict.fromkeys(subscribed) if not core.may(req, "DESCRIBE", TOPIC, t)]
    if hidden:
        return await pure(req.api.encode, error_response(
            request, Errors.TOPIC_AUTHORIZATION_FAILED, DENIED_TOPIC.format(topic=hidden[0])))
    request.topic_view = core.topic_view(req)  # a regex resolves to what it may describe
    resp = await core.router.call(request)
    core.saw_epoch(request.group_id, resp.member_id, resp.member_epoch)
    return await pure(req.api.encode, resp)


async def consumer_group_describe(core: GatewayCore, req: WireRequest) -> dict:
    return await _per_group(core, req, "DESCRIBE", describable(core, req))


# ------------------------------------------------------------------------------ offsets


async def offset_commit(core: GatewayCore, req: WireRequest) -> dict:
    body = req.body
    group = body["group_id"]
    if not core.may(req, "READ", GROUP, group):
        return offsets.commit_refused(body, Errors.GROUP_AUTHORIZATION_FAILED)
    denied = {n for n in {t["name"] for t in body.get("topics", [])}  # each name once
              if not core.may(req, "READ", TOPIC, n)}
    api = req.api
    if not denied:  # the hot path: every topic allowed, the reply is the partition's
        reply = await core.router.call(await pure(api.decode, body, req.version))
        return await pure(api.encode, reply, body)
    allowed = {**body, "topics": [t for t in body.get("topics", []) if t["name"] not in denied]}
    reply = {"topics": []}
    if allowed["topics"]:
        reply = await pure(api.encode, await core.router.call(
            await pure(api.decode, allowed, req.version)), allowed)
    refused = offsets.commit_refused(
        {"topics": [t for t in body.get("topics", []) if t["name"] in denied]},
        Errors.TOPIC_AUTHORIZATION_FAILED)
    by_name = {t["name"]: t for t in reply["topics"] + refused["topics"]}
    return {"throttle_time": 0, "topics": [by_name[t["name"]] for t in body.get("topics", [])]}


def _names(topics: list) -> set[str]:
    return {t.name for t in topics}


def _split_by_name(topics: list, names: set[str]) -> tuple[list, list]:
    """(the topics named in ``names``, the others), each in request order."""
    named: list = []
    others: list = []
    for t in topics:
        (named if t.name in names else others).append(t)
    return named, others


async def offset_fetch(core: GatewayCore, req: WireRequest) -> dict:
    """Each group's committed offsets, as Kafka's ``KafkaApis`` answers: DESCRIBE on the
    group; of every topic (no topics named), only those the principal may DESCRIBE, the others
    left out; of named topics, those it may not answered TOPIC_AUTHORIZATION_FAILED."""
    entries = []
    for request in await pure(req.api.decode, req.body, req.version):
        if not core.may(req, "DESCRIBE", GROUP, request.group_id):
            entries.append(offsets.fetch_refused(request, Errors.GROUP_AUTHORIZATION_FAILED))
            continue
        hidden = []
        if request.topics is not None:
            # Steps per entry named: off the loop for a big request (issue 30's fuzzer named a
            # topic by the hundred thousand), each name asked once.
            denied = {n for n in await pure(_names, request.topics)
                      if not core.may(req, "DESCRIBE", TOPIC, n)}
            if denied:
                hidden, request.topics = await pure(_split_by_name, request.topics, denied)
        reply = await core.router.call(request)
        if reply.error_code == Errors.NONE:
            if request.topics is None:
                reply.topics = [t for t in reply.topics
                                if core.may(req, "DESCRIBE", TOPIC, t.name)]
            reply.topics += [m.OffsetFetchResponseTopic(t.name, [
                m.OffsetFetchResponsePartition(p, error_code=Errors.TOPIC_AUTHORIZATION_FAILED)
                for p in t.partition_indexes]) for t in hidden]
        entries.append(await pure(offsets.fetch_group_entry, request, reply))
    return await pure(req.api.encode, entries, req.version)


async def offset_delete(core: GatewayCore, req: WireRequest) -> dict:
    request = await pure(req.api.decode, req.body)
    if not core.may(req, "DELETE", GROUP, request.group_id):
        return await pure(req.api.encode, _denied(request, request.group_id))
    for name in dict.fromkeys(t.name for t in request.topics):  # each name once
        if not core.may(req, "READ", TOPIC, name):
            return await pure(req.api.encode, error_response(
                request, Errors.TOPIC_AUTHORIZATION_FAILED, DENIED_TOPIC.format(topic=name)))
    return await pure(req.api.encode, await core.router.call(request))


async def delete_groups(core: GatewayCore, req: WireRequest) -> dict:
    return await _per_group(core, req, "DELETE")


async def list_groups(core: GatewayCore, req: WireRequest) -> dict:
    request = await pure(req.api.decode, req.body)
    see_all = core.may(req, "DESCRIBE", CLUSTER, "kafka-cluster")
    groups, error = [], Errors.NONE
    for reply in await core.router.call_all(request):
        if reply.error_code != Errors.NONE:
            error = reply.error_code
            continue
        groups += [g for g in reply.groups
                   if see_all or core.may(req, "DESCRIBE", GROUP, g.group_id)]
    return await pure(req.api.encode, req.api.response(error_code=error,
                                           groups=sorted(groups, key=lambda g: g.group_id)))
