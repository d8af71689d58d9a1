"""Metadata and the topic admin APIs (CreateTopics, DeleteTopics, CreatePartitions) on the wire.

The gateway leads every topic partition, is its only replica, and is the controller; the
other brokers Metadata lists are the coordinators (the partition actors' listeners), which lead
nothing. Topics are the controller's (``cluster.create_topic``); their ids are stable (the
controller keeps them), so Metadata by name and by id agree across calls and restarts. Topics
are never created by Metadata (``allow_auto_topic_creation`` is ignored, as on a Kafka cluster
with ``auto.create.topics.enable=false``). The admin requests are planned here (checked field
by field, Kafka's codes for what is wrong) and their outcomes written back here; the gateway
only asks the controller in between.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kio.schema.errors import ErrorCode as E

from protocol.metadata import TopicMetadata
from protocol.wire.fast_metadata import UniformPartitions
from protocol.wire.ids import topic_uuid, uuid_topic_id

# Kafka's ``num.partitions`` default, used when CreateTopics leaves the count to the broker.
DEFAULT_NUM_PARTITIONS = 1
UNKNOWN_AUTHORIZED_OPERATIONS = -(2**31)
CLUSTER_ID = "cohort"


@dataclass(frozen=True)
class Node:
    """A broker as Metadata and FindCoordinator name it: the gateway, or a partition."""

    node_id: int
    host: str
    port: int


class TopicIndex:
    """The controller's topics, found by name or by wire UUID."""

    def __init__(self, topics: Iterable[TopicMetadata] = ()) -> None:
        self.by_name: dict[str, TopicMetadata] = {}
        self.by_uuid: dict[uuid.UUID, TopicMetadata] = {}
        for t in topics:
            self.by_name[t.name] = t
            self.by_uuid[topic_uuid(t.topic_id)] = t

    def topic_id_of(self, value: uuid.UUID | None) -> str:
        """Cohort's id for a wire UUID (a known topic's own id, else the UUID's spelling)."""
        t = self.by_uuid.get(value) if value is not None else None
        return t.topic_id if t is not None else uuid_topic_id(value)

    def name_of(self, topic_id: str) -> str:
        for t in self.by_name.values():
            if t.topic_id == topic_id:
                return t.name
        return ""

    def partitions(self, name: str) -> int | None:
        t = self.by_name.get(name)
        return None if t is None else t.num_partitions


# ------------------------------------------------------------------------------ Metadata


def metadata_response(body: dict, version: int, index: TopicIndex, node: Node,
                      may_describe: Callable[[str], bool],
                      coordinators: Iterable[Node] = ()) -> dict:
    """Metadata's reply: the named topics (or all, filtered by what the principal may see),
    led by ``node``; the brokers are ``node`` and the ``coordinators`` (the partitions'
    listeners: clients drop a broker Metadata no longer names, coordinator or not).

    Each topic named is answered once, however often the request names it: Kafka reads the
    list as a set, and a request naming one topic a million times (3 MB) must not build a
    million times its partitions."""
    requested = body.get("topics")
    if requested is None or (version == 0 and not requested):
        entries = [_topic_entry(t, node) for name, t in sorted(index.by_name.items())
                   if may_describe(name)]
    else:
        entries = [_requested_entry(r, index, node, may_describe)
                   for r in distinct_topics(requested)]
    brokers = [{"node_id": n.node_id, "host": n.host, "port": n.port, "rack": None}
               for n in (node, *coordinators)]
    return {
        "throttle_time": 0,
        "brokers": brokers,
        "cluster_id": CLUSTER_ID,
        "controller_id": node.node_id,
        "topics": entries,
        "cluster_authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS,
    }


def distinct_topics(requested: Iterable[dict]) -> list[dict]:
    """Metadata's named topics, each (name, id) once, in the order first named."""
    first: dict[tuple, dict] = {}
    for r in requested:
        first.setdefault((r.get("name"), r.get("topic_id")), r)
    return list(first.values())


def named_topics(requested: Iterable[dict]) -> tuple[list[str], list[uuid.UUID]]:
    """The names, and the ids of topics named by id alone, a Metadata request asks for, each
    once (``distinct_topics``): what the gateway must know before it answers."""
    distinct = distinct_topics(requested)
    names = dict.fromkeys(t["name"] for t in distinct if t.get("name") is not None)
    uuids = dict.fromkeys(t["topic_id"] for t in distinct
                          if t.get("name") is None and t.get("topic_id"))
    return list(names), list(uuids)


def _requested_entry(req: dict, index: TopicIndex, node: Node,
                     may_describe: Callable[[str], bool]) -> dict:
    name, tid = req.get("name"), req.get("topic_id")
    if name is None and tid is not None and tid.int != 0:
        topic = index.by_uuid.get(tid)
        if topic is None or not may_describe(topic.name):
            return _error_entry(None, tid, E.unknown_topic_id)
        return _topic_entry(topic, node)
    topic = index.by_name.get(name or "")
    if not may_describe(name or ""):
        return _error_entry(name, None, E.topic_authorization_failed)
    if topic is None:
        return _error_entry(name, None, E.unknown_topic_or_partition)
    return _topic_entry(topic, node)


def _topic_entry(t: TopicMetadata, node: Node) -> dict:
    return {
        "error_code": 0,
        "name": t.name,
        "topic_id": topic_uuid(t.topic_id),
        "is_internal": False,
        "partitions": UniformPartitions(t.num_partitions, {
            "leader_id": node.node_id, "leader_epoch": 0, "replica_nodes": [node.node_id],
            "isr_nodes": [node.node_id], "offline_replicas": []}),
        "topic_authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS,
    }


def _error_entry(name: str | None, tid: uuid.UUID | None, error: E) -> dict:
    return {"error_code": error.value, "name": name, "topic_id": tid, "is_internal": False,
            "partitions": [], "topic_authorized_operations": UNKNOWN_AUTHORIZED_OPERATIONS}


# ---------------------------------------------------------------------------- admin plans


@dataclass
class TopicChange:
    """One topic of an admin request: what to do, or the error that stops it."""

    name: str | None
    count: int = 0
    topic_id: uuid.UUID | None = None
    error: int = 0
    message: str | None = None
    # Filled in from the outcome (CreateTopics' reply carries them).
    new_topic_id: str | None = None


DUPLICATE_TOPIC = "Duplicate topic name."


def _named_twice(names: Iterable[str]) -> set[str]:
    """The names that occur more than once, found in one pass."""
    seen: set[str] = set()
    twice: set[str] = set()
    for name in names:
        (twice if name in seen else seen).add(name)
    return twice


def _duplicate(name: str) -> TopicChange:
    return TopicChange(name, error=E.invalid_request.value, message=DUPLICATE_TOPIC)


def plan_create_topics(body: dict) -> list[TopicChange]:
    """CreateTopics' entries, checked: a count both given and implied by assignments, or more
    than one replica (the gateway is the only broker) is refused. A name given twice is
    refused once, INVALID_REQUEST, and none of its entries is created, as Kafka's
    ``ControllerApis`` answers it; found in one pass, so 100,000 entries plan in linear time."""
    entries = body.get("topics", [])
    twice = _named_twice(t["name"] for t in entries)
    plans: dict[str, TopicChange] = {}
    for t in entries:
        name = t["name"]
        if name in plans:
            continue
        plans[name] = _duplicate(name) if name in twice else _plan_creation(t)
    return list(plans.values())


def _plan_creation(t: dict) -> TopicChange:
    name, count, assignments = t["name"], t["num_partitions"], t.get("assignments") or []
    rf = t.get("replication_factor", -1)
    plan = TopicChange(name, count if count != -1 else DEFAULT_NUM_PARTITIONS)
    if assignments and count != -1:
        plan.error = E.invalid_request.value
        plan.message = "Both numPartitions and manual replica assignments were given."
    elif assignments:
        plan.count = len(assignments)
    if not plan.error and rf not in (-1, 1) and not assignments:
        plan.error = E.invalid_replication_factor.value
        plan.message = f"Replication factor: {rf} larger than available brokers: 1."
    return plan


# Kafka's controller refuses a CreateTopics or CreatePartitions that would add more partitions
# than this in all (``ReplicationControlManager.MAX_PARTITIONS_PER_BATCH``), whole.
MAX_PARTITIONS_PER_REQUEST = 10_000
EXCESSIVE_PARTITIONS = "Excessively large number of partitions per request."
EXCESSIVE_ADDED_PARTITIONS = "Excessively large number of additional partitions per request."


def refuse_excessive(plans: list[TopicChange], added: Callable[[TopicChange], int],
                     message: str) -> None:
    """If the plans still to do would add more than MAX_PARTITIONS_PER_REQUEST partitions
    (``added`` says how many each adds), every entry of the request is refused,
    POLICY_VIOLATION, as Kafka's controller fails the request."""
    if sum(added(p) for p in plans if not p.error) > MAX_PARTITIONS_PER_REQUEST:
        for p in plans:
            p.error, p.message = E.policy_violation.value, message


def create_topics_response(plans: list[TopicChange], validate_only: bool) -> dict:
    return {"throttle_time": 0, "topics": [
        {"name": p.name, "topic_id": None if p.error or validate_only or not p.new_topic_id
         else topic_uuid(p.new_topic_id),
         "error_code": p.error, "error_message": p.message, "topic_config_error_code": 0,
         "num_partitions": -1 if p.error else p.count,
         "replication_factor": -1 if p.error else 1, "configs": []}
        for p in plans
    ]}


DUPLICATE_TOPIC_ID = "Duplicate topic id."


def plan_delete_topics(body: dict, version: int, index: TopicIndex) -> list[TopicChange]:
    """DeleteTopics' entries (v6 names topics by name or id; older versions by name). A name
    or an id given twice is refused once, INVALID_REQUEST, and not deleted, as Kafka's
    ``ControllerApis.deleteTopics`` answers it: one topic named 100,000 times is one entry of
    the reply and no deletion, not 100,000 deletions asked of the controller."""
    if version < 6:
        entries = [(n, None) for n in body.get("topic_names", [])]
    else:
        entries = [(t.get("name"), t.get("topic_id")) for t in body.get("topics", [])]
    twice = _named_twice(n for n, tid in entries if not _by_id(n, tid))
    twice_ids = _named_twice(tid for n, tid in entries if _by_id(n, tid))
    plans: dict[object, TopicChange] = {}
    for name, tid in entries:
        if _by_id(name, tid):
            if tid not in plans:
                plans[tid] = _deletion_by_id(tid, index, tid in twice_ids)
        elif name not in plans:
            plans[name] = _duplicate(name) if name in twice else TopicChange(name)
    return list(plans.values())


def _by_id(name: str | None, tid: uuid.UUID | None) -> bool:
    return name is None and tid is not None and tid.int != 0


def _deletion_by_id(tid: uuid.UUID, index: TopicIndex, twice: bool) -> TopicChange:
    if twice:
        return TopicChange(None, topic_id=tid, error=E.invalid_request.value,
                           message=DUPLICATE_TOPIC_ID)
    topic = index.by_uuid.get(tid)
    plan = TopicChange(topic.name if topic else None, topic_id=tid)
    if topic is None:
        plan.error, plan.message = E.unknown_topic_id.value, "Topic id is unknown."
    return plan


def delete_topics_response(plans: list[TopicChange]) -> dict:
    return {"throttle_time": 0, "responses": [
        {"name": p.name, "topic_id": p.topic_id, "error_code": p.error,
         "error_message": p.message}
        for p in plans
    ]}


def plan_create_partitions(body: dict) -> list[TopicChange]:
    """CreatePartitions' entries: a name given twice is refused once (as in CreateTopics)."""
    entries = body.get("topics", [])
    twice = _named_twice(t["name"] for t in entries)
    plans: dict[str, TopicChange] = {}
    for t in entries:
        name = t["name"]
        if name not in plans:
            plans[name] = _duplicate(name) if name in twice else TopicChange(name, t["count"])
    return list(plans.values())


def create_partitions_response(plans: list[TopicChange]) -> dict:
    return {"throttle_time": 0, "results": [
        {"name": p.name, "error_code": p.error, "error_message": p.message} for p in plans
    ]}
