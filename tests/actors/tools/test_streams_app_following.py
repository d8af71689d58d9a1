"""What bench/streams.py and the streams tests read from a Kafka Streams app's lines
(actors/tools/streams_app.py): the instances' states and tasks, and how long a task had no
active owner. Pure functions over events: no JVM."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from actors.tools.streams_app import running, tasks_now, unowned_task_seconds

TASKS = {"0_0", "0_1"}


def test_an_instance_is_running_when_its_last_state_says_so():
    events = [{"event": "state", "instance": 0, "state": "RUNNING"},
              {"event": "state", "instance": 1, "state": "RUNNING"},
              {"event": "state", "instance": 1, "state": "REBALANCING"},
              {"event": "tasks", "instance": 0, "active": ["0_0"], "standby": ["1_0"]}]
    assert running(events) == {0}
    assert tasks_now(events) == {0: ({"0_0"}, {"1_0"})}


def test_a_handover_with_a_gap_counts_the_gap_for_the_tasks_that_moved():
    timeline = [(0, 0, {"0_0", "0_1"}),
                (1000, 0, {"0_1"}),       # 0_0 leaves instance 0 ...
                (1500, 1, {"0_0"}),       # ... and reaches instance 1 half a second later
                (3000, 0, set())]         # instance 0 shuts down: 0_1 unowned to the end
    assert unowned_task_seconds(timeline, TASKS, 0, 4000) == 0.5 + 1.0


def test_only_the_measured_window_counts():
    timeline = [(0, 0, set()), (2000, 0, {"0_0", "0_1"})]
    assert unowned_task_seconds(timeline, TASKS, 1000, 5000) == 2 * 1.0


@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 2),
                          st.sets(st.sampled_from(sorted(TASKS)))), max_size=20))
def test_unowned_time_is_between_none_and_every_task_all_the_time(changes):
    timeline = sorted(changes, key=lambda c: c[0])
    total = unowned_task_seconds(timeline, TASKS, 0, 10_000)
    assert 0 <= total <= len(TASKS) * 10.0
