"""Cohort's ACLs on relayed APIs (``protocol.security.relay_acls``): what a Kafka broker's
authorizer would refuse is refused, entry by entry, and the rest goes upstream."""

from __future__ import annotations

import uuid

from protocol.security.relay_acls import plan

ALLOWED = {("WRITE", "TOPIC", "ok"), ("READ", "TOPIC", "ok"), ("DESCRIBE", "TOPIC", "ok"),
           ("WRITE", "TRANSACTIONAL_ID", "tx-ok"), ("DESCRIBE_CONFIGS", "TOPIC", "ok")}


def may(op: str, rtype: str, name: str) -> bool:
    return (op, rtype, name) in ALLOWED


def _produce(*topics: str) -> dict:
    return {"transactional_id": None, "acks": -1, "timeout": 1000, "topic_data": [
        {"name": t, "partition_data": [{"index": 0, "records": b"r"},
                                       {"index": 1, "records": b"r"}]} for t in topics]}


def test_a_produce_to_allowed_topics_is_relayed_as_it_came():
    assert plan(0, _produce("ok", "ok"), may) is None


def test_a_produce_to_a_refused_topic_alone_is_answered_here_per_partition():
    p = plan(0, _produce("secret"), may)
    assert p.allowed is None and p.close is None
    (entry,) = p.reply["responses"]
    assert entry["name"] == "secret"
    assert [(r["index"], r["error_code"]) for r in entry["partition_responses"]] == [
        (0, 29), (1, 29)]


def test_a_mixed_produce_relays_the_allowed_topics_and_adds_the_refused_ones_to_the_reply():
    p = plan(0, _produce("ok", "secret"), may)
    assert [t["name"] for t in p.allowed["topic_data"]] == ["ok"]
    merged = p.merge({"throttle_time": 0, "responses": [
        {"name": "ok", "partition_responses": [{"index": 0, "error_code": 0}]}]})
    assert [(t["name"], t["partition_responses"][0]["error_code"])
            for t in merged["responses"]] == [("ok", 0), ("secret", 29)]


def test_a_fetch_by_topic_id_is_checked_by_the_topics_name_and_an_unknown_id_is_refused():
    known, unknown = uuid.uuid4(), uuid.uuid4()
    body = {"topics": [{"topic_id": known, "partitions": [{"partition": 0}]},
                       {"topic_id": unknown, "partitions": [{"partition": 3}]}]}
    p = plan(1, body, may, {known: "ok"}.get)
    assert [t["topic_id"] for t in p.allowed["topics"]] == [known]
    added = p.merge({"responses": []})["responses"]
    assert added[0]["topic_id"] == unknown and added[0]["partitions"][0]["error_code"] == 29


def test_creating_a_topic_needs_create_on_the_cluster_or_the_topic():
    body = {"topics": [{"name": "new"}], "timeout": 1, "validate_only": False}
    assert plan(19, body, may).reply["topics"][0]["error_code"] == 29
    assert plan(19, body, lambda op, rt, n: (op, rt) == ("CREATE", "CLUSTER")) is None
    assert plan(19, body, lambda op, rt, n: (op, rt, n) == ("CREATE", "TOPIC", "new")) is None


def test_a_transaction_needs_write_on_its_transactional_id():
    assert plan(22, {"transactional_id": "tx-ok"}, may) is None
    refused = plan(22, {"transactional_id": "tx-other"}, may)
    assert refused.reply["error_code"] == 53
    assert plan(22, {"transactional_id": None}, may) is None  # idempotent: Produce is checked
    assert plan(26, {"transactional_id": "tx-other", "committed": True},
                may).reply["error_code"] == 53


def test_configs_of_a_topic_are_refused_per_resource():
    body = {"resources": [{"resource_type": 2, "resource_name": "ok"},
                          {"resource_type": 2, "resource_name": "secret"},
                          {"resource_type": 4, "resource_name": "1"}]}
    p = plan(32, body, may)
    assert [r["resource_name"] for r in p.allowed["resources"]] == ["ok"]
    errors = {r["resource_name"]: r["error_code"] for r in p.merge({"results": []})["results"]}
    assert errors == {"secret": 29, "1": 31}


def test_an_admin_api_without_a_rule_needs_alter_on_the_cluster_or_closes():
    assert plan(30, {}, may).close  # CreateAcls relayed upstream as Cohort: never unchecked
    assert plan(30, {}, lambda op, rt, n: (op, rt) == ("ALTER", "CLUSTER")) is None
    assert plan(60, {}, lambda op, rt, n: (op, rt) == ("DESCRIBE", "CLUSTER")) is None
