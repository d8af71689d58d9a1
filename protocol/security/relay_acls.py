"""Cohort's ACLs on the APIs it relays to an upstream, as Kafka's authorizer checks them (pure).

Cohort talks to its upstream as its own principal, so the upstream's ACLs cannot tell Cohort's
clients apart: Cohort's own must hold on every relayed request, as a Kafka broker's would
(Produce needs WRITE on each topic, Fetch READ, ListOffsets DESCRIBE, CreateTopics CREATE on
the cluster or the topic, a transaction WRITE on its transactional id ...).

A request whose every check passes is relayed as it came, undecoded past its header (the hot
path: one decision per distinct resource). Otherwise, as Kafka answers, the refused entries get
their authorization error and the rest is served: the request is written again without them
(``Plan.allowed``), and their errors are added to the upstream's reply (``Plan.merge``); a
request left with nothing allowed is answered here (``Plan.reply``). An API with no rule here
needs ALTER on the cluster, and a refusal of it closes the connection (``Plan.close``): Kafka's
admin APIs each have their own shape of error, and Cohort relays no admin API it has not
checked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

TOPIC, GROUP, CLUSTER, TRANSACTIONAL_ID = "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID"
CLUSTER_NAME = "kafka-cluster"
TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
# DescribeConfigs' and the alter APIs' resource types (Kafka's ConfigResource.Type).
TOPIC_RESOURCE, BROKER_RESOURCE, BROKER_LOGGER_RESOURCE = 2, 4, 8

# (operation, resource type, name): one check of Kafka's authorizer.
Check = tuple[str, str, str]
May = Callable[[str, str, str], bool]


class TopicEntries(NamedTuple):
    """Where an API's request names topics, and where its reply answers each of them."""

    request_list: str
    name_fields: tuple[str, ...]  # the topic's name field, or (name, id) where ids replaced it
    request_parts: str | None  # its partitions, if the reply answers per partition
    request_part: str
    reply_list: str
    reply_parts: str | None
    reply_part: str
    error: str
    operation: str


TOPIC_APIS: dict[int, TopicEntries] = {
    0: TopicEntries("topic_data", ("name",), "partition_data", "index", "responses",
                    "partition_responses", "index", "error_code", "WRITE"),
    1: TopicEntries("topics", ("topic", "topic_id"), "partitions", "partition", "responses",
                    "partitions", "partition_index", "error_code", "READ"),
    2: TopicEntries("topics", ("name",), "partitions", "partition_index", "topics",
                    "partitions", "partition_index", "error_code", "DESCRIBE"),
    21: TopicEntries("topics", ("name",), "partitions", "partition_index", "topics",
                     "partitions", "partition_index", "error_code", "DELETE"),
    23: TopicEntries("topics", ("topic",), "partitions", "partition", "topics", "partitions",
                     "partition", "error_code", "DESCRIBE"),
    19: TopicEntries("topics", ("name",), None, "", "topics", None, "", "error_code", "CREATE"),
    20: TopicEntries("topics", ("name",), None, "", "responses", None, "", "error_code",
                     "DELETE"),
    37: TopicEntries("topics", ("name",), None, "", "results", None, "", "error_code", "ALTER"),
}
CREATE_TOPICS, DELETE_TOPICS = 19, 20
# The transactional APIs: WRITE on the transactional id, refused with a top-level error.
TRANSACTION_APIS = frozenset({22, 24, 25, 26})
ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN = 24, 25
# The config APIs on topics and brokers (a group's are Cohort's own): per resource.
CONFIG_APIS = {32: ("DESCRIBE_CONFIGS", "results"), 33: ("ALTER_CONFIGS", "responses"),
               44: ("ALTER_CONFIGS", "responses")}
# Read-only cluster APIs a client may send (DescribeCluster, DescribeProducers's topics are
# checked as topics, DescribeTransactions, ListTransactions): DESCRIBE on the cluster.
DESCRIBE_CLUSTER_APIS = frozenset({60, 61, 65, 66})


@dataclass
class Plan:
    """What to do with a relayed request that some check refused (see the module docstring)."""

    allowed: dict[str, Any] | None = None
    reply: dict[str, Any] | None = None
    close: str | None = None
    merge: Callable[[dict[str, Any]], dict[str, Any]] | None = field(default=None, repr=False)


def plan(api_key: int, body: dict[str, Any], may: May,
         topic_name: Callable[[Any], str | None] = lambda _id: None) -> Plan | None:
    """None when every check passes (relay the frame as it came), else what to do. ``may``:
    the authorizer's answer for this principal; ``topic_name``: a topic id's name (Fetch from
    v13 names topics by id only; an unknown id is refused as a topic the principal may not
    see)."""
    if api_key in TOPIC_APIS:
        return _topics(api_key, body, may, topic_name)
    if api_key in TRANSACTION_APIS:
        return _transaction(api_key, body, may)
    if api_key in CONFIG_APIS:
        return _configs(api_key, body, may)
    operation = "DESCRIBE" if api_key in DESCRIBE_CLUSTER_APIS else "ALTER"
    if may(operation, CLUSTER, CLUSTER_NAME):
        return None
    return Plan(close=f"API {api_key} needs {operation} on the cluster")


# ---------------------------------------------------------------------------- topics


def _topics(api_key: int, body: dict, may: May, topic_name: Callable[[Any], str | None]
            ) -> Plan | None:
    shape = TOPIC_APIS[api_key]
    entries = body.get(shape.request_list) or []
    create_anywhere = api_key == CREATE_TOPICS and may("CREATE", CLUSTER, CLUSTER_NAME)
    if api_key == DELETE_TOPICS and not entries:  # DeleteTopics before v6: names only
        names = body.get("topic_names") or []
        entries = [{"name": n} for n in names]
    decided: dict[str, bool] = {}

    def allowed(entry: dict) -> bool:
        name = _name_of(entry, shape, topic_name)
        if name is None:
            return False
        if name not in decided:
            decided[name] = create_anywhere or may(shape.operation, TOPIC, name)
        return decided[name]

    denied = [e for e in entries if not allowed(e)]
    if not denied:
        return None
    kept = [e for e in entries if e not in denied]
    errors = [_refused_entry(e, shape) for e in denied]
    if not kept:
        return Plan(reply={shape.reply_list: errors, "throttle_time": 0, "error_code": 0})
    rest = {**body, shape.request_list: kept}
    if api_key == DELETE_TOPICS and "topic_names" in body:
        rest["topic_names"] = [e["name"] for e in kept]
    return Plan(allowed=rest, merge=lambda reply: {
        **reply, shape.reply_list: [*reply.get(shape.reply_list, []), *errors]})


def _name_of(entry: dict, shape: TopicEntries, topic_name: Callable[[Any], str | None]
             ) -> str | None:
    for f in shape.name_fields:
        if f.endswith("_id") and entry.get(f) is not None:
            return topic_name(entry[f])
        if entry.get(f):
            return entry[f]
    return None


def _refused_entry(entry: dict, shape: TopicEntries) -> dict:
    """The reply's entry for a refused topic: its authorization error on every partition."""
    out = {f: entry[f] for f in shape.name_fields if f in entry}
    if shape.request_parts is None:
        return {**out, shape.error: TOPIC_AUTHORIZATION_FAILED,
                "error_message": "Authorization failed."}
    out[shape.reply_parts] = [
        {shape.reply_part: p[shape.request_part], shape.error: TOPIC_AUTHORIZATION_FAILED,
         "high_watermark": -1, "last_stable_offset": -1, "log_start_offset": -1,
         "base_offset": -1, "offset": -1, "timestamp": -1, "leader_epoch": -1,
         "end_offset": -1, "low_watermark": -1, "preferred_read_replica": -1,
         "aborted_transactions": None, "records": b""}
        for p in entry.get(shape.request_parts) or []]
    return out


# ----------------------------------------------------------------------- transactions


def _transaction(api_key: int, body: dict, may: May) -> Plan | None:
    txn = body.get("transactional_id") or body.get("v3_and_below_transactional_id")
    checks: list[Check] = []
    if txn is not None:
        checks.append(("WRITE", TRANSACTIONAL_ID, txn))
    # InitProducerId without a transactional id (an idempotent producer: Java's default) is
    # let through: Kafka grants it for WRITE on any topic, and it writes nothing by itself
    # (every Produce is checked per topic).
    if api_key == ADD_OFFSETS_TO_TXN and body.get("group_id"):
        checks.append(("READ", GROUP, body["group_id"]))
    topics = body.get("v3_and_below_topics") or []
    if api_key == ADD_PARTITIONS_TO_TXN:
        checks += [("WRITE", TOPIC, t["name"]) for t in topics]
    refused = [c for c in dict.fromkeys(checks) if not may(*c)]
    if not refused:
        return None
    error = {TRANSACTIONAL_ID: TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
             GROUP: GROUP_AUTHORIZATION_FAILED, TOPIC: TOPIC_AUTHORIZATION_FAILED,
             CLUSTER: CLUSTER_AUTHORIZATION_FAILED}[refused[0][1]]
    if api_key == ADD_PARTITIONS_TO_TXN:
        return Plan(reply={"throttle_time": 0, "results_by_topic_v3_and_below": [
            {"name": t["name"], "results_by_partition": [
                {"partition_index": p, "partition_error_code": error}
                for p in t.get("partitions") or []]} for t in topics]})
    return Plan(reply={"throttle_time": 0, "error_code": error, "producer_id": -1,
                       "producer_epoch": -1})


# ---------------------------------------------------------------------------- configs


def _configs(api_key: int, body: dict, may: May) -> Plan | None:
    operation, reply_list = CONFIG_APIS[api_key]
    resources = body.get("resources") or []

    def check(r: dict) -> tuple[bool, int]:
        if r.get("resource_type") == TOPIC_RESOURCE:
            return may(operation, TOPIC, r.get("resource_name") or ""), TOPIC_AUTHORIZATION_FAILED
        return may(operation, CLUSTER, CLUSTER_NAME), CLUSTER_AUTHORIZATION_FAILED

    verdicts = [(r, *check(r)) for r in resources]
    denied = [(r, err) for r, ok, err in verdicts if not ok]
    if not denied:
        return None
    errors = [{"error_code": err, "error_message": "Authorization failed.",
               "resource_type": r["resource_type"], "resource_name": r["resource_name"],
               "configs": []} for r, err in denied]
    kept = [r for r, ok, _ in verdicts if ok]
    if not kept:
        return Plan(reply={"throttle_time": 0, reply_list: errors})
    return Plan(allowed={**body, "resources": kept}, merge=lambda reply: {
        **reply, reply_list: [*reply.get(reply_list, []), *errors]})
