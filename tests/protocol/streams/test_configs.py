"""The streams group configs on the wire, as the other types' are: DescribeConfigs lists each
with its group override or the broker's ``group.streams.*`` default, IncrementalAlterConfigs
sets and deletes them, and the controller's bounds refuse what Kafka refuses."""

from __future__ import annotations

import pytest

from actors.runtime.controller import _check_group_config
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.errors import CoordinatorError, Errors
from protocol.wire.configs import (
    DEFAULT_CONFIG,
    DELETE,
    GROUP_CONFIG,
    SET,
    STATIC_BROKER_CONFIG,
    altered_group_config,
    describe_group,
)

NAMES = ("streams.session.timeout.ms", "streams.heartbeat.interval.ms",
         "streams.num.standby.replicas", "streams.initial.rebalance.delay.ms",
         "streams.assignment.interval.ms")


def test_describe_lists_the_streams_configs_with_the_groups_override_first():
    current = GroupConfig(streams_num_standby_replicas=1)
    body = describe_group("app", current, CoordinatorConfig(), list(NAMES), True)
    by_name = {c["name"]: c for c in body["configs"]}
    assert set(by_name) == set(NAMES)
    assert by_name["streams.num.standby.replicas"]["value"] == "1"
    assert by_name["streams.num.standby.replicas"]["config_source"] == GROUP_CONFIG
    assert by_name["streams.session.timeout.ms"]["value"] == "45000"
    assert by_name["streams.initial.rebalance.delay.ms"]["synonyms"][-1]["name"] == (
        "group.streams.initial.rebalance.delay.ms")


def test_alter_sets_and_deletes_streams_configs():
    cfg = altered_group_config(GroupConfig(), [
        {"name": "streams.heartbeat.interval.ms", "config_operation": SET, "value": "6000"},
        {"name": "streams.num.standby.replicas", "config_operation": SET, "value": "2"}])
    assert (cfg.streams_heartbeat_interval_ms, cfg.streams_num_standby_replicas) == (6000, 2)
    cfg = altered_group_config(cfg, [{"name": "streams.num.standby.replicas",
                                      "config_operation": DELETE}])
    assert cfg.streams_num_standby_replicas is None


@pytest.mark.parametrize(("field", "value", "key"), [
    ("streams_session_timeout_ms", 1_000, "streams.session.timeout.ms"),
    ("streams_heartbeat_interval_ms", 60_000, "streams.heartbeat.interval.ms"),
    ("streams_num_standby_replicas", 3, "streams.num.standby.replicas"),
    ("streams_initial_rebalance_delay_ms", -1, "streams.initial.rebalance.delay.ms"),
    ("streams_assignment_interval_ms", 15_001, "streams.assignment.interval.ms"),
    ("streams_assignment_interval_ms", -1, "streams.assignment.interval.ms"),
])
def test_the_controller_refuses_streams_configs_out_of_kafkas_bounds(field, value, key):
    with pytest.raises(CoordinatorError) as refused:
        _check_group_config(GroupConfig(**{field: value}), CoordinatorConfig())
    assert refused.value.error == Errors.INVALID_CONFIG and key in refused.value.message


# ----------------------------------------------------------- KIP-1263's assignment interval


def test_the_streams_assignment_interval_has_kafkas_default_and_bounds():
    c = CoordinatorConfig()
    assert (c.group_streams_assignment_interval_ms, c.group_streams_min_assignment_interval_ms,
            c.group_streams_max_assignment_interval_ms) == (1_000, 0, 15_000)


def test_a_streams_interval_above_the_brokers_maximum_is_refused_in_kafkas_words():
    broker = CoordinatorConfig(group_streams_max_assignment_interval_ms=5_000)
    with pytest.raises(CoordinatorError) as refused:
        _check_group_config(GroupConfig(streams_assignment_interval_ms=5_001), broker)
    assert refused.value.error == Errors.INVALID_CONFIG
    assert refused.value.message == (
        "streams.assignment.interval.ms must be in the range 0 to 5000 inclusive.")
    _check_group_config(GroupConfig(streams_assignment_interval_ms=5_000), broker)


def test_the_streams_interval_is_described_with_the_brokers_setting_and_altered():
    key = "streams.assignment.interval.ms"
    broker = CoordinatorConfig(group_streams_assignment_interval_ms=0)
    (entry,) = describe_group("app", GroupConfig(), broker, [key], True)["configs"]
    assert (entry["value"], entry["config_source"]) == ("0", STATIC_BROKER_CONFIG)
    assert [(x["name"], x["value"], x["source"]) for x in entry["synonyms"]] == [
        ("group.streams.assignment.interval.ms", "0", STATIC_BROKER_CONFIG),
        ("group.streams.assignment.interval.ms", "1000", DEFAULT_CONFIG)]
    cfg = altered_group_config(GroupConfig(), [
        {"name": key, "config_operation": SET, "value": "2500"}])
    assert cfg.streams_assignment_interval_ms == 2_500
    (entry,) = describe_group("app", cfg, broker, [key])["configs"]
    assert (entry["value"], entry["config_source"]) == ("2500", GROUP_CONFIG)
