"""KIP-1263's assignment interval as a config: the broker's
``group.consumer.assignment.interval.ms`` (Kafka 4.4: 1,000 ms, bounds
``group.consumer.min/max.assignment.interval.ms`` 0 and 15,000, min <= interval <= max), and
the group config ``consumer.assignment.interval.ms``, described and altered like the other
group configs and refused out of the bounds with INVALID_CONFIG, as Kafka's
``GroupConfig.validate`` refuses it."""

from __future__ import annotations

import pytest

from actors.runtime.controller import _check_group_config, _config_payload
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

KEY = "consumer.assignment.interval.ms"


def test_the_broker_defaults_are_kafkas():
    c = CoordinatorConfig()
    assert (c.group_consumer_assignment_interval_ms, c.group_consumer_min_assignment_interval_ms,
            c.group_consumer_max_assignment_interval_ms) == (1_000, 0, 15_000)


@pytest.mark.parametrize("kind", ["consumer", "share", "streams"])
@pytest.mark.parametrize(("low", "value", "high"), [(0, -1, 15_000), (500, 100, 15_000),
                                                     (0, 20_000, 15_000), (-1, 0, 10)])
def test_a_broker_interval_outside_its_bounds_is_refused(kind, low, value, high):
    with pytest.raises(ValueError, match=f"group_{kind}_assignment_interval_ms"):
        CoordinatorConfig(**{f"group_{kind}_min_assignment_interval_ms": low,
                             f"group_{kind}_assignment_interval_ms": value,
                             f"group_{kind}_max_assignment_interval_ms": high})


def test_the_group_config_overrides_the_broker_interval_and_unset_falls_back():
    broker = CoordinatorConfig(group_consumer_assignment_interval_ms=2_000)
    assert GroupConfig().effective_assignment_interval_ms(broker) == 2_000
    assert GroupConfig(consumer_assignment_interval_ms=0).effective_assignment_interval_ms(
        broker) == 0


@pytest.mark.parametrize("value", [-1, 15_001, 20_000])
def test_the_controller_refuses_a_group_interval_out_of_the_brokers_bounds(value):
    with pytest.raises(CoordinatorError) as refused:
        _check_group_config(GroupConfig(consumer_assignment_interval_ms=value),
                            CoordinatorConfig())
    assert refused.value.error == Errors.INVALID_CONFIG
    assert refused.value.message == f"{KEY} must be in the range 0 to 15000 inclusive."


def test_the_controller_takes_the_bounds_from_the_broker_config():
    broker = CoordinatorConfig(group_consumer_min_assignment_interval_ms=1_000)
    with pytest.raises(CoordinatorError):
        _check_group_config(GroupConfig(consumer_assignment_interval_ms=500), broker)
    for ok in (1_000, 15_000):
        _check_group_config(GroupConfig(consumer_assignment_interval_ms=ok), broker)


def test_describe_lists_the_interval_with_the_groups_override_first():
    body = describe_group("g", GroupConfig(consumer_assignment_interval_ms=3_000),
                          CoordinatorConfig(group_consumer_assignment_interval_ms=0), [KEY], True)
    (entry,) = body["configs"]
    assert (entry["value"], entry["config_source"]) == ("3000", GROUP_CONFIG)
    assert [(s["name"], s["value"], s["source"]) for s in entry["synonyms"]] == [
        (KEY, "3000", GROUP_CONFIG),
        ("group.consumer.assignment.interval.ms", "0", STATIC_BROKER_CONFIG),
        ("group.consumer.assignment.interval.ms", "1000", DEFAULT_CONFIG),
    ]
    (default,) = describe_group("g", GroupConfig(), CoordinatorConfig(), [KEY])["configs"]
    assert (default["value"], default["config_source"]) == ("1000", DEFAULT_CONFIG)


def test_alter_sets_and_deletes_the_interval():
    cfg = altered_group_config(GroupConfig(), [
        {"name": KEY, "config_operation": SET, "value": "2500"}])
    assert cfg.consumer_assignment_interval_ms == 2_500
    cfg = altered_group_config(cfg, [{"name": KEY, "config_operation": DELETE}])
    assert cfg == GroupConfig()


def test_the_intervals_are_stored_last_so_an_older_shorter_config_still_loads():
    cfg = GroupConfig(consumer_session_timeout_ms=50_000, consumer_assignment_interval_ms=700,
                      share_assignment_interval_ms=800, streams_assignment_interval_ms=900)
    payload = _config_payload(cfg)
    assert payload[0] == 50_000 and payload[-3:] == [700, 800, 900]
    assert GroupConfig(*payload) == cfg
    # A config the controller logged before the intervals existed (the controller loads a
    # payload as ``GroupConfig(*payload)``).
    assert GroupConfig(*payload[:-3]) == GroupConfig(consumer_session_timeout_ms=50_000)
