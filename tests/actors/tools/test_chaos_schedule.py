"""A chaos run's schedule is a function of its seed: a failing seed replays the same kills."""

from itertools import islice

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.tools.chaos_schedule import (
    ALTER_CONNECTOR,
    KILL_CLASSIC,
    KILL_CONTROLLER,
    KILL_PARTITION,
    KILL_WORKER,
    MAX_CHAOS_TASKS,
    NEEDS_CONNECT,
    NEEDS_NODES,
    WEIGHTS,
    chaos_schedule,
)


def steps(seed, n, groups=3, classic=1, pause=(0.5, 2.0), connect=0):
    return list(islice(chaos_schedule(seed, groups, classic, pause, connect), n))


@given(seed=st.integers(0, 2**63), groups=st.integers(1, 5), classic=st.integers(0, 3),
       connect=st.integers(0, 3))
def test_the_same_seed_gives_the_same_schedule_and_every_choice_stays_in_range(
    seed, groups, classic, connect
):
    first = steps(seed, 60, groups, classic, connect=connect)
    assert first == steps(seed, 60, groups, classic, connect=connect)
    for s in first:
        span = {KILL_CLASSIC: classic, KILL_WORKER: connect, ALTER_CONNECTOR: connect,
                KILL_PARTITION: groups + classic + connect}.get(s.kind, groups)
        assert 0 <= s.group < span
        assert 1 <= s.tasks <= MAX_CHAOS_TASKS
        assert 0.5 <= s.pause_s <= 2.0 or s.index == 0
        assert s.provoke is False or s.kind == KILL_PARTITION
    assert [s.index for s in first] == list(range(60))


def test_every_run_opens_with_a_provoked_partition_kill_then_a_controller_kill():
    for seed in range(20):
        opener, second = steps(seed, 2)
        assert opener.kind == KILL_PARTITION and opener.provoke
        assert second.kind == KILL_CONTROLLER


def test_different_seeds_give_different_schedules():
    assert len({tuple(steps(seed, 30)) for seed in range(10)}) == 10


def test_classic_kills_only_when_the_run_has_classic_groups():
    assert all(s.kind != KILL_CLASSIC for s in steps(5, 300, classic=0))
    assert {s.kind for s in steps(5, 300, classic=1)} == (
        set(WEIGHTS) - set(NEEDS_CONNECT) - set(NEEDS_NODES))


def test_worker_kills_and_connector_changes_only_when_the_run_has_connect_groups():
    assert not {s.kind for s in steps(5, 300, connect=0)} & set(NEEDS_CONNECT)
    assert {s.kind for s in steps(5, 300, connect=1)} == set(WEIGHTS) - set(NEEDS_NODES)
    # Partition kills reach the Connect groups' coordinators too (indexes after the others).
    assert any(s.kind == KILL_PARTITION and s.group == 4 for s in steps(5, 300, connect=1))


def test_a_run_without_connect_groups_replays_the_seeds_schedule_from_before_they_existed():
    # Seed 5's first steps as the schedule drew them before Connect groups joined chaos runs.
    before = [("kill-partition", 2, 0, True, 0.0), ("kill-controller", 1, 0, False, 0.8832),
              ("add-consumer", 2, 247, False, 1.6928),
              ("kill-classic-consumer", 0, 12, False, 1.7605),
              ("kill-partition", 3, 124, True, 1.8514), ("kill-partition", 1, 718, True, 0.653),
              ("kill-classic-consumer", 0, 228, False, 1.8745),
              ("kill-classic-consumer", 0, 84, False, 0.7082)]
    now = [(s.kind, s.group, s.pick % 1000, s.provoke, round(s.pause_s, 4))
           for s in steps(5, 8, groups=3, classic=1)]
    assert now == before


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError):
        next(chaos_schedule(1, 0))
    with pytest.raises(ValueError):
        next(chaos_schedule(1, 1, pause_s=(2.0, 1.0)))
    with pytest.raises(ValueError):
        next(chaos_schedule(1, 1, connect_groups=-1))


@given(seed=st.integers(0, 2**63), connect=st.integers(0, 2))
def test_node_faults_are_drawn_only_by_a_run_that_asks_for_them(seed, connect):
    plain = list(islice(chaos_schedule(seed, 2, 1, (0.5, 2.0), connect), 200))
    assert not [s for s in plain if s.kind in NEEDS_NODES]
    noded = list(islice(chaos_schedule(seed, 2, 1, (0.5, 2.0), connect, node_faults=True), 200))
    assert noded == list(islice(chaos_schedule(seed, 2, 1, (0.5, 2.0), connect, True), 200))
    assert {s.kind for s in noded} >= set(NEEDS_NODES)
