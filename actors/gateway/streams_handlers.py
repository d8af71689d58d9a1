"""Streams groups (KIP-1071) at the gateway: StreamsGroupHeartbeat and StreamsGroupDescribe,
the internal topics a heartbeat finds missing, and the topology description push (KIP-1331,
refused: no description plugin), as Kafka's ``KafkaApis`` handles them.

ACLs first: READ on the group; with a topology, DESCRIBE on every topic it names
(TOPIC_AUTHORIZATION_FAILED otherwise); DESCRIBE on the group to describe. The partition
actor's reply may name internal topics to create (the pure reply's ``topics_to_create``). The
shard does no I/O, so they are created here, under the caller's principal: CREATE on the
cluster or on each topic, else the reply's MISSING_INTERNAL_TOPICS status says which topics it
may not create. Creation goes through the Controller (which, in front of an upstream, sends
CreateTopics upstream, with the topology's configs and replication factor as Kafka's
coordinator does; embedded, it keeps the configs with the topic) in the background: the
heartbeat never waits for it and never fails for it. A failure is kept per topic for a while
(Kafka's error cache: twice the heartbeat interval) and shown in the MISSING_INTERNAL_TOPICS
status of the heartbeats meanwhile; once the topics are in the metadata image the group
proceeds (``update_metadata``).
"""

from __future__ import annotations

import asyncio
import weakref

from actors.gateway.core import GatewayCore, WireRequest
from actors.gateway.group_handlers import CLUSTER, DENIED_GROUP, GROUP, TOPIC
from actors.gateway.group_handlers import _per_group as per_group
from actors.gateway.topic_handlers import _controller
from actors.runtime.offload import pure
from protocol.api import error_response
from protocol.errors import Errors
from protocol.streams import messages as sm
from protocol.streams.topology import Status, referenced_topics

CLUSTER_NAME = "kafka-cluster"


class TopicCreations:
    """One gateway's internal-topic creations: those in flight, and recent failures
    (topic -> (message, until ms))."""

    def __init__(self) -> None:
        self.in_flight: set[str] = set()
        self.failures: dict[str, tuple[str, int]] = {}
        self.tasks: set[asyncio.Task] = set()

    def errors(self, names, now_ms: int) -> dict[str, str]:
        for name, (_, until) in list(self.failures.items()):
            if until <= now_ms:
                del self.failures[name]
        return {n: self.failures[n][0] for n in names if n in self.failures}


_CREATIONS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def creations_of(core: GatewayCore) -> TopicCreations:
    found = _CREATIONS.get(core)
    if found is None:
        found = _CREATIONS[core] = TopicCreations()
    return found


async def _create(core: GatewayCore, state: TopicCreations, topic: sm.CreatableTopic,
                  ttl_ms: int) -> None:
    try:
        error, message, _ = await _controller(core.controller.create_topic.remote(
            topic.name, topic.num_partitions, None, {kv.key: kv.value for kv in topic.configs},
            topic.replication_factor))
        if error not in (Errors.NONE, Errors.TOPIC_ALREADY_EXISTS):
            state.failures[topic.name] = (f"{Errors(error).name}: {message}",
                                          core.now_ms() + ttl_ms)
        else:
            await core.topics(refresh=True)
    finally:
        state.in_flight.discard(topic.name)


def _add_status(resp: sm.StreamsGroupHeartbeatResponse, detail: str) -> None:
    statuses = list(resp.status or [])
    for i, s in enumerate(statuses):
        if s.status_code == Status.MISSING_INTERNAL_TOPICS:
            statuses[i] = sm.StreamsStatus(s.status_code, f"{s.status_detail}; {detail}")
            break
    else:
        statuses.append(sm.StreamsStatus(Status.MISSING_INTERNAL_TOPICS, detail))
    resp.status = statuses


def create_internal_topics(core: GatewayCore, req: WireRequest,
                           resp: sm.StreamsGroupHeartbeatResponse) -> None:
    """Start creating the reply's missing internal topics the caller may create; say in the
    reply which it may not, and which failed lately (module docstring)."""
    wanted = resp.topics_to_create
    if not wanted:
        return
    state = creations_of(core)
    if core.may(req, "CREATE", CLUSTER, CLUSTER_NAME):
        denied = []
    else:
        denied = sorted(n for n in wanted if not core.may(req, "CREATE", TOPIC, n))
    if denied:
        _add_status(resp, f"Unauthorized to CREATE on topics {', '.join(denied)}.")
        return
    failed = state.errors(wanted, core.now_ms())
    if failed:
        _add_status(resp, "Failed to create internal topics: " + "; ".join(
            f"{n}: {why}" for n, why in sorted(failed.items())))
    ttl = 2 * max(resp.heartbeat_interval_ms, 1)
    for name, topic in sorted(wanted.items()):
        if name in state.in_flight or name in failed:
            continue
        state.in_flight.add(name)
        task = asyncio.get_running_loop().create_task(_create(core, state, topic, ttl))
        state.tasks.add(task)
        task.add_done_callback(state.tasks.discard)


async def streams_group_heartbeat(core: GatewayCore, req: WireRequest) -> dict:
    request = await pure(req.api.decode, req.body, req.client_id, req.client_host, req.version)
    if not core.may(req, "READ", GROUP, request.group_id):
        return await pure(req.api.encode, error_response(
            request, Errors.GROUP_AUTHORIZATION_FAILED,
            DENIED_GROUP.format(group=request.group_id)), req.version)
    if request.topology is not None:
        hidden = sorted(t for t in referenced_topics(request.topology)
                        if not core.may(req, "DESCRIBE", TOPIC, t))
        if hidden:
            return await pure(req.api.encode, error_response(
                request, Errors.TOPIC_AUTHORIZATION_FAILED,
                f"Unauthorized topics {', '.join(hidden)}."), req.version)
    resp = await core.router.call(request)
    if resp.error_code == Errors.NONE:
        core.saw_epoch(request.group_id, resp.member_id, resp.member_epoch)
        create_internal_topics(core, req, resp)
    return await pure(req.api.encode, resp, req.version)


async def streams_group_describe(core: GatewayCore, req: WireRequest) -> dict:
    return await per_group(core, req, "DESCRIBE")


NO_DESCRIPTION_PLUGIN = "The broker has no streams group topology description plugin configured."


async def streams_group_topology_description_update(core: GatewayCore, req: WireRequest) -> dict:
    """KIP-1331's push of a topology description: READ on the group, then refused as Kafka
    4.4 refuses it without its topology description plugin (UNSUPPORTED_VERSION, before any
    look at the group); Cohort keeps no descriptions, and never asks for one."""
    group_id = req.body.get("group_id", "")
    if not core.may(req, "READ", GROUP, group_id):
        error, message = Errors.GROUP_AUTHORIZATION_FAILED, DENIED_GROUP.format(group=group_id)
    else:
        error, message = Errors.UNSUPPORTED_VERSION, NO_DESCRIPTION_PLUGIN
    return {"throttle_time": 0, "error_code": int(error), "error_message": message}
