"""The short chaos runs of the suite: partitions killed mid-rebalance, the controller killed with
changes in flight, KIP-848 and classic consumers killed, Connect workers killed and connectors
changed; then every invariant holds."""

from itertools import islice

import pytest

from actors.tools.chaos import run_chaos
from actors.tools.chaos_schedule import (
    ALTER_CONNECTOR,
    KILL_CLASSIC,
    KILL_CONSUMER,
    KILL_CONTROLLER,
    KILL_PARTITION,
    KILL_WORKER,
    chaos_schedule,
)

pytestmark = pytest.mark.ray

SEED, STEPS, GROUPS, CLASSIC_GROUPS = 23, 10, 2, 1


def test_chaos_with_partition_controller_and_consumer_kills_ends_with_no_violations(
    cluster, tmp_path
):
    # The schedule is the seed's: this run is known to kill each kind of actor.
    kinds = {s.kind for s in islice(chaos_schedule(SEED, GROUPS, CLASSIC_GROUPS), STEPS)}
    assert {KILL_PARTITION, KILL_CONTROLLER, KILL_CONSUMER, KILL_CLASSIC} <= kinds
    report = run_chaos(cluster, None, tmp_path, groups=GROUPS, classic_groups=CLASSIC_GROUPS,
                       consumers=3, partitions=6, seed=SEED, progress=False,
                       pause_s=(0.2, 0.8), steps=STEPS)
    print(report.summary())
    assert report.steps == STEPS
    assert report.partition_kills >= 1 and report.controller_kills >= 1
    assert report.consumer_kills >= 1 and report.classic_kills >= 1
    assert report.events > 0 and report.commits > 0 and report.commits_lost == 0
    assert report.violations == [], report.summary()


CONNECT_SEED, CONNECT_STEPS = 41, 8


def test_chaos_with_connect_worker_groups_checks_their_connectors_and_tasks(cluster, tmp_path):
    # One consumer group, one Connect group of each protocol; seed 41's first 8 steps kill
    # workers, change a connector's task count and kill the new-protocol Connect group's
    # coordinator mid-rebalance (Connect groups come after the consumer group in its indexes).
    schedule = list(islice(chaos_schedule(CONNECT_SEED, 1, 0, connect_groups=2), CONNECT_STEPS))
    assert sum(s.kind == KILL_WORKER for s in schedule) >= 2
    assert any(s.kind == ALTER_CONNECTOR for s in schedule)
    assert any(s.kind == KILL_PARTITION and s.group == 1 and s.provoke for s in schedule)
    report = run_chaos(cluster, None, tmp_path, groups=1, classic_groups=0, consumers=2,
                       partitions=4, seed=CONNECT_SEED, progress=False, pause_s=(0.2, 0.8),
                       steps=CONNECT_STEPS, connect_groups=1, classic_connect_groups=1)
    print(report.summary())
    assert len(report.connect_groups) == 2 and "connect groups: 2" in report.summary()
    assert report.worker_kills >= 1 and report.connector_changes == 1
    assert report.kills >= report.worker_kills + report.partition_kills
    assert report.connect_events > 0 and report.work_ranges > 0
    assert report.violations == [], report.summary()
