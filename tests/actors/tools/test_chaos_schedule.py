"""A chaos run's schedule is a function of its seed: a failing seed replays the same kills."""

from itertools import islice

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.tools.chaos_schedule import (
    KILL_CLASSIC,
    KILL_CONTROLLER,
    KILL_PARTITION,
    WEIGHTS,
    chaos_schedule,
)


def steps(seed, n, groups=3, classic=1, pause=(0.5, 2.0)):
    return list(islice(chaos_schedule(seed, groups, classic, pause), n))


@given(seed=st.integers(0, 2**63), groups=st.integers(1, 5), classic=st.integers(0, 3))
def test_the_same_seed_gives_the_same_schedule_and_every_choice_stays_in_range(
    seed, groups, classic
):
    first = steps(seed, 60, groups, classic)
    assert first == steps(seed, 60, groups, classic)
    for s in first:
        span = {KILL_CLASSIC: classic, KILL_PARTITION: groups + classic}.get(s.kind, groups)
        assert 0 <= s.group < span
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
    assert {s.kind for s in steps(5, 300, classic=1)} == set(WEIGHTS)


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError):
        next(chaos_schedule(1, 0))
    with pytest.raises(ValueError):
        next(chaos_schedule(1, 1, pause_s=(2.0, 1.0)))
