"""group.share.* broker configs and a share group's share.* group configs: Kafka's defaults
and bounds, and the group configs as Kafka's admin clients set and describe them."""

from __future__ import annotations

import pytest

from protocol.config import CoordinatorConfig, GroupConfig
from protocol.wire import configs


def test_the_broker_defaults_are_kafkas():
    c = CoordinatorConfig()
    assert (c.group_share_max_size, c.group_share_delivery_count_limit,
            c.group_share_partition_max_record_locks, c.group_share_record_lock_duration_ms,
            c.group_share_session_timeout_ms, c.group_share_heartbeat_interval_ms,
            c.default_share_assignor, c.group_share_auto_offset_reset) == (
        200, 5, 2_000, 30_000, 45_000, 5_000, "simple", "latest")


@pytest.mark.parametrize("bad", [
    dict(group_share_max_size=0), dict(group_share_max_size=1001),
    dict(group_share_delivery_count_limit=1), dict(group_share_delivery_count_limit=11),
    dict(group_share_partition_max_record_locks=99),
    dict(group_share_record_lock_duration_ms=10_000),
    dict(group_share_session_timeout_ms=70_000),
    dict(group_share_assignors=("uniform",)),
    dict(group_share_auto_offset_reset="none"),
])
def test_a_broker_config_out_of_kafkas_bounds_is_refused(bad):
    with pytest.raises(ValueError):
        CoordinatorConfig(**bad)


def test_a_group_overrides_the_broker_and_falls_back_to_it():
    broker = CoordinatorConfig()
    cfg = GroupConfig(share_record_lock_duration_ms=20_000)
    assert cfg.share_setting(broker, "record_lock_duration_ms") == 20_000
    assert cfg.share_setting(broker, "delivery_count_limit") == 5
    assert not cfg.share_starts_at_earliest(broker)
    assert GroupConfig(share_auto_offset_reset="earliest").share_starts_at_earliest(broker)
    with pytest.raises(ValueError):
        GroupConfig(share_auto_offset_reset="never")


def test_share_bounds_name_every_int_share_config_with_kafkas_limits():
    bounds = {name: (lo, hi) for _, name, lo, hi in GroupConfig().share_bounds(
        CoordinatorConfig())}
    assert bounds == {
        "share.session.timeout.ms": (45_000, 60_000),
        "share.heartbeat.interval.ms": (5_000, 15_000),
        "share.record.lock.duration.ms": (15_000, 60_000),
        "share.delivery.count.limit": (2, 10),
        "share.assignment.interval.ms": (0, 15_000),
    }


def test_admin_clients_set_and_describe_share_auto_offset_reset_as_a_string():
    ops = [{"name": "share.auto.offset.reset", "config_operation": configs.SET,
            "value": "earliest"},
           {"name": "share.record.lock.duration.ms", "config_operation": configs.SET,
            "value": "20000"}]
    cfg = configs.altered_group_config(GroupConfig(), ops)
    assert cfg == GroupConfig(share_auto_offset_reset="earliest",
                              share_record_lock_duration_ms=20_000)
    with pytest.raises(configs.ConfigRefused):
        configs.altered_group_config(GroupConfig(), [{
            "name": "share.auto.offset.reset", "config_operation": configs.SET,
            "value": "sometimes"}])
    described = configs.describe_group("sg", cfg, CoordinatorConfig(), None)["configs"]
    by_name = {c["name"]: c for c in described}
    assert by_name["share.auto.offset.reset"]["value"] == "earliest"
    assert by_name["share.auto.offset.reset"]["config_type"] == configs.CONFIG_TYPE_STRING
    assert by_name["share.delivery.count.limit"]["value"] == "5"
    assert by_name["share.delivery.count.limit"]["config_type"] == configs.CONFIG_TYPE_INT
