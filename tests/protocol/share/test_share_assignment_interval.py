"""KIP-1263's assignment interval for share groups (Kafka 4.4's
``maybeUpdateTargetAssignment`` for share groups, the consumer groups' rule): a target at most
once per ``share.assignment.interval.ms`` (over ``group.share.assignment.interval.ms``); a bump
within it leaves the target for the first heartbeat after it; a member's leave with members
left leaves it to the next heartbeat; the last member's leave writes an empty target with time
0, so the next join is assigned. Share group epochs start at 1 (KAFKA-20268): the first member
gets 2. The clock starts at 10 s (a time of 0 means "never computed")."""

from __future__ import annotations

import pytest

from actors.runtime.controller import _check_group_config
from protocol import messages as m
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.errors import CoordinatorError, Errors
from protocol.shard import GroupCoordinatorShard
from protocol.share.records import (
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
)
from protocol.wire.configs import DEFAULT_CONFIG, describe_group
from tests.protocol.share.helpers import GROUP, heartbeat, image, initialize, join

START_MS = 10_000
INTERVAL_MS = 1_000


def shard_at(config: CoordinatorConfig | None = None, **group_config) -> GroupCoordinatorShard:
    shard = GroupCoordinatorShard(config=config or CoordinatorConfig(), metadata=image(),
                                  now_ms=START_MS)
    shard.set_group_config(GROUP, GroupConfig(share_auto_offset_reset="earliest",
                                              **group_config))
    initialize(shard)
    return shard


def held(resp) -> int:
    return sum(len(tp.partitions) for tp in resp.assignment.topic_partitions)


def test_a_join_inside_the_interval_gets_the_current_target_epoch_and_nothing():
    shard = shard_at()
    a = join(shard, "A")
    assert (a.member_epoch, held(a)) == (2, 3)
    shard.tick(START_MS + 500)
    b = join(shard, "B")
    group = shard.groups[GROUP]
    assert (group.group_epoch, group.assignment_epoch) == (3, 2)
    assert (b.member_epoch, held(b)) == (2, 0)
    shard.tick(START_MS + INTERVAL_MS)
    again = heartbeat(shard, "A", 2)  # the first heartbeat after the interval computes
    assert group.assignment_epoch == 3 and again.member_epoch == 3
    assert group.assignment_timestamp == START_MS + INTERVAL_MS
    b = heartbeat(shard, "B", 2)
    assert b.member_epoch == 3 and held(b) > 0


def test_the_group_config_overrides_the_brokers_share_interval():
    shard = shard_at(CoordinatorConfig(group_share_assignment_interval_ms=0),
                     share_assignment_interval_ms=5_000)
    join(shard, "A")
    shard.tick(START_MS + 4_999)
    join(shard, "B")
    assert shard.groups[GROUP].assignment_epoch == 2
    shard.set_group_config(GROUP, GroupConfig(share_assignment_interval_ms=0))
    heartbeat(shard, "A", 2)
    assert shard.groups[GROUP].assignment_epoch == 3


def test_interval_zero_computes_in_the_turn_that_bumps():
    shard = shard_at(CoordinatorConfig(group_share_assignment_interval_ms=0))
    join(shard, "A")
    shard.tick(START_MS + 1)
    assert join(shard, "B").member_epoch == 3


def test_a_leave_with_members_left_waits_for_a_heartbeat_and_the_last_leave_writes_time_0():
    shard = shard_at()
    join(shard, "A")
    shard.tick(START_MS + 5_000)
    join(shard, "B")
    assert heartbeat(shard, "A", 2).member_epoch == 3
    group = shard.groups[GROUP]
    assert group.assignment_epoch == 3
    heartbeat(shard, "B", -1)
    assert (group.group_epoch, group.assignment_epoch) == (4, 3)
    shard.tick(START_MS + 5_000 + INTERVAL_MS)
    heartbeat(shard, "A", 3)
    assert group.assignment_epoch == 4
    res = shard.handle(m.ShareGroupHeartbeatRequest(GROUP, "A", -1))
    values = [r.value for r in res.records
              if isinstance(r.key, ShareGroupTargetAssignmentMetadataKey)]
    assert values == [ShareGroupTargetAssignmentMetadataValue(5, 0)]
    shard.tick(START_MS + 5_000 + INTERVAL_MS + 1)
    assert held(join(shard, "C")) == 3


def test_share_interval_bounds_and_description_are_kafkas():
    broker = CoordinatorConfig()
    assert (broker.group_share_assignment_interval_ms,
            broker.group_share_min_assignment_interval_ms,
            broker.group_share_max_assignment_interval_ms) == (1_000, 0, 15_000)
    with pytest.raises(CoordinatorError) as refused:
        _check_group_config(GroupConfig(share_assignment_interval_ms=15_001), broker)
    assert refused.value.error == Errors.INVALID_CONFIG
    assert refused.value.message == (
        "share.assignment.interval.ms must be in the range 0 to 15000 inclusive.")
    with pytest.raises(ValueError):
        CoordinatorConfig(group_share_assignment_interval_ms=-1)
    (entry,) = describe_group(GROUP, GroupConfig(), broker,
                              ["share.assignment.interval.ms"])["configs"]
    assert (entry["value"], entry["config_source"]) == ("1000", DEFAULT_CONFIG)
