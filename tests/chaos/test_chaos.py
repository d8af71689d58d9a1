"""The short chaos run of the suite: partitions killed mid-rebalance, the controller killed with
changes in flight, KIP-848 and classic consumers killed; then every invariant holds."""

from itertools import islice

import pytest

from actors.tools.chaos import run_chaos
from actors.tools.chaos_schedule import (
    KILL_CLASSIC,
    KILL_CONSUMER,
    KILL_CONTROLLER,
    KILL_PARTITION,
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
