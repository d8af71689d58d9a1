"""The client-side assignors a classic (JoinGroup/SyncGroup) group leader runs, by name.

A classic consumer that the coordinator elects leader computes the whole group's
assignment itself, with the strategy every member agreed on in JoinGroup. These are
Kafka's three built-in strategies, pure functions of the group: ``range`` and
``roundrobin`` (eager) and ``cooperative-sticky`` (cooperative: it never hands a member a
partition that another member still owns).
"""

from assignors.classic.cooperative_sticky import (
    CooperativeStickyAssignor,
    current_owners,
    sticky_assignment,
)
from assignors.classic.range import RangeAssignor
from assignors.classic.roundrobin import RoundRobinAssignor
from assignors.classic.spec import ClassicAssignor, ClassicSubscription

# Name -> assignor, under the names Kafka's ``partition.assignment.strategy`` uses.
CLASSIC_ASSIGNORS: dict[str, ClassicAssignor] = {
    RangeAssignor.name: RangeAssignor(),
    RoundRobinAssignor.name: RoundRobinAssignor(),
    CooperativeStickyAssignor.name: CooperativeStickyAssignor(),
}


def classic_assignor(name: str) -> ClassicAssignor:
    """The classic assignor called ``name``; ``KeyError`` naming the known ones if none."""
    try:
        return CLASSIC_ASSIGNORS[name]
    except KeyError:
        known = ", ".join(sorted(CLASSIC_ASSIGNORS))
        raise KeyError(f"unknown classic assignor {name!r} (known: {known})") from None


__all__ = [
    "CLASSIC_ASSIGNORS",
    "ClassicAssignor",
    "ClassicSubscription",
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "classic_assignor",
    "current_owners",
    "sticky_assignment",
]
