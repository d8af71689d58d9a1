"""Share groups (KIP-932) at the gateway: membership, ShareFetch and ShareAcknowledge.

ShareGroupHeartbeat and ShareGroupDescribe go to the group's partition actor as the KIP-848
requests do. For ShareFetch and ShareAcknowledge the gateway plays the share-partition
leader of every topic partition (it serves the synthetic stream) while the group's partition
actor keeps the share-partitions' state (what is acquired, by whom, until when), durably.
So a fetch is: check the member's share session here (``protocol.wire.share_session``), send
one pure ShareFetch naming the session's partitions, with the stream's end now, to the
group's partition actor, and turn the offsets it acquired into record batches of the stream.
A fetch that acquires nothing waits for the stream's next batch and asks again (without the
acknowledgements, which applied once), up to the client's ``max_wait``.

ACLs as Kafka's ``KafkaApis``: READ on the group for every share API, DESCRIBE on the group to
describe, READ on a topic to fetch or acknowledge it, DESCRIBE on a topic to subscribe.
"""

from __future__ import annotations

import asyncio
import dataclasses

from kio.schema.errors import ErrorCode as E

from actors.gateway.core import GatewayCore, WireRequest
from actors.gateway.group_handlers import DENIED_GROUP, DENIED_TOPIC, GROUP, TOPIC, describable
from actors.gateway.group_handlers import _per_group as per_group
from actors.runtime.offload import pure
from protocol import messages as m
from protocol.api import error_response
from protocol.errors import Errors
from protocol.wire import share as wire

# A fetch waits at most this long for records, whatever the client's max_wait.
MAX_SHARE_FETCH_WAIT_MS = 5_000
LEAVE_EPOCH = -1


async def share_group_heartbeat(core: GatewayCore, req: WireRequest) -> dict:
    request = await pure(req.api.decode, req.body, req.client_id, req.client_host)
    if not core.may(req, "READ", GROUP, request.group_id):
        return await pure(req.api.encode, error_response(request, Errors.GROUP_AUTHORIZATION_FAILED,
                                             DENIED_GROUP.format(group=request.group_id)))
    hidden = [t for t in dict.fromkeys(request.subscribed_topic_names or [])
              if not core.may(req, "DESCRIBE", TOPIC, t)]
    if hidden:
        return await pure(req.api.encode, error_response(
            request, Errors.TOPIC_AUTHORIZATION_FAILED, DENIED_TOPIC.format(topic=hidden[0])))
    resp = await core.router.call(request)
    if request.member_epoch == LEAVE_EPOCH:
        core.share_sessions.drop(request.group_id, request.member_id)
    core.saw_epoch(request.group_id, resp.member_id, resp.member_epoch)
    return await pure(req.api.encode, resp)


async def share_group_describe(core: GatewayCore, req: WireRequest) -> dict:
    return await per_group(core, req, "DESCRIBE", describable(core, req))


# ------------------------------------------------------------------- fetch / acknowledge


def _denied_topics(core: GatewayCore, req: WireRequest, index, topic_ids) -> set[str]:
    return {t for t in topic_ids if not core.may(req, "READ", TOPIC, index.name_of(t))}


async def share_fetch(core: GatewayCore, req: WireRequest) -> dict:
    body = req.body
    uuids = [t["topic_id"] for t in body.get("topics", []) + body.get("forgotten_topics_data", [])]
    index = await core.topics_knowing(uuids=uuids)
    named = wire.fetch_request(body, index)
    if not core.may(req, "READ", GROUP, named.group_id):
        return wire.refused(E.group_authorization_failed.value,
                            DENIED_GROUP.format(group=named.group_id))
    acks = {(t.topic_id, p.partition): p.acknowledgements
            for t in named.topics for p in t.partitions}
    step = core.share_sessions.fetch(
        named.group_id, named.member_id, body.get("share_session_epoch", 0), list(acks),
        wire.forgotten(body, index), any(acks.values()), core.now_ms())
    if step.error_code:
        return wire.refused(step.error_code, step.error_message)
    denied = _denied_topics(core, req, index, {t for t, _ in step.partitions} | {
        t for t, _ in acks})
    wanted = [tp for tp in step.partitions if tp[0] not in denied]
    with_acks = [tp for tp in acks if tp[0] not in denied and acks[tp]]
    request = _pure_fetch(named, wanted, with_acks, acks, step.close, core)
    resp = await core.router.call(request)
    core.share_sessions.answered(named.group_id, named.member_id, resp.error_code)
    if not step.close and _acquired(resp) == 0 and resp.error_code == Errors.NONE:
        resp = await _wait_for_records(core, request, resp, body.get("max_wait", 0))
    _add_denied(resp, [tp for tp in list(step.partitions) + list(acks) if tp[0] in denied])
    return wire.fetch_response(resp, lambda t, first, last: core.stream.records(first, last + 1),
                               core.node.node_id)


def _pure_fetch(named: m.ShareFetchRequest, wanted, with_acks, acks, close: bool,
                core: GatewayCore) -> m.ShareFetchRequest:
    """The shard's ShareFetch: the session's partitions (fetched, unless the session closes)
    and every partition with acknowledgements, each with the stream's end now."""
    end = core.stream.end_offset(core.now_ms())
    by_topic: dict[str, list[m.ShareFetchPartition]] = {}
    order = list(dict.fromkeys(([] if close else wanted) + with_acks))
    for tid, p in order:
        by_topic.setdefault(tid, []).append(m.ShareFetchPartition(
            p, list(acks.get((tid, p), [])), fetch=not close and (tid, p) in wanted,
            log_end_offset=end))
    return m.ShareFetchRequest(
        group_id=named.group_id, member_id=named.member_id,
        topics=[m.ShareFetchTopic(t, ps) for t, ps in by_topic.items()],
        max_records=named.max_records, close_session=close)


def _acquired(resp: m.ShareFetchResponse) -> int:
    return sum(a.last_offset - a.first_offset + 1
               for t in resp.topics for p in t.partitions for a in p.acquired)


async def _wait_for_records(core: GatewayCore, request: m.ShareFetchRequest,
                            first: m.ShareFetchResponse, max_wait_ms: int) -> m.ShareFetchResponse:
    """Ask again as the stream grows until something is acquired or ``max_wait_ms`` passes;
    the acknowledgements of ``first`` (applied once) keep their results."""
    deadline = core.now_ms() + min(max(max_wait_ms, 0), MAX_SHARE_FETCH_WAIT_MS)
    retry = dataclasses.replace(request, topics=[
        m.ShareFetchTopic(t.topic_id, [dataclasses.replace(p, acknowledgements=[])
                                       for p in t.partitions if p.fetch])
        for t in request.topics])
    retry.topics = [t for t in retry.topics if t.partitions]
    resp = first
    while core.now_ms() < deadline and retry.topics:
        now = core.now_ms()
        await asyncio.sleep(max(1, min(deadline - now, core.stream.next_batch_in_ms(now))) / 1000)
        end = core.stream.end_offset(core.now_ms())
        for t in retry.topics:
            for p in t.partitions:
                p.log_end_offset = end
        again = await core.router.call(retry)
        if again.error_code != Errors.NONE:
            break
        resp = again
        if _acquired(again):
            break
    if resp is not first:
        _keep_ack_results(resp, first)
    return resp


def _keep_ack_results(resp: m.ShareFetchResponse, first: m.ShareFetchResponse) -> None:
    results = {(t.topic_id, p.partition): p for t in first.topics for p in t.partitions}
    for t in resp.topics:
        for p in t.partitions:
            old = results.pop((t.topic_id, p.partition), None)
            if old is not None:
                p.acknowledge_error_code = old.acknowledge_error_code
                p.acknowledge_error_message = old.acknowledge_error_message
    by_topic = {t.topic_id: t for t in resp.topics}
    for (tid, _), p in results.items():  # acknowledged only, not fetched again
        if tid not in by_topic:
            by_topic[tid] = m.ShareFetchResponseTopic(tid, [])
            resp.topics.append(by_topic[tid])
        by_topic[tid].partitions.append(p)


def _add_denied(resp, pairs) -> None:
    """TOPIC_AUTHORIZATION_FAILED for each partition of a topic the principal may not read."""
    entry = (m.ShareFetchResponsePartition if isinstance(resp, m.ShareFetchResponse)
             else m.ShareAcknowledgeResponsePartition)
    topic = (m.ShareFetchResponseTopic if isinstance(resp, m.ShareFetchResponse)
             else m.ShareAcknowledgeResponseTopic)
    for tid, p in dict.fromkeys(pairs):
        kw = {"error_code": Errors.TOPIC_AUTHORIZATION_FAILED,
              "error_message": DENIED_TOPIC.format(topic=tid)}
        if entry is m.ShareFetchResponsePartition:
            kw.update(acknowledge_error_code=Errors.TOPIC_AUTHORIZATION_FAILED)
        resp.topics.append(topic(tid, [entry(p, **kw)]))


async def share_acknowledge(core: GatewayCore, req: WireRequest) -> dict:
    body = req.body
    index = await core.topics_knowing(uuids=[t["topic_id"] for t in body.get("topics", [])])
    request = wire.acknowledge_request(body, index)
    if not core.may(req, "READ", GROUP, request.group_id):
        return wire.refused(E.group_authorization_failed.value,
                            DENIED_GROUP.format(group=request.group_id))
    step = core.share_sessions.acknowledge(request.group_id, request.member_id,
                                           body.get("share_session_epoch", 0), core.now_ms())
    if step.error_code:
        return wire.refused(step.error_code, step.error_message)
    denied = _denied_topics(core, req, index, {t.topic_id for t in request.topics})
    pairs = [(t.topic_id, p.partition) for t in request.topics if t.topic_id in denied
             for p in t.partitions]
    request.topics = [t for t in request.topics if t.topic_id not in denied]
    request.close_session = step.close
    resp = await core.router.call(request)
    core.share_sessions.answered(request.group_id, request.member_id, resp.error_code)
    _add_denied(resp, pairs)
    return wire.acknowledge_response(resp, core.node.node_id)



# ------------------------------------------------------------------ share-offset admin


async def describe_share_group_offsets(core: GatewayCore, req: WireRequest) -> dict:
    """Each group asked of its partition, with the stream's end now for the lag, as Kafka's
    ``KafkaApis`` answers: DESCRIBE on the group; of every topic (none named), only those the
    principal may DESCRIBE, the others left out; of named topics, those it may not answered
    TOPIC_AUTHORIZATION_FAILED."""
    replies = []
    for request in await pure(req.api.decode, req.body):
        if not core.may(req, "DESCRIBE", GROUP, request.group_id):
            replies.append(m.DescribeShareGroupOffsetsResponse(
                error_code=Errors.GROUP_AUTHORIZATION_FAILED, group_id=request.group_id,
                error_message=DENIED_GROUP.format(group=request.group_id)))
            continue
        hidden = []
        if request.topics is not None:
            denied = {n for n in {t.topic_name for t in request.topics}  # each name once
                      if not core.may(req, "DESCRIBE", TOPIC, n)}
            hidden = [t for t in request.topics if t.topic_name in denied]
            request.topics = [t for t in request.topics if t.topic_name not in denied]
        request.log_end_offset = core.stream.end_offset(core.now_ms())
        reply = await core.router.call(request)
        reply.group_id = request.group_id
        if reply.error_code == Errors.NONE:
            if request.topics is None:
                reply.topics = [t for t in reply.topics
                                if core.may(req, "DESCRIBE", TOPIC, t.topic_name)]
            reply.topics += [m.DescribeShareGroupOffsetsTopic(t.topic_name, None, [
                m.DescribeShareGroupOffsetsPartition(
                    p, error_code=Errors.TOPIC_AUTHORIZATION_FAILED,
                    error_message=DENIED_TOPIC.format(topic=t.topic_name))
                for p in t.partitions]) for t in hidden]
        replies.append(reply)
    return await pure(req.api.encode, replies)


async def _share_offsets_change(core: GatewayCore, req: WireRequest, operation: str,
                                topics: list[str]) -> dict:
    request = await pure(req.api.decode, req.body)
    if not core.may(req, operation, GROUP, request.group_id):
        return await pure(req.api.encode, error_response(request, Errors.GROUP_AUTHORIZATION_FAILED,
                                             DENIED_GROUP.format(group=request.group_id)))
    hidden = [t for t in dict.fromkeys(topics) if not core.may(req, "READ", TOPIC, t)]
    if hidden:
        return await pure(req.api.encode, error_response(
            request, Errors.TOPIC_AUTHORIZATION_FAILED, DENIED_TOPIC.format(topic=hidden[0])))
    return await pure(req.api.encode, await core.router.call(request))


async def alter_share_group_offsets(core: GatewayCore, req: WireRequest) -> dict:
    """READ on the group and on every topic named, as Kafka asks."""
    return await _share_offsets_change(core, req, "READ",
                                       [t["topic_name"] for t in req.body.get("topics", [])])


async def delete_share_group_offsets(core: GatewayCore, req: WireRequest) -> dict:
    """DELETE on the group, READ on every topic named, as Kafka asks."""
    return await _share_offsets_change(core, req, "DELETE",
                                       [t["topic_name"] for t in req.body.get("topics", [])])
