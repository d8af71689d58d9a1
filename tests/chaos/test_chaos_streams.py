"""A short chaos run with a streams group (KIP-1071): its coordinator partition killed (once
mid-rebalance), its members killed and replaced, a member added; then invariant 8 holds over
every member's timeline (no task active on two members at once; at the end every task active on
exactly one live member, standbys off their active's process). That the checker can fail is
tests/actors/tools/test_invariants_streams.py's."""

from itertools import islice

import pytest

from actors.tools.chaos_schedule import KILL_CONSUMER, KILL_PARTITION, chaos_schedule
from actors.tools.chaos_streams import StreamsChaosRun

pytestmark = pytest.mark.ray

# Seed 33's first 6 steps, with one consumer group: two partition kills of the streams group
# (the first provoked by a join), two member kills, one member added.
SEED, STEPS = 33, 6


def test_chaos_with_a_streams_group_keeps_every_task_active_on_one_member(cluster, tmp_path):
    kinds = [s.kind for s in islice(chaos_schedule(SEED, 1, 0), STEPS)]
    assert kinds.count(KILL_CONSUMER) == 2 and KILL_PARTITION in kinds
    run = StreamsChaosRun(cluster, tmp_path, groups=1, consumers=2, partitions=4, seed=SEED,
                          progress=False, share_groups=0, streams_groups=1, classic_groups=0,
                          pause_s=(0.2, 0.8))
    report = run.run(steps=STEPS)
    summary = report.summary() + "\n" + run.streams_summary()
    print(summary)
    assert report.steps == STEPS
    assert run.streams_partition_kills == 2 and run.streams_kills == 2
    assert run.streams_added >= 2  # the provoked kill's join and the added member
    assert run.streams_events > 0
    assert report.violations == [], summary
