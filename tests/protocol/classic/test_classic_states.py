"""Classic group states as data: the table of valid moves is checked on every transition."""

import pytest

from protocol.classic.group import ClassicGroup
from protocol.classic.states import (
    VALID_PREVIOUS,
    ClassicGroupState,
    IllegalStateTransition,
    check_transition,
)

S = ClassicGroupState


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (S.EMPTY, S.STABLE),
        (S.EMPTY, S.COMPLETING_REBALANCE),
        (S.STABLE, S.COMPLETING_REBALANCE),
        (S.PREPARING_REBALANCE, S.STABLE),
        (S.PREPARING_REBALANCE, S.PREPARING_REBALANCE),
        (S.DEAD, S.PREPARING_REBALANCE),
    ],
)
def test_a_move_the_table_does_not_list_is_refused(old, new):
    group = ClassicGroup("g", state=old, state_timestamp_ms=5)
    with pytest.raises(IllegalStateTransition, match=f"{old} -> {new}"):
        group.transition_to(new, now_ms=10)
    assert group.state is old and group.state_timestamp_ms == 5  # nothing changed


def test_a_listed_move_changes_state_and_its_timestamp():
    group = ClassicGroup("g", state=S.STABLE)
    group.transition_to(S.PREPARING_REBALANCE, now_ms=42)
    assert group.state is S.PREPARING_REBALANCE and group.state_timestamp_ms == 42


def test_the_table_is_kafkas():
    assert VALID_PREVIOUS[S.EMPTY] == {S.PREPARING_REBALANCE}
    assert VALID_PREVIOUS[S.PREPARING_REBALANCE] == {S.EMPTY, S.STABLE, S.COMPLETING_REBALANCE}
    assert VALID_PREVIOUS[S.COMPLETING_REBALANCE] == {S.PREPARING_REBALANCE}
    assert VALID_PREVIOUS[S.STABLE] == {S.COMPLETING_REBALANCE}
    assert VALID_PREVIOUS[S.DEAD] == set(S)
    for new, previous in VALID_PREVIOUS.items():
        for old in S:
            if old in previous:
                check_transition("g", old, new)
            else:
                with pytest.raises(IllegalStateTransition):
                    check_transition("g", old, new)


def test_states_persist_as_their_names():
    record = ClassicGroup("g", state=S.STABLE).to_record()
    assert type(record.state) is str and record.state == "stable"
