"""The broker-side APIs: Metadata, the topic admin APIs, group configs, and the synthetic
stream (ListOffsets, Fetch, Produce's refusal).

Topic changes go to the controller, which pushes them to the partitions as
``cluster.create_topic`` does; so a topic made with Kafka's admin client is one every Ray
consumer sees. ACLs as Kafka checks them: DESCRIBE on a topic to see it, CREATE on the
cluster (or the topic) to create it, DELETE and ALTER to delete or grow it, READ to fetch it,
DESCRIBE_CONFIGS and ALTER_CONFIGS on a group for its configs.
"""

from __future__ import annotations

import asyncio
import dataclasses

from kio.schema.errors import ErrorCode as E
from ray.exceptions import RayTaskError

from actors.gateway.core import GatewayCore, WireRequest
from actors.gateway.kept_metadata import metadata_question
from actors.runtime.controller import _check_group_config
from actors.runtime.offload import pure
from protocol.config import CoordinatorConfig
from protocol.errors import CoordinatorError, Errors
from protocol.wire import configs, stream, topics, upstream
from protocol.wire.codec import EncodedBody
from protocol.wire.fetch_response import fetch_body_parts
from protocol.wire.upstream import METADATA
from protocol.wire.upstream_metadata import renamed_metadata

TOPIC, CLUSTER, GROUP = "TOPIC", "CLUSTER", "GROUP"
CLUSTER_NAME = "kafka-cluster"
# The longest a Fetch at the log end waits for the next batch (besides the client's max_wait).
MAX_FETCH_WAIT_MS = 5_000


async def metadata(core: GatewayCore, req: WireRequest) -> dict:
    """The topics as the controller last pushed them (re-read only for a topic the listener
    does not know), led by the gateway; the brokers are the gateway and every coordinator.
    Served alike by the gateway and by each partition's listener. In front of an upstream:
    the upstream's answer, naming Cohort's listeners (``upstream_metadata``)."""
    if core.upstream is not None:
        return await upstream_metadata(core, req)
    # A step per topic named: off the loop for a big request (one naming a topic 100,000
    # times held partitions' loops in issue 30's fuzz), each topic once.
    names, uuids = await pure(topics.named_topics, req.body.get("topics") or [])
    index = await core.topics_knowing(names=names, uuids=uuids)
    return await pure(topics.metadata_response, req.body, req.version, index, core.leader,
                      lambda t: core.may(req, "DESCRIBE", TOPIC, t), core.brokers.nodes())


async def upstream_metadata(core: GatewayCore, req: WireRequest) -> dict | EncodedBody:
    """The upstream's Metadata for the client's question, its brokers named by the Cohort
    listeners that present them, Cohort's coordinators added, and the topics the principal
    may not DESCRIBE refused (named) or left out (all topics), as Kafka's authorizer does.
    Without an authorizer, asked and written once per question while it holds
    (``kept_metadata``): every consumer of a group asks the same one."""
    if not core.options.authorizer:
        key = await pure(metadata_question, req, core.leader, tuple(core.brokers.nodes()))
        if key is not None:
            return await core.kept_metadata.answer(
                (*key, tuple(sorted(core.listeners.items()))), core.topics_now(),
                lambda: _written_upstream_metadata(core, req))
    return await _upstream_metadata(core, req)


async def _written_upstream_metadata(core: GatewayCore, req: WireRequest) -> EncodedBody:
    """The upstream's reply with only its brokers rewritten (``upstream_metadata``)."""
    framed = await core.upstream.call_framed_at(METADATA, req.version, req.body)
    coordinators = [(n.node_id, n.host, n.port) for n in core.brokers.nodes()]
    return EncodedBody(renamed_metadata(req.version, framed[4:], core.listener_of,
                                        coordinators))


async def _upstream_metadata(core: GatewayCore, req: WireRequest) -> dict:
    body = await core.upstream.call_at(METADATA, req.version, req.body)
    coordinators = [(n.node_id, n.host, n.port) for n in core.brokers.nodes()]
    body = upstream.rewrite_body(METADATA, req.version, body, core.listener_of, coordinators)
    if core.options.authorizer:
        named = req.body.get("topics") is not None
        body["topics"] = [
            t if core.may(req, "DESCRIBE", TOPIC, t.get("name") or "") else
            {**t, "error_code": E.topic_authorization_failed.value, "partitions": [],
             "is_internal": False}
            for t in body.get("topics", [])
            if named or core.may(req, "DESCRIBE", TOPIC, t.get("name") or "")]
    return body


async def _controller(call) -> tuple[int, str | None, object]:
    """(error code, message, result) of a controller call that may refuse."""
    try:
        return 0, None, await call
    except RayTaskError as e:
        cause = e.cause
        if isinstance(cause, CoordinatorError):
            return int(cause.error), cause.message, None
        return E.unknown_server_error.value, str(cause), None
    except CoordinatorError as e:
        return int(e.error), e.message, None


async def create_topics(core: GatewayCore, req: WireRequest) -> dict:
    plans = await pure(topics.plan_create_topics, req.body)
    validate_only = req.body.get("validate_only", False)
    index = await core.topics(refresh=True)
    may_create = core.may(req, "CREATE", CLUSTER, CLUSTER_NAME)
    for plan in plans:
        if not plan.error and not (may_create or core.may(req, "CREATE", TOPIC, plan.name)):
            plan.error, plan.message = E.topic_authorization_failed.value, "Not authorized."
    topics.refuse_excessive(plans, lambda p: p.count, topics.EXCESSIVE_PARTITIONS)
    for plan in plans:
        if plan.error:
            continue
        if validate_only:
            if plan.name in index.by_name:
                plan.error = E.topic_already_exists.value
                plan.message = f"Topic '{plan.name}' already exists."
        else:
            plan.error, plan.message, plan.new_topic_id = await _controller(
                core.controller.create_topic.remote(plan.name, plan.count))
    await core.topics(refresh=True)
    return await pure(topics.create_topics_response, plans, validate_only)


async def delete_topics(core: GatewayCore, req: WireRequest) -> dict:
    index = await core.topics(refresh=True)
    plans = await pure(topics.plan_delete_topics, req.body, req.version, index)
    for plan in plans:
        if plan.error:
            continue
        if not core.may(req, "DELETE", TOPIC, plan.name or ""):
            plan.error, plan.message = E.topic_authorization_failed.value, "Not authorized."
            continue
        plan.error, plan.message, _ = await _controller(
            core.controller.delete_topic.remote(plan.name))
    await core.topics(refresh=True)
    return await pure(topics.delete_topics_response, plans)


async def create_partitions(core: GatewayCore, req: WireRequest) -> dict:
    plans = await pure(topics.plan_create_partitions, req.body)
    validate_only = req.body.get("validate_only", False)
    index = await core.topics(refresh=True)
    for plan in plans:
        if not plan.error and not core.may(req, "ALTER", TOPIC, plan.name):
            plan.error, plan.message = E.topic_authorization_failed.value, "Not authorized."
    topics.refuse_excessive(  # an unknown topic adds none (it is refused on its own)
        plans, lambda p: max(0, p.count - (index.partitions(p.name) or p.count)),
        topics.EXCESSIVE_ADDED_PARTITIONS)
    for plan in plans:
        if plan.error:
            continue
        if validate_only:
            now = index.partitions(plan.name)
            if now is None:
                plan.error = E.unknown_topic_or_partition.value
            elif plan.count <= now:
                plan.error = E.invalid_partitions.value
                plan.message = f"Topic currently has {now} partitions, >= {plan.count}."
        else:
            plan.error, plan.message, _ = await _controller(
                core.controller.add_partitions.remote(plan.name, plan.count))
    await core.topics(refresh=True)
    return await pure(topics.create_partitions_response, plans)


# ------------------------------------------------------------------------- group configs


async def describe_configs(core: GatewayCore, req: WireRequest) -> dict:
    """Each resource answered in turn; the groups' configs asked of the controller in one call,
    each group once (a request naming a group 100,000 times was 100,000 calls on the loop)."""
    index = await core.topics(refresh=True)
    resources = req.body.get("resources", [])
    allowed = await pure(_refusals, resources,
                         lambda kind, name: core.may(req, "DESCRIBE_CONFIGS", kind, name))
    groups = list(dict.fromkeys(
        r["resource_name"] for r, refusal in zip(resources, allowed, strict=True)
        if refusal is None and r["resource_type"] == configs.GROUP))
    current = await core.controller.group_configs_of.remote(groups) if groups else {}
    return await pure(_described, resources, allowed, current, index, core.config,
                      bool(req.body.get("include_synonyms")))


def _refusals(resources: list[dict], may) -> list[E | None]:
    """Each resource's refusal (None: allowed to describe its configs)."""
    out = []
    for r in resources:
        rtype, name = r["resource_type"], r["resource_name"]
        kind, rname = {configs.GROUP: (GROUP, name), configs.TOPIC: (TOPIC, name)}.get(
            rtype, (CLUSTER, CLUSTER_NAME))
        out.append(None if may(kind, rname) else
                   E.group_authorization_failed if kind == GROUP else
                   E.topic_authorization_failed if kind == TOPIC else
                   E.cluster_authorization_failed)
    return out


def _described(resources: list[dict], refusals: list[E | None], current: dict,
               index, broker: CoordinatorConfig, synonyms: bool) -> dict:
    results = []
    for r, refusal in zip(resources, refusals, strict=True):
        rtype, name = r["resource_type"], r["resource_name"]
        if refusal is not None:
            results.append(configs.refused(rtype, name, refusal, "Not authorized."))
        elif rtype == configs.GROUP:
            results.append(configs.describe_group(name, current[name], broker,
                                                  r.get("configuration_keys"), synonyms))
        else:
            results.append(configs.describe_other(r, index))
    return {"throttle_time": 0, "results": results}


async def incremental_alter_configs(core: GatewayCore, req: WireRequest) -> dict:
    responses = []
    for r in req.body.get("resources", []):
        rtype, name = r["resource_type"], r["resource_name"]
        if rtype != configs.GROUP:
            responses.append(configs.alter_result(
                rtype, name, E.invalid_request, "Cohort alters group configs only."))
        elif not core.may(req, "ALTER_CONFIGS", GROUP, name):
            responses.append(configs.alter_result(rtype, name, E.group_authorization_failed,
                                                  "Not authorized."))
        else:
            responses.append(await _alter_group(core, name, r["configs"],
                                                req.body.get("validate_only", False)))
    return {"throttle_time": 0, "responses": responses}


async def list_config_resources(core: GatewayCore, req: WireRequest) -> dict:
    """The resources that have configs (KIP-1142; v0 is KIP-714's client metrics only), as
    Kafka 4.4 lists them: every topic, every broker (and its logger), the groups with a
    dynamic config; Cohort has no client metrics resources. DESCRIBE_CONFIGS on the cluster,
    as Kafka asks. ``kafka-configs --describe`` of a group reads it to tell a group that
    neither exists nor has configs."""
    if not core.may(req, "DESCRIBE_CONFIGS", CLUSTER, CLUSTER_NAME):
        return configs.list_resources_refused(E.cluster_authorization_failed)
    wanted = configs.listed_types(req.body.get("resource_types"), req.version)
    if wanted is None:
        return configs.list_resources_refused(E.unsupported_version)
    index = await core.topics() if configs.TOPIC in wanted else None
    groups = (await core.controller.configured_groups.remote()
              if configs.GROUP in wanted else [])
    brokers = sorted({core.leader.node_id, *(node.node_id for node in core.brokers.nodes())})
    return configs.list_resources(
        wanted, topics=sorted(index.by_name) if index is not None else [],
        brokers=[str(b) for b in brokers], groups=groups)


async def _alter_group(core: GatewayCore, name: str, ops: list[dict], validate_only: bool
                       ) -> dict:
    try:
        new = configs.altered_group_config(await core.controller.group_config.remote(name), ops)
        if not name:  # Kafka's answer to a GROUP resource without a name
            raise CoordinatorError(Errors.INVALID_REQUEST, "The group id must not be empty.")
        _check_group_config(new, core.config)
    except configs.ConfigRefused as e:
        return configs.alter_result(configs.GROUP, name, e.error, e.message)
    except CoordinatorError as e:
        return configs.alter_result(configs.GROUP, name, E(int(e.error)), e.message)
    if not validate_only:
        error, message, _ = await _controller(
            core.controller.set_group_config.remote(name, **dataclasses.asdict(new)))
        return configs.alter_result(configs.GROUP, name, E(error), message)
    return configs.alter_result(configs.GROUP, name)


# ------------------------------------------------------------------------------- stream


async def list_offsets(core: GatewayCore, req: WireRequest) -> dict:
    index = await core.topics_knowing(names=[t["name"] for t in req.body.get("topics", [])])
    return await pure(stream.list_offsets_response, req.body, index, core.stream,
                      core.now_ms(), lambda t: core.may(req, "DESCRIBE", TOPIC, t))


async def fetch(core: GatewayCore, req: WireRequest) -> EncodedBody:
    """Records from each fetch offset; at the log end, wait for the next batch (at most the
    client's ``max_wait``), as a broker parks a fetch until ``min_bytes`` arrive. The reply
    is written without kio, around the cached batches (``protocol/wire/fetch_response.py``);
    what one reply may cost is bounded in ``protocol/wire/stream.py``."""
    body = req.body
    index = await core.topics_knowing(names=[t["topic"] for t in body.get("topics", [])])
    may_read = lambda t: core.may(req, "READ", TOPIC, t)  # noqa: E731
    # A fetch naming thousands of partitions (a big request) is answered off the loop.
    reply, count = await pure(stream.fetch_response, body, index, core.stream, core.now_ms(),
                              may_read)
    wait_ms = min(body.get("max_wait", 0), MAX_FETCH_WAIT_MS)
    if wait_ms > 0 and body.get("min_bytes", 1) > 0:
        # Parked until a batch brings records or the wait is over, not just until the next
        # batch: a batch may bring none (a stream of no records, or fewer than one a batch),
        # and answering empty at each made every idle consumer fetch every batch interval:
        # 5.0 Fetches a consumer-second against Kafka's 2.0 (max_wait 500 ms) for
        # bench/groups.py's consumers of a stream of no records.
        deadline_ms = core.now_ms() + wait_ms
        while (not stream.fetch_answers_now(reply, count)
               and (left_ms := deadline_ms - core.now_ms()) > 0):
            if core.stream.grows:
                left_ms = min(left_ms, core.stream.next_batch_in_ms(core.now_ms()))
            await asyncio.sleep(left_ms / 1000)
            reply, count = await pure(stream.fetch_response, body, index, core.stream,
                                      core.now_ms(), may_read)
    return EncodedBody(await pure(fetch_body_parts, req.version, reply))


async def produce(core: GatewayCore, req: WireRequest) -> dict | None:
    if req.body.get("acks", -1) == 0:
        return None  # acks=0: Kafka sends no response at all
    return await pure(stream.produce_response, req.body)
