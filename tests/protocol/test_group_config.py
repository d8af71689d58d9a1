"""A group's dynamic config overrides the broker's only where it is set (None means unset)."""

from protocol.config import CoordinatorConfig, GroupConfig

BROKER = CoordinatorConfig(
    group_consumer_session_timeout_ms=45_000, group_consumer_heartbeat_interval_ms=5_000
)


def test_unset_overrides_fall_back_to_the_broker_defaults():
    cfg = GroupConfig()
    assert cfg.effective_session_timeout_ms(BROKER) == 45_000
    assert cfg.effective_heartbeat_interval_ms(BROKER) == 5_000


def test_set_overrides_win_even_when_zero():
    cfg = GroupConfig(consumer_session_timeout_ms=0, consumer_heartbeat_interval_ms=0)
    assert cfg.effective_session_timeout_ms(BROKER) == 0
    assert cfg.effective_heartbeat_interval_ms(BROKER) == 0


def test_set_overrides_win():
    cfg = GroupConfig(consumer_session_timeout_ms=50_000, consumer_heartbeat_interval_ms=6_000)
    assert cfg.effective_session_timeout_ms(BROKER) == 50_000
    assert cfg.effective_heartbeat_interval_ms(BROKER) == 6_000
