"""The heartbeat interval the coordinator returns: short while a member has a step waiting
(Cohort's own rule, docs/decisions.md), the group's interval otherwise."""

from __future__ import annotations

import pytest

from protocol.config import CoordinatorConfig, GroupConfig
from protocol.errors import Errors
from protocol.shard import GroupCoordinatorShard
from tests.protocol.consumer.test_client_side_assignment import assignor
from tests.protocol.driver import Member, heartbeat_rounds, image

NORMAL_MS = 1_000
SHORT_MS = 50
CONFIG = CoordinatorConfig(
    group_consumer_heartbeat_interval_ms=NORMAL_MS,
    group_consumer_min_heartbeat_interval_ms=10,
    group_consumer_reconciliation_heartbeat_interval_ms=SHORT_MS,
)


def shard_with(config: CoordinatorConfig = CONFIG, **topics: int) -> GroupCoordinatorShard:
    return GroupCoordinatorShard(config=config, metadata=image(**topics))


def test_a_stable_group_is_told_the_normal_interval():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    heartbeat_rounds(a, b)
    assert shard.groups["g"].state == "stable"
    assert a.heartbeat().heartbeat_interval_ms == NORMAL_MS
    assert b.heartbeat().heartbeat_interval_ms == NORMAL_MS


def test_a_lone_member_that_gets_everything_at_its_join_is_told_the_normal_interval():
    shard = shard_with(foo=4)
    resp = Member(shard, "A").join()
    assert len(resp.assignment.assigned_topic_partitions[0].partitions) == 4
    assert resp.heartbeat_interval_ms == NORMAL_MS


def test_a_member_waiting_for_partitions_another_member_holds_is_told_the_short_interval():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    resp = b.join()  # everything B's target holds is still A's
    assert resp.assignment.pending_topic_partitions
    assert resp.heartbeat_interval_ms == SHORT_MS
    assert b.heartbeat().heartbeat_interval_ms == SHORT_MS  # still waiting: still short


def test_a_member_asked_to_revoke_is_told_the_short_interval_until_it_acknowledges():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    asked = a.heartbeat()  # it still reports all four
    assert shard.groups["g"].members["A"].state.label == "unrevoked_partitions"
    assert len(asked.assignment.assigned_topic_partitions[0].partitions) == 2
    assert asked.heartbeat_interval_ms == SHORT_MS
    acknowledged = a.heartbeat()  # it now reports only what it keeps
    assert shard.groups["g"].members["A"].state.label == "stable"
    assert acknowledged.heartbeat_interval_ms == NORMAL_MS


def test_the_waiting_member_is_back_to_the_normal_interval_once_its_partitions_are_released():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    a.heartbeat()  # asked to revoke two partitions
    a.heartbeat()  # acknowledged: they are free
    resp = b.heartbeat()
    assert len(resp.assignment.assigned_topic_partitions[0].partitions) == 2
    assert not resp.assignment.pending_topic_partitions
    assert resp.heartbeat_interval_ms == NORMAL_MS


def test_members_untouched_by_a_step_keep_the_normal_interval():
    shard = shard_with(foo=4, bar=2)
    a = Member(shard, "A", topics=["foo"])
    a.join()
    heartbeat_rounds(a)
    c = Member(shard, "C", topics=["bar"])  # joins; takes only bar, which nobody holds
    assert c.join().heartbeat_interval_ms == NORMAL_MS
    assert a.heartbeat().heartbeat_interval_ms == NORMAL_MS  # keeps all of foo


def test_the_short_interval_never_goes_below_the_brokers_minimum():
    config = CoordinatorConfig(
        group_consumer_heartbeat_interval_ms=NORMAL_MS,
        group_consumer_min_heartbeat_interval_ms=200,
        group_consumer_reconciliation_heartbeat_interval_ms=SHORT_MS,
    )
    shard = shard_with(config, foo=4)
    Member(shard, "A").join()
    assert Member(shard, "B").join().heartbeat_interval_ms == 200


def test_with_kafkas_defaults_the_minimum_equals_the_interval_so_nothing_changes():
    shard = shard_with(CoordinatorConfig(), foo=4)
    Member(shard, "A").join()
    assert Member(shard, "B").join().heartbeat_interval_ms == 5_000


@pytest.mark.parametrize("group_interval_ms", [30, 400])
def test_the_short_interval_never_exceeds_the_groups_own_interval(group_interval_ms):
    shard = shard_with(foo=4)
    shard.set_group_config("g", GroupConfig(consumer_heartbeat_interval_ms=group_interval_ms))
    Member(shard, "A").join()
    resp = Member(shard, "B").join()
    assert resp.heartbeat_interval_ms == min(SHORT_MS, group_interval_ms)


def test_setting_the_short_interval_to_the_heartbeat_interval_turns_the_rule_off():
    config = CoordinatorConfig(
        group_consumer_heartbeat_interval_ms=NORMAL_MS,
        group_consumer_min_heartbeat_interval_ms=10,
        group_consumer_reconciliation_heartbeat_interval_ms=NORMAL_MS,
    )
    shard = shard_with(config, foo=4)
    Member(shard, "A").join()
    assert Member(shard, "B").join().heartbeat_interval_ms == NORMAL_MS


def test_the_member_asked_to_compute_a_client_side_assignment_is_told_the_short_interval():
    shard = shard_with(foo=6)
    ms = {mid: Member(shard, mid) for mid in ("A", "B")}
    for mid, (lo, hi) in {"A": (1, 5), "B": (3, 4)}.items():
        assert ms[mid].join(client_assignors=[assignor(lo, hi)]).error_code == Errors.NONE
    compute = ms["A"].heartbeat()
    assert compute.should_compute_assignment and compute.heartbeat_interval_ms == SHORT_MS
    other = ms["B"].heartbeat()
    assert not other.should_compute_assignment and other.heartbeat_interval_ms == NORMAL_MS


def test_a_non_positive_short_interval_is_refused():
    with pytest.raises(ValueError, match="reconciliation heartbeat interval"):
        CoordinatorConfig(group_consumer_reconciliation_heartbeat_interval_ms=0)
