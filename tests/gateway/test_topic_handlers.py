"""The gateway's admin handlers against requests a fuzzer writes (issue 30): DescribeConfigs
naming a group many times asks the controller once, in one call, and still answers every
entry, as Kafka does; CreateTopics and CreatePartitions adding more than 10,000 partitions in
all are refused whole, as Kafka's controller refuses them. No Ray: a stand-in core that counts
the controller's calls."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from actors.gateway import topic_handlers
from actors.gateway.serving import WireRequest
from protocol.api import BY_API_KEY
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.metadata import TopicMetadata
from protocol.wire import configs
from protocol.wire.codec import RequestHeader
from protocol.wire.topics import TopicIndex

DESCRIBE_CONFIGS = 32


def _core(calls: list) -> SimpleNamespace:
    async def topics(refresh: bool = False) -> TopicIndex:
        return TopicIndex()

    async def group_configs_of(names: list[str]) -> dict:
        calls.append(list(names))
        return {n: GroupConfig(consumer_session_timeout_ms=9000) for n in names}

    return SimpleNamespace(topics=topics, may=lambda *args: True, config=CoordinatorConfig(),
                           controller=SimpleNamespace(group_configs_of=SimpleNamespace(
                               remote=group_configs_of)))


def test_describe_configs_naming_a_group_10000_times_asks_the_controller_once():
    calls: list = []
    resource = {"resource_type": configs.GROUP, "resource_name": "billing",
                "configuration_keys": ["consumer.session.timeout.ms"]}
    body = {"resources": [resource] * 10_000 + [{**resource, "resource_name": "other"}],
            "include_synonyms": False, "include_documentation": False}
    req = WireRequest(RequestHeader(DESCRIBE_CONFIGS, 4, 1, "t"), body, "User:ANONYMOUS",
                      "127.0.0.1", BY_API_KEY[DESCRIBE_CONFIGS])
    reply = asyncio.run(topic_handlers.describe_configs(_core(calls), req))
    assert calls == [["billing", "other"]]
    assert len(reply["results"]) == 10_001
    assert {r["configs"][0]["value"] for r in reply["results"]} == {"9000"}


CREATE_TOPICS, CREATE_PARTITIONS, POLICY_VIOLATION = 19, 37, 44


def _creating_core(asked: list) -> SimpleNamespace:
    """A core whose controller records each creation or growth it is asked for; one topic,
    ``grown``, of 5 partitions."""
    async def topics(refresh: bool = False) -> TopicIndex:
        return TopicIndex([TopicMetadata("grown-id", "grown", 5)])

    async def create_topic(name: str, count: int) -> str:
        asked.append(("create", name, count))
        return f"{name}-id"

    async def add_partitions(name: str, total: int) -> None:
        asked.append(("grow", name, total))

    return SimpleNamespace(topics=topics, may=lambda *args: True, controller=SimpleNamespace(
        create_topic=SimpleNamespace(remote=create_topic),
        add_partitions=SimpleNamespace(remote=add_partitions)))


def _request(api_key: int, version: int, body: dict) -> WireRequest:
    return WireRequest(RequestHeader(api_key, version, 1, "t"), body, "User:ANONYMOUS",
                       "127.0.0.1", BY_API_KEY[api_key])


def _creation(counts: dict[str, int]) -> WireRequest:
    return _request(CREATE_TOPICS, 7, {"topics": [
        {"name": n, "num_partitions": c, "replication_factor": -1, "assignments": [],
         "configs": []} for n, c in counts.items()], "timeout_ms": 1000, "validate_only": False})


def test_create_topics_of_more_than_10000_partitions_in_all_is_refused_whole_as_kafka_does():
    asked: list = []
    reply = asyncio.run(topic_handlers.create_topics(
        _creating_core(asked), _creation({"a": 6_000, "b": 4_000, "c": 1})))
    assert asked == []
    assert [(t["name"], t["error_code"], t["error_message"]) for t in reply["topics"]] == [
        (n, POLICY_VIOLATION, "Excessively large number of partitions per request.")
        for n in ("a", "b", "c")]
    within = asyncio.run(topic_handlers.create_topics(
        _creating_core(asked), _creation({"a": 6_000, "b": 4_000})))
    assert asked == [("create", "a", 6_000), ("create", "b", 4_000)]
    assert {t["error_code"] for t in within["topics"]} == {0}


def test_create_partitions_adding_more_than_10000_in_all_is_refused_whole_as_kafka_does():
    def grow(total: int) -> tuple[list, dict]:
        asked: list = []
        body = {"topics": [{"name": "grown", "count": total, "assignments": None},
                           {"name": "unknown", "count": 50_000, "assignments": None}],
                "timeout_ms": 1000, "validate_only": False}
        reply = asyncio.run(topic_handlers.create_partitions(
            _creating_core(asked), _request(CREATE_PARTITIONS, 3, body)))
        return asked, {r["name"]: (r["error_code"], r["error_message"]) for r in reply["results"]}

    asked, results = grow(10_006)  # 5 -> 10,006: 10,001 added; the unknown topic adds none
    assert asked == []
    assert set(results.values()) == {
        (POLICY_VIOLATION, "Excessively large number of additional partitions per request.")}
    asked, _ = grow(10_005)
    assert ("grow", "grown", 10_005) in asked
