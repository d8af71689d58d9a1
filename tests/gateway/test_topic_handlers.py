"""The gateway's admin handlers against requests that repeat an entry (issue 30's wire fuzzer):
DescribeConfigs naming a group many times asks the controller once, in one call, and still
answers every entry, as Kafka does. No Ray: a stand-in core that counts the controller's
calls."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from actors.gateway import topic_handlers
from actors.gateway.serving import WireRequest
from protocol.api import BY_API_KEY
from protocol.config import CoordinatorConfig, GroupConfig
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
