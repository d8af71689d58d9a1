"""One spelling of group states for everything that shows or filters them.

Cohort names states as its records do (``preparing_rebalance``); Kafka's tools and its
ListGroups filter spell them ``PreparingRebalance``. Either names the same state. (Every
state a group may be in: ``protocol.group_types.ALL_STATES``; this module imports no row, so
any row may spell its states with it.)
"""

from __future__ import annotations

__all__ = ["kafka_state_name", "state_key"]


def state_key(state: object) -> str:
    """The spelling-free identity of a state name (``PreparingRebalance`` and
    ``preparing_rebalance`` give the same key); "" for anything that is not a name."""
    return state.replace("_", "").lower() if isinstance(state, str) else ""


def kafka_state_name(state: str | None) -> str:
    """Cohort's ``preparing_rebalance`` as Kafka prints it: ``PreparingRebalance``."""
    return "".join(part.capitalize() for part in state.split("_")) if state else "-"
