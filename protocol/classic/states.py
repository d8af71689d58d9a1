"""A classic group's states and the moves between them, as data (Kafka's ``ClassicGroupState``).

Every change of state goes through ``check_transition``: a move the table does not list is a
bug in the rules, and fails loudly instead of leaving a group in a state nobody planned for.
Loading a group from its record is not a move (a new coordinator takes whatever was written).
"""

from __future__ import annotations

from enum import StrEnum


class ClassicGroupState(StrEnum):
    """The values are what ``GroupMetadataValue.state`` persists and DescribeGroups shows."""

    EMPTY = "empty"
    PREPARING_REBALANCE = "preparing_rebalance"
    COMPLETING_REBALANCE = "completing_rebalance"
    STABLE = "stable"
    DEAD = "dead"


_S = ClassicGroupState

# state -> the states a group may enter it from (Kafka's validPreviousStates).
VALID_PREVIOUS: dict[ClassicGroupState, frozenset[ClassicGroupState]] = {
    # the join phase ended with nobody left
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    # a member joined, left, changed or failed; a generation's sync failed; metadata changed
    _S.PREPARING_REBALANCE: frozenset({_S.EMPTY, _S.STABLE, _S.COMPLETING_REBALANCE}),
    # every member rejoined (or the join phase timed out): a generation starts
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    # the leader's assignment arrived
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    # the group is gone (deleted, or converted to another protocol)
    _S.DEAD: frozenset(_S),
}


class IllegalStateTransition(RuntimeError):
    """The rules tried a move the table forbids: a bug, never a client's fault."""


def check_transition(group_id: str, old: ClassicGroupState, new: ClassicGroupState) -> None:
    if old not in VALID_PREVIOUS[new]:
        raise IllegalStateTransition(
            f"group {group_id}: {old} -> {new} is not a valid transition "
            f"(allowed from {sorted(VALID_PREVIOUS[new])})"
        )


def parse_state(value: str) -> ClassicGroupState | None:
    """The state a record names, or None for a name this coordinator does not know."""
    try:
        return ClassicGroupState(value)
    except ValueError:
        return None
