"""The schedule of a chaos run: what to kill when, as a pure function of the run's seed.

A chaos run that finds a violation is only useful if it can be run again: so every random
choice the runner makes (how long to wait, what to do, in which group, which victim) is drawn
here, from one ``random.Random(seed)``, before and apart from anything that depends on timing.
The runner interprets each ``Step`` against its live consumers, choosing the victim as
``alive[step.pick % len(alive)]``; since every spawn and kill is itself a step, the list of
live consumers, and so every victim, follows from the seed too. Only how long each action takes
(and so how many steps fit in a run of ``seconds``) depends on the machine; a run of ``steps``
replays the same schedule exactly. No Ray, no clock, no I/O here.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass

KILL_PARTITION = "kill-partition"
KILL_CONTROLLER = "kill-controller"
KILL_CONSUMER = "kill-consumer"
KILL_CLASSIC = "kill-classic-consumer"
ADD_CONSUMER = "add-consumer"
KILL_WORKER = "kill-connect-worker"
ALTER_CONNECTOR = "alter-connector"
KILL_NODE = "kill-node"
PAUSE_NODE = "pause-node"

# Relative weights of the random steps: mostly kills, partitions the most often, since a
# partition restart is where acknowledged state could be lost.
WEIGHTS: dict[str, int] = {
    KILL_PARTITION: 4,
    KILL_CONSUMER: 2,
    KILL_CLASSIC: 2,
    KILL_CONTROLLER: 1,
    ADD_CONSUMER: 1,
    KILL_WORKER: 2,
    ALTER_CONNECTOR: 1,
    KILL_NODE: 1,
    PAUSE_NODE: 1,
}
# The kinds a run draws only when it has groups of that kind: a run without them draws
# exactly what it drew before those kinds existed, so an old seed replays the same kills.
NEEDS_CLASSIC = (KILL_CLASSIC,)
NEEDS_CONNECT = (KILL_WORKER, ALTER_CONNECTOR)
# Whole-node faults: drawn only by a run that asks for them (``--node-kills``).
NEEDS_NODES = (KILL_NODE, PAUSE_NODE)
# A connector's task count after ALTER_CONNECTOR: 1..MAX_CHAOS_TASKS, drawn from the step.
MAX_CHAOS_TASKS = 6
# Half of the partition kills first add a consumer to the group and wait for the rebalance to
# start, so that the kill lands mid-rebalance.
PROVOKE_SHARE = 0.5
DEFAULT_PAUSE_S = (0.5, 2.0)


@dataclass(frozen=True)
class Step:
    """One action of a chaos run.

    ``group`` indexes the run's KIP-848 groups, except for ``KILL_CLASSIC`` (the classic
    groups), ``KILL_WORKER`` and ``ALTER_CONNECTOR`` (the Connect groups) and
    ``KILL_PARTITION`` (the KIP-848 groups, then the classic ones, then the Connect ones);
    ``pick`` chooses the victim among the live consumers or workers of that kind
    (``alive[pick % len(alive)]``), or for ``ALTER_CONNECTOR`` the connector
    (``pick % connectors``) and its new task count (``tasks``); ``provoke`` asks a partition
    kill to start a rebalance first and kill mid-rebalance.
    """

    index: int
    pause_s: float
    kind: str
    group: int
    pick: int
    provoke: bool = False

    @property
    def tasks(self) -> int:
        """``ALTER_CONNECTOR``'s new task count, 1..MAX_CHAOS_TASKS."""
        return 1 + (self.pick >> 8) % MAX_CHAOS_TASKS


def chaos_schedule(
    seed: int,
    groups: int,
    classic_groups: int = 0,
    pause_s: tuple[float, float] = DEFAULT_PAUSE_S,
    connect_groups: int = 0,
    node_faults: bool = False,
) -> Iterator[Step]:
    """The endless schedule of run ``seed``: two fixed openers, then random steps.

    The openers make every run, however short, cover the two kills that matter most: a
    partition killed mid-rebalance, then the controller. Classic kills are drawn only when the
    run has classic groups, worker kills and connector changes only when it has Connect
    groups (Connect groups of either protocol: ``connect_groups`` counts them all), node
    kills and pauses only when ``node_faults`` is set.
    """
    if groups < 1 or classic_groups < 0 or connect_groups < 0:
        raise ValueError("a chaos run needs at least one consumer group")
    low, high = pause_s
    if not 0 <= low <= high:
        raise ValueError(f"pause bounds must satisfy 0 <= low <= high, got {pause_s}")
    rng = random.Random(seed)
    kinds = [k for k in WEIGHTS if (k not in NEEDS_CLASSIC or classic_groups)
             and (k not in NEEDS_CONNECT or connect_groups)
             and (k not in NEEDS_NODES or node_faults)]
    weights = [WEIGHTS[k] for k in kinds]
    yield Step(0, 0.0, KILL_PARTITION, rng.randrange(groups), 0, provoke=True)
    yield Step(1, rng.uniform(low, high), KILL_CONTROLLER, rng.randrange(groups), 0)
    index = 2
    while True:
        pause = rng.uniform(low, high)
        kind = rng.choices(kinds, weights)[0]
        span = {KILL_CLASSIC: classic_groups, KILL_WORKER: connect_groups,
                ALTER_CONNECTOR: connect_groups,
                KILL_PARTITION: groups + classic_groups + connect_groups}
        group = rng.randrange(span.get(kind, groups))
        pick = rng.randrange(1 << 30)
        provoke = kind == KILL_PARTITION and rng.random() < PROVOKE_SHARE
        yield Step(index, pause, kind, group, pick, provoke)
        index += 1
