"""The short chaos run of the suite: kills during rebalances, then invariants 1-4 hold."""

import pytest

from actors.tools.chaos import run_chaos

pytestmark = pytest.mark.ray


def test_chaos_with_partition_and_consumer_kills_ends_with_no_violations(cluster, tmp_path):
    report = run_chaos(cluster, seconds=25, workdir=tmp_path, groups=2, consumers=3,
                       partitions=6, seed=7, progress=False)
    print(report.summary())
    assert report.partition_kills >= 1 and report.mid_rebalance_kills >= 1
    assert report.events > 0 and report.commits > 0
    assert report.violations == [], report.summary()
