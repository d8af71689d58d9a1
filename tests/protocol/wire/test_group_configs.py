"""Group configs on the wire as Kafka 4.4 answers them (``protocol/wire/configs.py``): the
synonyms ``kafka-configs --describe`` prints, the refusals' words, and ListConfigResources,
which ``kafka-configs`` reads to tell a group that neither exists nor has configs. The
expected values are what the reference broker answered (tests/java_clients compares the tools'
output end to end)."""

from __future__ import annotations

import dataclasses

import pytest

from protocol.config import CoordinatorConfig, GroupConfig
from protocol.wire import configs


def _described(cfg: GroupConfig, broker: CoordinatorConfig, synonyms: bool = True) -> dict:
    reply = configs.describe_group("g", cfg, broker, None, include_synonyms=synonyms)
    return {c["name"]: c for c in reply["configs"]}


def _synonyms(entry: dict) -> list[tuple[int, str, str]]:
    return [(s["source"], s["name"], s["value"]) for s in entry["synonyms"]]


def test_an_override_lists_the_group_then_the_broker_default_as_synonyms():
    entry = _described(GroupConfig(consumer_heartbeat_interval_ms=6000),
                       CoordinatorConfig())["consumer.heartbeat.interval.ms"]
    assert (entry["value"], entry["config_source"]) == ("6000", configs.GROUP_CONFIG)
    assert _synonyms(entry) == [
        (configs.GROUP_CONFIG, "consumer.heartbeat.interval.ms", "6000"),
        (configs.DEFAULT_CONFIG, "group.consumer.heartbeat.interval.ms", "5000")]


def test_a_broker_setting_other_than_the_default_is_a_static_broker_config():
    broker = dataclasses.replace(CoordinatorConfig(), group_consumer_session_timeout_ms=50_000)
    entry = _described(GroupConfig(), broker)["consumer.session.timeout.ms"]
    assert (entry["value"], entry["config_source"]) == ("50000", configs.STATIC_BROKER_CONFIG)
    assert _synonyms(entry) == [
        (configs.STATIC_BROKER_CONFIG, "group.consumer.session.timeout.ms", "50000"),
        (configs.DEFAULT_CONFIG, "group.consumer.session.timeout.ms", "45000")]


def test_a_config_with_no_broker_setting_names_its_default_by_its_own_key():
    entry = _described(GroupConfig(), CoordinatorConfig())["share.auto.offset.reset"]
    assert entry["config_source"] == configs.DEFAULT_CONFIG
    assert _synonyms(entry) == [(configs.DEFAULT_CONFIG, "share.auto.offset.reset", "latest")]


def test_synonyms_only_when_asked():
    described = _described(GroupConfig(consumer_session_timeout_ms=50_000),
                           CoordinatorConfig(), synonyms=False)
    assert all(c["synonyms"] == [] for c in described.values())
    assert described["consumer.session.timeout.ms"]["value"] == "50000"


@pytest.mark.parametrize(("op", "message"), [
    ({"name": "no.such.config", "config_operation": configs.SET, "value": "1"},
     "Unknown group config name: no.such.config"),
    ({"name": "consumer.session.timeout.ms", "config_operation": configs.SET, "value": "abc"},
     "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type "
     "INT"),
])
def test_refusals_say_what_kafka_says(op, message):
    with pytest.raises(configs.ConfigRefused) as refused:
        configs.altered_group_config(GroupConfig(), [op])
    assert refused.value.message == message


def test_list_config_resources_lists_each_type_asked_and_all_when_none_is():
    assert configs.listed_types([configs.GROUP], 1) == (configs.GROUP,)
    assert configs.listed_types([], 1) == configs.LISTED_TYPES
    assert configs.listed_types([], 0) == (configs.CLIENT_METRICS,)
    assert configs.listed_types([1], 1) is None  # not a config resource type
    reply = configs.list_resources((configs.GROUP, configs.TOPIC), topics=["orders"],
                                   brokers=["1000"], groups=["g1"])
    assert reply["error_code"] == 0
    assert reply["config_resources"] == [
        {"resource_name": "g1", "resource_type": configs.GROUP},
        {"resource_name": "orders", "resource_type": configs.TOPIC}]


def test_a_type_named_many_times_lists_its_resources_once():
    """Issue 30's fuzzer named TOPIC thousands of times in one ListConfigResources: every topic
    was listed as often, on the gateway's loop."""
    types = configs.listed_types([configs.TOPIC] * 10_000 + [configs.GROUP, configs.TOPIC], 1)
    assert types == (configs.TOPIC, configs.GROUP)
    reply = configs.list_resources(types, topics=["orders", "payments"], brokers=["0"],
                                   groups=["g1"])
    assert [r["resource_name"] for r in reply["config_resources"]] == ["orders", "payments", "g1"]
    assert configs.listed_types([configs.TOPIC] * 3 + [1], 1) is None  # still refused
