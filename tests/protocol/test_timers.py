"""The timer wheel: scheduling many deadlines at once is scheduling each in turn."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.timers import Timers

entries = st.lists(st.tuples(st.integers(0, 20), st.integers(0, 50)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(entries, entries, st.integers(0, 60))
def test_scheduling_many_at_once_fires_as_scheduling_each_in_turn(before, many, now):
    one_by_one, at_once = Timers(), Timers()
    for timers in (one_by_one, at_once):
        for key, deadline in before:
            timers.schedule(key, deadline)
    for key, deadline in many:
        one_by_one.schedule(key, deadline)
    at_once.schedule_many(many)
    assert at_once._deadline == one_by_one._deadline
    assert at_once.next_deadline_ms() == one_by_one.next_deadline_ms()
    assert at_once.pop_due(now) == one_by_one.pop_due(now)
    assert at_once.pop_due(100) == one_by_one.pop_due(100)
