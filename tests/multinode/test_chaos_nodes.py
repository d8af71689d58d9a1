"""``cohort chaos --node-kills`` on three Ray nodes: node kills and stalls among the actor kills."""

from __future__ import annotations

import pytest

from actors.runtime.placement_nodes import alive_nodes
from actors.tools.chaos import run_chaos

pytestmark = pytest.mark.multinode


def test_a_chaos_run_with_node_kills_and_stalls_keeps_every_invariant(cohort, nodes, tmp_path):
    # Seed 0's first five steps: a partition kill mid-rebalance, a controller kill, a node
    # stall, a node kill, a node stall.
    try:
        report = run_chaos(cohort, None, tmp_path / "timelines", groups=1, consumers=2,
                           partitions=4, seed=0, progress=False, classic_groups=0,
                           pause_s=(0.2, 0.5), steps=5, node_faults=True)
    finally:
        nodes.replace_dead(alive_nodes())
    print(report.summary())
    assert report.violations == []
    assert (report.partition_kills, report.controller_kills) == (1, 1)
    assert (report.node_kills, report.node_pauses, report.node_faults_skipped) == (1, 2, 0)
    assert report.node_failover_max_s > 0
    assert report.commits > 0 and report.commits_lost == 0
