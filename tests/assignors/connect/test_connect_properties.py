"""Properties of the connect assignor over random histories (hypothesis).

A history is a random train of events, each followed by one assignor round at the current
time: workers join (static or dynamic, reading metadata up to version 1 or 2), leave,
bounce (leave and come back under a new member id, keeping their instance id), connectors
are created, resized and deleted, targets are corrupted with duplicates, time passes, and
the worker computing the round changes (one that reads versions 1-2, or only 1).
"""

from __future__ import annotations

import itertools

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors.connect import IncrementalCooperativeAssignor, plan_round
from assignors.connect.balance import excess, target_counts
from assignors.connect.plan import ConnectRound
from tests.assignors.connect.sim import ConnectCluster

PROPERTY = settings(max_examples=60)
WORKERS = [f"w{i}" for i in range(6)]
CONNECTORS = [f"c{i}" for i in range(4)]

events = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(WORKERS), st.booleans(), st.sampled_from([1, 2])),
    st.tuples(st.just("leave"), st.sampled_from(WORKERS)),
    st.tuples(st.just("bounce"), st.sampled_from(WORKERS)),
    st.tuples(st.just("connector"), st.sampled_from(CONNECTORS), st.integers(-1, 9)),
    st.tuples(st.just("duplicate"), st.sampled_from(WORKERS), st.sampled_from(WORKERS)),
    st.tuples(st.just("wait"), st.sampled_from([0, 1, 39, 40, 1_000, 1_600, 5_000])),
    st.tuples(st.just("planner"), st.sampled_from([(1, 2), (1, 1)])),
)


def apply(c: ConnectCluster, event: tuple, clock: list[int], planner: list) -> None:
    kind = event[0]
    if kind == "join" and not any(w.startswith(event[1]) for w in c.workers):
        c.join(
            event[1], instance_id=f"host-{event[1]}" if event[2] else None, maximum_version=event[3]
        )
    elif kind == "leave":
        for member_id in [m for m in c.workers if m.startswith(event[1])]:
            c.leave(member_id)
    elif kind == "bounce":
        for member_id in [m for m in c.workers if m.startswith(event[1])]:
            gone = c.leave(member_id)
            c.join(
                f"{member_id}'", instance_id=gone.instance_id, maximum_version=gone.maximum_version
            )
    elif kind == "connector":
        if event[2] < 0:
            c.connectors.pop(event[1], None)
        else:
            c.connectors[event[1]] = event[2]
    elif kind == "duplicate":
        source = [w for m, w in c.workers.items() if m.startswith(event[1])]
        sink = [w for m, w in c.workers.items() if m.startswith(event[2])]
        if source and sink:
            sink[0].tasks |= source[0].tasks
            sink[0].connectors |= source[0].connectors
    elif kind == "wait":
        clock[0] += event[1]
    elif kind == "planner":
        planner[0] = event[1]


def check_round(c: ConnectCluster, result: ConnectRound) -> None:
    tasks = c.all_tasks()
    connectors = c.all_connectors()
    held_tasks = {t for h in result.held for t in h.tasks}
    held_connectors = {n for h in result.held for n in h.connectors}
    configured = c.configured_tasks()
    # At most one worker per unit, only configured units, held units run nowhere.
    assert max(tasks.values(), default=1) == 1 and max(connectors.values(), default=1) == 1
    assert set(tasks) <= configured and set(connectors) <= set(c.connectors)
    assert not held_tasks & set(tasks) and not held_connectors & set(connectors)
    if c.workers and not result.held:
        assert set(tasks) == configured and set(connectors) == set(c.connectors)
    if c.workers and result.next_rebalance_ms == -1:
        assert_balanced(c)


def assert_balanced(c: ConnectCluster) -> None:
    def within_one(counts: dict[str, int]) -> bool:
        return max(counts.values()) - min(counts.values()) <= 1

    assert within_one(c.connector_counts())
    assert within_one(c.task_counts())
    for connector in c.connectors:
        assert within_one(c.per_connector(connector)), connector


@PROPERTY
@given(
    delay_ms=st.sampled_from([0, 50, 2_000]),
    history=st.lists(events, min_size=1, max_size=14),
)
def test_every_round_of_a_random_history_keeps_the_invariants(delay_ms, history):
    c = ConnectCluster({"c0": 3, "c1": 5})
    for w in WORKERS[:3]:
        c.join(w, instance_id=f"host-{w}")
    clock, planner = [0], [(1, 2)]
    for event in [("wait", 0), *history]:
        apply(c, event, clock, planner)
        assignor = IncrementalCooperativeAssignor(
            delay_ms, minimum_version=planner[0][0], maximum_version=planner[0][1]
        )
        result = c.round(clock[0], assignor)
        check_round(c, result)
        # Stability: the same input again moves nothing and writes the same metadata.
        again = assignor.plan(c.group(clock[0]))
        assert again.moved_units == 0
        assert again.members == result.members


@PROPERTY
@given(history=st.lists(events, max_size=10), late_ms=st.integers(0, 10_000))
def test_once_every_delay_expired_everything_runs_once_and_balanced(history, late_ms):
    c = ConnectCluster({"c0": 4, "c3": 7})
    for w in WORKERS[:2]:
        c.join(w)
    clock, planner = [0], [(1, 2)]
    for event in history:
        apply(c, event, clock, planner)
        c.round(clock[0])
    if not c.workers:
        c.join("late")
    # Past every hold and every backoff: one round settles everything, a second is a no-op.
    result = c.round(clock[0] + 400_000 + late_ms)
    assert result.held == () and result.next_rebalance_ms == -1
    assert set(c.all_tasks()) == c.configured_tasks()
    assert set(c.all_connectors()) == set(c.connectors)
    assert max(c.all_connectors().values(), default=1) == 1
    assert_balanced(c)


@PROPERTY
@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=12),
    num_workers=st.integers(1, 15),
)
def test_a_first_assignment_is_balanced_per_connector_and_in_total(sizes, num_workers):
    c = ConnectCluster({f"c{i}": n for i, n in enumerate(sizes)})
    for i in range(num_workers):
        c.join(f"w{i:02d}")
    result = c.round(0)
    assert result.moved_units == 0 and result.next_rebalance_ms == -1
    assert set(c.all_tasks()) == c.configured_tasks()
    assert_balanced(c)


def fewest_moves(current: np.ndarray, sizes: np.ndarray) -> int:
    """By brute force: the fewest units leaving their worker over every balanced target."""
    num_workers = current.shape[1]
    base, extra = np.divmod(sizes, num_workers)
    best = None
    choices = [itertools.combinations(range(num_workers), int(r)) for r in extra]
    for picked in itertools.product(*choices):
        plus = np.zeros(current.shape, dtype=np.int64)
        for g, workers in enumerate(picked):
            plus[g, list(workers)] = 1
        per_worker = plus.sum(axis=0)
        if per_worker.max() - per_worker.min() <= 1:
            moves = excess(current, base[:, None] + plus)
            best = moves if best is None else min(best, moves)
    return best


small_layouts = st.integers(1, 5).flatmap(
    lambda workers: st.lists(
        st.lists(st.integers(-1, workers - 1), max_size=10), min_size=1, max_size=3
    ).map(lambda owners: (workers, owners))
)


@PROPERTY
@given(small_layouts)
def test_the_target_is_balanced_and_moves_as_little_as_any_balanced_target(layout):
    # Arbitrary current layouts (owners per task, -1 free): not only the tidy ones.
    num_workers, owners = layout
    sizes = np.array([len(o) for o in owners])
    current = np.zeros((len(owners), num_workers), dtype=np.int64)
    for g, group in enumerate(owners):
        for w in group:
            if w >= 0:
                current[g, w] += 1
    target = target_counts(current, sizes)
    assert (target.sum(axis=1) == sizes).all()
    assert (target.max(axis=1) - target.min(axis=1) <= 1).all()
    totals = target.sum(axis=0)
    assert totals.max() - totals.min() <= 1
    assert excess(current, target) == fewest_moves(current, sizes)


@PROPERTY
@given(
    sizes=st.lists(st.integers(0, 12), min_size=1, max_size=3),
    num_workers=st.integers(2, 5),
    change=st.sampled_from(["join", "join two", "leave"]),
)
def test_a_join_or_a_leave_moves_as_little_as_any_balanced_target(sizes, num_workers, change):
    c = ConnectCluster({f"c{i}": n for i, n in enumerate(sizes)}, IncrementalCooperativeAssignor(0))
    for i in range(num_workers):
        c.join(f"w{i}")
    c.round(0)
    if change == "leave":
        c.leave("w0")
    else:
        for j in range(1 if change == "join" else 2):
            c.join(f"x{j}")
    members = sorted(c.workers)
    tasks = np.zeros((len(sizes), len(members)), dtype=np.int64)
    connectors = np.zeros((1, len(members)), dtype=np.int64)
    for k, m in enumerate(members):
        for name, _ in c.workers[m].tasks:
            tasks[int(name[1:]), k] += 1
        connectors[0, k] = len(c.workers[m].connectors)
    fewest = fewest_moves(tasks, np.array(sizes)) + fewest_moves(connectors, np.array([len(sizes)]))
    result = c.round(1_000)
    assert_balanced(c)
    assert result.moved_units == fewest


def test_plan_round_is_importable_as_a_function():
    c = ConnectCluster({"c0": 2})
    c.join("a")
    result = plan_round(c.group(0), max_delay_ms=0, versions=(1, 2), state_copies=1)
    assert result.members[0].tasks == {("c0", 0), ("c0", 1)}
