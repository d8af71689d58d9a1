"""Lost work: who had it, who gets it back, what is held, what is released.

A unit nobody runs now but somebody ran in the previous target is *lost*. Kafka Connect
holds lost work, running nowhere, for ``scheduled.rebalance.max.delay.ms`` in case its
worker comes back, because moving it costs a restart. Here, per unit:

1. **Its previous owner is present** (same member id, or same instance id): the owner gets
   it back at once. This covers a static worker that bounced between two rounds under a
   new member id, which Kafka cannot recognise (it sees an empty newcomer).
2. **Its previous owner departed**: it is held under the owner's key from ``now``.
3. **Held work whose owner is present again** is reclaimed at once by that worker; Kafka
   makes a returning worker wait for the delay to expire.
4. **Held work past its delay** is released: it is free for the balancer, which gives it
   to the least loaded workers first (newcomers, in Kafka's words "workers with empty
   assignments"). Each departure has its own clock, where Kafka runs one clock for all.

A delay of 0 releases everything in the round it is lost: nothing is ever held.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from assignors.client.interfaces import ConnectGroupMember
from assignors.connect.layout import HELD, UNASSIGNED, WorkLayout
from assignors.connect.metadata import NO_TIME, GroupState, WorkerKey


@dataclass(frozen=True, eq=False)
class Hold:
    """Units held for a departed worker since ``lost_at_ms``."""

    owner: WorkerKey
    lost_at_ms: int
    units: np.ndarray


@dataclass(frozen=True, eq=False)
class LostWork:
    """The owner array after lost work was given back, held or released, and the holds."""

    owner: np.ndarray
    holds: tuple[Hold, ...]
    reclaimed_units: int
    released_units: int

    def next_deadline_ms(self, max_delay_ms: int) -> int:
        """When the earliest hold expires, or ``NO_TIME``."""
        if not self.holds:
            return NO_TIME
        return min(h.lost_at_ms for h in self.holds) + max_delay_ms


class PresentWorkers:
    """Matches worker keys (from earlier rounds) against the members present now."""

    def __init__(self, members: Sequence[ConnectGroupMember]) -> None:
        self.by_member = {m.member_id: w for w, m in enumerate(members)}
        self.by_instance = {
            m.instance_id: w for w, m in enumerate(members) if m.instance_id is not None
        }
        self.instance_of = [m.instance_id for m in members]

    def find(self, key: WorkerKey) -> int:
        """The index of the present worker that is ``key``, or -1 (rule: ``WorkerKey.matches``)."""
        if key.instance_id is not None and key.instance_id in self.by_instance:
            return self.by_instance[key.instance_id]
        w = self.by_member.get(key.member_id, -1)
        if w >= 0 and key.instance_id is not None and self.instance_of[w] is not None:
            return -1  # same member id, another static identity: not the same worker
        return w


def resolve_lost_work(
    layout: WorkLayout,
    owner: np.ndarray,
    members: Sequence[ConnectGroupMember],
    state: GroupState | None,
    now_ms: int,
    max_delay_ms: int,
) -> LostWork:
    """Apply rules 1-4 to ``owner`` (worker indices, -1 for free units); returns a copy."""
    owner = owner.copy()
    present = PresentWorkers(members)
    holds: list[Hold] = []
    if state is not None:
        holds.extend(_carried_holds(layout, owner, state))
        holds.extend(_new_holds(layout, owner, state, present, now_ms))
    reclaimed = released = 0
    remaining = []
    for hold in holds:
        w = present.find(hold.owner)
        if w >= 0:
            owner[hold.units] = w
            reclaimed += len(hold.units)
        elif hold.lost_at_ms + max_delay_ms <= now_ms:
            owner[hold.units] = UNASSIGNED
            released += len(hold.units)
        else:
            remaining.append(hold)
    return LostWork(owner, tuple(remaining), reclaimed, released)


def _carried_holds(layout: WorkLayout, owner: np.ndarray, state: GroupState) -> list[Hold]:
    """The state's holds, minus units deleted or running again; marks the rest ``HELD``."""
    holds = []
    for held in state.held:
        units = np.array(layout.units_of(held.connectors, held.tasks), dtype=np.int64)
        units = units[owner[units] == UNASSIGNED]
        if len(units):
            owner[units] = HELD
            holds.append(Hold(held.owner, held.lost_at_ms, units))
    return holds


def _new_holds(
    layout: WorkLayout,
    owner: np.ndarray,
    state: GroupState,
    present: PresentWorkers,
    now_ms: int,
) -> list[Hold]:
    """Free units go back to a present previous owner, or are held for a departed one."""
    previous = previous_owners(layout, state)
    free = np.flatnonzero((owner == UNASSIGNED) & (previous >= 0))
    if not len(free):
        return []
    where = np.array([present.find(key) for key in state.roster], dtype=np.int64)
    back = where[previous[free]]
    owner[free[back >= 0]] = back[back >= 0]
    departed = free[back < 0]
    keys = previous[departed]
    holds = []
    for k in np.unique(keys).tolist():
        units = departed[keys == k]
        owner[units] = HELD
        holds.append(Hold(state.roster[k], now_ms, units))
    return holds


def previous_owners(layout: WorkLayout, state: GroupState) -> np.ndarray:
    """Per unit of ``layout``, its owner in ``state`` (a roster index) or -1.

    Connectors match by name; tasks by name and number, so a connector that shrank keeps
    the owners of its remaining tasks and one that grew has no owner for the new ones.
    """
    previous = np.full(layout.num_units, -1, dtype=np.int64)
    start = 0
    for i, (name, count) in enumerate(state.connectors):
        c = layout.connector_unit(name)
        if c is not None:
            previous[c] = state.connector_owners[i]
            kept = min(count, int(layout.task_counts[c]))
            first = int(layout.task_offsets[c])
            previous[first : first + kept] = state.task_owners[start : start + kept]
        start += count
    return previous
