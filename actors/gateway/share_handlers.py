"""Share groups (KIP-932) at the gateway: membership, ShareFetch and ShareAcknowledge.

ShareGroupHeartbeat and ShareGroupDescribe go to the group's partition actor as the KIP-848
requests do. For ShareFetch and ShareAcknowledge the gateway plays the share-partition
leader of every topic partition (of the synthetic stream, or of the upstream's partitions in
front of one: ``share_records``) while the group's partition actor keeps the share-partitions'
state (what is acquired, by whom, until when), durably. So a fetch is: check the member's share
session here (``protocol.wire.share_session``), read the log bounds of the session's
partitions, send one pure ShareFetch naming them, with those bounds, to the group's partition
actor, and send the record batches holding the offsets it acquired. A fetch that acquires
nothing waits for the log to grow and asks again (without the acknowledgements, which applied
once), up to the client's ``max_wait``.

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
from actors.gateway.share_records import SHARD_ASK_MS, records_of
from actors.runtime.offload import pure
from protocol import messages as m
from protocol.api import error_response
from protocol.errors import Errors
from protocol.share.messages import ACK_RELEASE
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
    # A step per entry named: off the loop for a big request (issue 30's fuzzer repeated a
    # ShareFetch's topics and forgotten topics by the thousand), as its body was decoded.
    named = await pure(wire.fetch_request, body, index)
    gone = await pure(wire.forgotten, body, index)
    if not core.may(req, "READ", GROUP, named.group_id):
        return wire.refused(E.group_authorization_failed.value,
                            DENIED_GROUP.format(group=named.group_id))
    acks = {(t.topic_id, p.partition): p.acknowledgements
            for t in named.topics for p in t.partitions}
    step = core.share_sessions.fetch(
        named.group_id, named.member_id, body.get("share_session_epoch", 0), list(acks),
        gone, any(acks.values()), core.now_ms(), req.node_id)
    if step.error_code:
        return wire.refused(step.error_code, step.error_message)
    session = () if step.close else step.partitions  # closing, ``partitions`` held: released
    denied = _denied_topics(core, req, index, {t for t, _ in session} | {t for t, _ in acks})
    wanted = [tp for tp in session if tp[0] not in denied]
    with_acks = [tp for tp in acks if tp[0] not in denied and acks[tp]]
    wanted = _rotated(wanted, body.get("share_session_epoch", 0))
    source = records_of(core)
    bounds = {} if step.close else await source.bounds(index, wanted)
    request = _pure_fetch(named, wanted, with_acks, acks, step.close, bounds,
                          source.batch_records())
    request.released = _released(req, step)
    resp = await core.router.call(request)
    core.share_sessions.answered(named.group_id, named.member_id, resp.error_code)
    if not step.close and _acquired(resp) == 0 and resp.error_code == Errors.NONE:
        resp = await _wait_for_records(core, source, index, request, resp,
                                       body.get("max_wait", 0))
    batches, unread = await source.batches(index, resp)
    if unread:
        await _hand_back(core, named, resp, unread)
    _add_denied(resp, [tp for tp in list(session) + list(acks) if tp[0] in denied])
    return wire.fetch_response(resp, lambda t, p, acquired: batches.get((t, p), b""),
                               _node(core, req))


def _released(req: WireRequest, step) -> list[m.TopicPartitions] | None:
    """What a closing session releases: at one upstream broker's listener, only its own
    partitions (the member keeps a session at each broker it fetches from); else all."""
    if not step.close or req.node_id is None:
        return None
    by_topic: dict[str, list[int]] = {}
    for topic_id, p in step.partitions:
        by_topic.setdefault(topic_id, []).append(p)
    return [m.TopicPartitions(t, ps) for t, ps in by_topic.items()]


def _node(core: GatewayCore, req: WireRequest) -> int:
    """The broker this reply speaks for: the upstream broker whose listener the client
    reached, or the gateway's own node."""
    return core.node.node_id if req.node_id is None else req.node_id


def _rotated(partitions: list, session_epoch: int) -> list:
    """The session's partitions starting at the ``session_epoch``-th (Kafka's round-robin
    PartitionRotateStrategy): a fetch fills its ``max_records`` in this order, so with a
    backlog on every partition each fetch starts at a different one and none starves behind
    the first's backlog."""
    if not partitions:
        return partitions
    k = max(session_epoch, 0) % len(partitions)
    return partitions[k:] + partitions[:k]


def _pure_fetch(named: m.ShareFetchRequest, wanted, with_acks, acks, close: bool,
                bounds: dict, batch_records: int) -> m.ShareFetchRequest:
    """The shard's ShareFetch: the session's partitions whose log bounds are known (fetched,
    unless the session closes) and every partition with acknowledgements; ``batch_records``:
    the log's batch length where the source knows it before reading (0: it does not)."""
    by_topic: dict[str, list[m.ShareFetchPartition]] = {}
    order = list(dict.fromkeys(([] if close else [tp for tp in wanted if tp in bounds])
                               + with_acks))
    for tid, p in order:
        start, end = bounds.get((tid, p), (0, 0))
        by_topic.setdefault(tid, []).append(m.ShareFetchPartition(
            p, list(acks.get((tid, p), [])), fetch=not close and (tid, p) in bounds,
            log_end_offset=end, log_start_offset=start, batch_records=batch_records))
    return m.ShareFetchRequest(
        group_id=named.group_id, member_id=named.member_id,
        topics=[m.ShareFetchTopic(t, ps) for t, ps in by_topic.items()],
        max_records=named.max_records, acquire_mode=named.acquire_mode, close_session=close)


def _acquired(resp: m.ShareFetchResponse) -> int:
    return sum(a.last_offset - a.first_offset + 1
               for t in resp.topics for p in t.partitions for a in p.acquired)


async def _wait_for_records(core: GatewayCore, source, index, request: m.ShareFetchRequest,
                            first: m.ShareFetchResponse, max_wait_ms: int) -> m.ShareFetchResponse:
    """Ask again as the log grows until something is acquired or ``max_wait_ms`` passes;
    the acknowledgements of ``first`` (applied once) keep their results. The shard is asked
    when a partition's log grew, and at least every ``SHARD_ASK_MS`` (records others
    released, or whose locks expired, are there to take without new ones)."""
    deadline = core.now_ms() + min(max(max_wait_ms, 0), MAX_SHARE_FETCH_WAIT_MS)
    keys = [(t.topic_id, p.partition) for t in request.topics for p in t.partitions if p.fetch]
    known = {(t.topic_id, p.partition): (p.log_start_offset, p.log_end_offset)
             for t in request.topics for p in t.partitions if p.fetch}
    resp, asked_at = first, core.now_ms()
    while core.now_ms() < deadline and keys:
        now = core.now_ms()
        await asyncio.sleep(max(1, min(deadline - now, source.next_poll_ms(now))) / 1000)
        bounds = await source.bounds(index, keys)
        grew = any(bounds.get(k, (0, -1))[1] > known.get(k, (0, -1))[1] for k in bounds)
        if not grew and core.now_ms() - asked_at < SHARD_ASK_MS:
            continue
        known.update(bounds)
        retry = _retry(request, known)
        if not retry.topics:
            continue
        again, asked_at = await core.router.call(retry), core.now_ms()
        if again.error_code != Errors.NONE:
            break
        resp = again
        if _acquired(again):
            break
    if resp is not first:
        _keep_ack_results(resp, first)
    return resp


def _retry(request: m.ShareFetchRequest, bounds: dict) -> m.ShareFetchRequest:
    """``request`` again without its acknowledgements (they applied once), fetching the
    partitions whose bounds are known, at those bounds."""
    topics = []
    for t in request.topics:
        parts = [dataclasses.replace(p, acknowledgements=[], log_start_offset=bounds[key][0],
                                     log_end_offset=bounds[key][1])
                 for p in t.partitions if p.fetch
                 and (key := (t.topic_id, p.partition)) in bounds]
        if parts:
            topics.append(m.ShareFetchTopic(t.topic_id, parts))
    return dataclasses.replace(request, topics=topics)


async def _hand_back(core: GatewayCore, named: m.ShareFetchRequest,
                     resp: m.ShareFetchResponse, unread: dict) -> None:
    """Release the acquisitions whose records the upstream could not give now, and take them
    out of the reply: sent without records, the client would acknowledge them as gaps."""
    release = m.ShareAcknowledgeRequest(
        group_id=named.group_id, member_id=named.member_id, topics=[
            m.ShareAcknowledgeTopic(tid, [m.ShareAcknowledgePartition(p, [
                m.AcknowledgementBatch(lo, hi, [ACK_RELEASE]) for lo, hi in ranges])])
            for (tid, p), ranges in unread.items()])
    await core.router.call(release)
    for t in resp.topics:
        for p in t.partitions:
            if (t.topic_id, p.partition) in unread:
                p.acquired = []


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
    request = await pure(wire.acknowledge_request, body, index)
    if not core.may(req, "READ", GROUP, request.group_id):
        return wire.refused(E.group_authorization_failed.value,
                            DENIED_GROUP.format(group=request.group_id))
    step = core.share_sessions.acknowledge(request.group_id, request.member_id,
                                           body.get("share_session_epoch", 0), core.now_ms(),
                                           req.node_id)
    if step.error_code:
        return wire.refused(step.error_code, step.error_message)
    denied = _denied_topics(core, req, index, {t.topic_id for t in request.topics})
    pairs = [(t.topic_id, p.partition) for t in request.topics if t.topic_id in denied
             for p in t.partitions]
    request.topics = [t for t in request.topics if t.topic_id not in denied]
    request.close_session = step.close
    request.released = _released(req, step)
    resp = await core.router.call(request)
    core.share_sessions.answered(request.group_id, request.member_id, resp.error_code)
    _add_denied(resp, pairs)
    return wire.acknowledge_response(resp, _node(core, req))



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
        if core.upstream is None:
            request.log_end_offset = core.stream.end_offset(core.now_ms())
        else:
            request.log_end_offsets = await _upstream_ends(core, request)
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


async def _upstream_ends(core: GatewayCore, request: m.DescribeShareGroupOffsetsRequest
                         ) -> list[m.ShareOffsetsEnd]:
    """The upstream's high watermark of each partition ``request`` describes, for the lag: of
    the partitions it names, or (none named) of those the group has state for, which only the
    group's partition knows, so it is asked first."""
    if request.topics is not None:
        wanted = [(t.topic_name, p) for t in request.topics for p in t.partitions]
    else:
        first = await core.router.call(dataclasses.replace(request))
        wanted = [(t.topic_name, p.partition) for t in first.topics or []
                  for p in t.partitions if p.start_offset >= 0]
    ends = await core.upstream.end_offsets(list(dict.fromkeys(wanted))) if wanted else {}
    return [m.ShareOffsetsEnd(name, p, end) for (name, p), end in sorted(ends.items())]


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
