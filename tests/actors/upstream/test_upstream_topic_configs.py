"""A topic Cohort creates in front of an upstream carries the configs it was asked for: the
CreateTopics the controller sends (``actors/upstream/topics.py``) names them, as Kafka's group
coordinator names a streams topology's configs for its internal topics (a changelog's
``cleanup.policy=compact``). Against Apache Kafka 4.4 itself (the reference broker), no Ray."""

from __future__ import annotations

import asyncio
import time

from actors.upstream.settings import UpstreamSettings
from actors.upstream.topics import UpstreamTopics
from tests.conformance.wire import Connection

TOPIC_RESOURCE = 2
UNKNOWN_TOPIC = 3
DEADLINE_S = 30.0


def _configs(bootstrap: str, topic: str, names: list[str]) -> dict[str, str]:
    """The topic's configs, asked until the broker knows the topic (its metadata trails the
    controller's by a moment), within a deadline."""
    deadline = time.monotonic() + DEADLINE_S
    conn = Connection(bootstrap)
    try:
        while True:
            reply = conn.call(32, 4, {"resources": [{
                "resource_type": TOPIC_RESOURCE, "resource_name": topic,
                "configuration_keys": names}], "include_synonyms": False,
                "include_documentation": False})
            (result,) = reply["results"]
            if result["error_code"] != UNKNOWN_TOPIC or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    finally:
        conn.close()
    assert result["error_code"] == 0, result
    return {c["name"]: c["value"] for c in result["configs"]}


def test_a_topic_created_upstream_has_the_configs_and_partitions_it_was_asked_for(
        reference_kafka):
    async def create() -> None:  # one loop: the upstream link belongs to it
        topics = UpstreamTopics(UpstreamSettings.parse(reference_kafka.bootstrap))
        await topics.create_topic("app-store-changelog", 3, {
            "cleanup.policy": "compact", "segment.bytes": "1048576"})
        await topics.create_topic("app-plain", 2)

    asyncio.run(create())
    assert _configs(reference_kafka.bootstrap, "app-store-changelog",
                    ["cleanup.policy", "segment.bytes"]) == {
        "cleanup.policy": "compact", "segment.bytes": "1048576"}
    assert _configs(reference_kafka.bootstrap, "app-plain", ["cleanup.policy"]) == {
        "cleanup.policy": "delete"}  # none named: the broker's default
