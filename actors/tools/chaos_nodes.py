"""Whole-node faults in a chaos run (``cohort chaos --node-kills``): kill a node, or stall one.

A ``KILL_NODE`` step SIGKILLs the raylet of a node that hosts coordinator partitions
(``actors/tools/node_faults``: through a Ray task pinned to that node, so it works wherever the
run can reach Ray); the run waits until the GCS declares the node dead and every partition
serves again from another node, then checks that each group those partitions own is not behind
what it was (invariant 4; the offsets are sampled around every step by the runner, invariant 5).
Every client actor (consumer, Connect worker) that died with the node counts as killed at that
moment and is replaced, as a consumer kill is.

A ``PAUSE_NODE`` step freezes a node (raylet and every process under it) for ``PAUSE_S``: a
stall shorter than both Ray's health checks and the groups' session timeouts, so the node and
its members live on and the coordinators on it simply answer late. A freeze long enough for the
GCS to give the node up (the zombie case) is the subject of ``tests/multinode``, where the
resumed partition process must be fenced by the storage.

The head node (GCS, driver) is never a victim. On one machine (``ray.cluster_utils``) a killed
node stays dead, so a run runs out of victims: such a step is counted as skipped. On a real
cluster the autoscaler or KubeRay replaces the node's pod.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import ray

from actors.runtime.controller import partition_actor_name
from actors.runtime.placement_nodes import alive_nodes, node_of_actors
from actors.tools.chaos_schedule import KILL_NODE, Step
from actors.tools.invariants import Violation, check_not_behind
from actors.tools.node_faults import head_node_id, kill_node, pause_node, wait_dead

PAUSE_S = 0.5
FAILOVER_TIMEOUT_S = 120.0


@dataclass
class NodeCounts:
    node_kills: int = 0
    node_pauses: int = 0
    node_faults_skipped: int = 0
    clients_lost_with_nodes: int = 0
    # Seconds from a node's kill to every partition serving again, one per kill.
    failover_s: list[float] = field(default_factory=list)


class NodeChaos:
    """The node faults of one chaos run on one Cohort."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.counts = NodeCounts()

    def victim(self, pick: int) -> tuple[str, list[int]] | None:
        """A non-head alive node (those hosting partitions first) and the partitions on it."""
        where = node_of_actors()
        head = head_node_id()
        nodes = sorted(n for n in alive_nodes() if n != head)
        hosting = [n for n in nodes if any(where.get(partition_actor_name(p)) == n
                                           for p in range(self.cluster.num_partitions))]
        pool = hosting or nodes
        if not pool:
            return None
        node = pool[pick % len(pool)]
        return node, [p for p in range(self.cluster.num_partitions)
                      if where.get(partition_actor_name(p)) == node]

    def run_step(self, step: Step, groups: list[str], describe: Callable[[str], Any],
                 clients: list, respawn: Callable[[Any], None]) -> list[Violation]:
        """One node fault of the run: the groups whose partitions were on the node are not
        behind afterwards; each client actor (with ``handle``, ``group``, ``killed_at``) that
        died with the node counts as killed when the fault began and is ``respawn``-ed."""
        chosen = self.victim(step.pick)
        if chosen is None:
            self.counts.node_faults_skipped += 1
            return []
        node, partitions = chosen
        hit = [g for g in groups if self.cluster.partition_for(g) in partitions]
        before = [describe(g) for g in hit]
        began = time.monotonic()
        self.fault(step, node)
        violations = [v for g, b in zip(hit, before, strict=True)
                      for v in check_not_behind(b, describe(g))]
        for i in sorted(poll_dead([c.handle for c in clients])):
            clients[i].killed_at = began
            self.counts.clients_lost_with_nodes += 1
            respawn(clients[i])
        return violations

    def report_into(self, report: Any) -> None:
        """Copy the counts into a ``ChaosReport``."""
        c = self.counts
        report.node_kills, report.node_pauses = c.node_kills, c.node_pauses
        report.node_faults_skipped = c.node_faults_skipped
        report.clients_lost_with_nodes = c.clients_lost_with_nodes
        report.node_failover_max_s = max(c.failover_s, default=0.0)

    def fault(self, step: Step, node: str) -> None:
        """Kill ``node`` (and wait until its partitions serve elsewhere) or stall it."""
        started = time.monotonic()
        if step.kind == KILL_NODE:
            kill_node(node)
            wait_dead(node)
            self.cluster.wait_ready(FAILOVER_TIMEOUT_S)
            self.counts.failover_s.append(time.monotonic() - started)
            self.counts.node_kills += 1
        else:
            pause_node(node, PAUSE_S)
            self.counts.node_pauses += 1


def dead_actors(handles: list) -> set[int]:
    """Indexes of the handles whose actor the GCS lists as DEAD (died with its node)."""
    from ray._private import state

    states = {aid: info.get("State") for aid, info in state.actors().items()}
    return {i for i, h in enumerate(handles) if states.get(h._actor_id.hex()) == "DEAD"}


def poll_dead(handles: list, timeout_s: float = 30.0) -> set[int]:
    """The handles whose actors died, once each answers or is DEAD (a node's death reaches the
    GCS's actor table a moment after the node table)."""
    deadline = time.monotonic() + timeout_s
    while True:
        dead = dead_actors(handles)
        live = [h for i, h in enumerate(handles) if i not in dead]
        try:
            ray.get([h.__ray_ready__.remote() for h in live], timeout=5)
            return dead
        except ray.exceptions.RayError:
            if time.monotonic() > deadline:
                return dead_actors(handles)
            time.sleep(0.2)
