"""Kafka Connect worker groups in a chaos run.

The chaos run (``actors.tools.chaos``) gives this module its Connect groups: groups of
``ConnectWorker`` actors on the new protocol (ConnectGroupHeartbeat, seed 004) and classic
Connect groups (JoinGroup/SyncGroup with protocol type "connect", the ``sessioned``
sub-protocol), each running two connectors of synthetic tasks. The schedule's steps for them
(``chaos_schedule``): a worker killed (``ray.kill``, as a crashed process; a replacement
starts at once), a connector's task count changed, and the group's coordinator partition
killed, half of the time just after a worker joined or left so that the kill lands
mid-rebalance. Workers append their ownership timeline and the ranges their tasks ran to
files, so a killed worker's history is still read at the end, where the Connect invariants
are checked:

1. no connector or task owned by two workers at once (``check_connect_exclusive``, a killed
   worker owning until its kill) and no unit's work run by two workers at once
   (``check_connect_work``, from the tasks' own ``ran`` ranges);
2. worker epochs never go down nor exceed the group epoch (``check_epochs``);
3. once chaos stops, every configured connector and task runs on exactly one live worker
   (``check_connect_converged``).

A killed worker's work is held for ``scheduled.rebalance.max.delay.ms`` before it moves, as
Kafka Connect holds it; the run uses a short delay (``CHAOS_DELAY_MS``) so the work comes
back within the run, and the convergence wait covers session timeout plus that delay.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import ray

from actors.cluster import Cluster
from actors.tools.chaos_schedule import Step
from actors.tools.invariants import (
    Violation,
    check_connect_converged,
    check_connect_exclusive,
    check_connect_work,
    check_epochs,
)
from protocol import messages as m

CONNECTORS = (("sink", 4), ("source", 2))  # each Connect group's connectors at the start
CHAOS_DELAY_MS = 2_000  # scheduled.rebalance.max.delay.ms of the run's workers
EXTRA_WORKERS_PER_GROUP = 2  # beyond it a provoked rebalance is a graceful leave + a join
OWNERSHIP_EVENTS = ("assigned", "revoked", "lost")


@dataclass
class _Worker:
    handle: object
    group: str
    classic: bool
    timeline_path: Path
    killed_at: float | None = None


@dataclass
class ConnectCounts:
    """What the Connect side of a run did, for its report."""

    worker_kills: int = 0
    workers_added: int = 0
    connector_changes: int = 0
    events: int = 0
    work_ranges: int = 0
    rebalances: int = 0


class ConnectChaos:
    """The Connect groups of one chaos run: their workers, the steps on them, their checks."""

    def __init__(self, cluster: Cluster, workdir: Path, tag: str, groups: int,
                 classic_groups: int, workers: int) -> None:
        self.cluster = cluster
        self.workdir = workdir
        self.new = [f"{tag}-k{i}" for i in range(groups)]
        self.classic = [f"{tag}-kc{i}" for i in range(classic_groups)]
        self.groups = self.new + self.classic  # the schedule's Connect group indexes
        self.initial_workers = workers
        self.workers: list[_Worker] = []
        self.counts = ConnectCounts()

    # ------------------------------------------------------------------ start

    def start(self) -> None:
        for g in self.groups:
            for name, tasks in CONNECTORS:
                self.cluster.create_connector(g, name, tasks)
            for _ in range(self.initial_workers):
                self.spawn(g)

    def spawn(self, group: str) -> None:
        path = self.workdir / f"worker-{len(self.workers)}.jsonl"
        classic = group in self.classic
        handle = self.cluster.spawn_worker(
            group, protocol="classic" if classic else "connect", timeline_path=str(path),
            scheduled_rebalance_max_delay_ms=CHAOS_DELAY_MS,
        )
        self.workers.append(_Worker(handle, group, classic, path))

    def alive(self, group: str | None = None) -> list[_Worker]:
        return [w for w in self.workers
                if w.killed_at is None and (group is None or w.group == group)]

    def wait_converged(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while self.unconverged():
            if time.monotonic() > deadline:
                raise TimeoutError(f"Connect groups not converged after {timeout_s} s")
            time.sleep(0.2)

    # ------------------------------------------------------------------ steps

    def kill_worker(self, step: Step) -> None:
        """Kill a live worker (``alive[pick % len(alive)]``) and start its replacement; with
        only one worker per group left, add one to the step's group instead."""
        alive = self.alive()
        if len(alive) <= len(self.groups):
            self.spawn(self.groups[step.group])
            self.counts.workers_added += 1
            return
        victim = alive[step.pick % len(alive)]
        ray.kill(victim.handle, no_restart=True)
        victim.killed_at = time.monotonic()
        self.counts.worker_kills += 1
        self.spawn(victim.group)

    def alter_connector(self, step: Step) -> None:
        """Change one connector's task count (tasks added or removed bump the group epoch)."""
        group = self.groups[step.group]
        names = sorted(self.cluster.list_connectors(group))
        self.cluster.alter_connector(group, names[step.pick % len(names)], step.tasks)
        self.counts.connector_changes += 1

    def provoke(self, group: str, pick: int) -> None:
        """Start a rebalance: a worker joins, or at the group's bound one leaves and a new
        one joins."""
        alive = self.alive(group)
        if len(alive) < self.initial_workers + EXTRA_WORKERS_PER_GROUP:
            self.spawn(group)
            self.counts.workers_added += 1
            return
        leaver = alive[pick % len(alive)]
        ray.get(leaver.handle.stop.remote(leave=True))
        leaver.killed_at = time.monotonic()
        self.spawn(group)

    def describe(self, group: str) -> object:
        """The group as ``check_not_behind`` reads it: state, epoch (a classic Connect
        group's generation) and its workers' epochs (none for classic workers)."""
        if group in self.classic:
            g = self.cluster.call(m.DescribeGroupsRequest(groups=[group])).groups[0]
            return SimpleNamespace(group_id=group, error_code=g.error_code,
                                   group_state=g.group_state, group_epoch=g.generation_id,
                                   members=[])
        return self.cluster.describe_connect(group)

    # ------------------------------------------------------------------ checks

    def unconverged(self) -> list[Violation]:
        """Invariant 3 now: the live workers run every configured unit exactly once."""
        alive = self.alive()
        infos = ray.get([w.handle.info.remote() for w in alive])
        assignments = {(w.group, i["member_id"]): i["assignment"]
                       for w, i in zip(alive, infos, strict=True)}
        connectors = {g: self.cluster.list_connectors(g) for g in self.groups}
        return check_connect_converged(assignments, connectors)

    def check(self, deadline: float) -> list[Violation]:
        """Wait (until ``deadline``) for convergence, stop the workers, check their history."""
        while True:
            unconverged = self.unconverged()
            if not unconverged or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        end = time.monotonic()
        for w in self.alive():
            ray.get(w.handle.stop.remote(leave=False))
        events, work, ends = [], [], {}
        for w in self.workers:
            for e in read_worker_file(w.timeline_path):
                if e["event"] == "ran":
                    work.append(e)
                    continue
                events.append(e)
                ends[e["member_id"]] = w.killed_at if w.killed_at is not None else end
        events.sort(key=lambda e: e["t"])
        epochs = {g: self.describe(g).group_epoch for g in self.groups}
        self.counts.rebalances = sum(epochs.values())
        self.counts.events, self.counts.work_ranges = len(events), len(work)
        return (unconverged + check_connect_exclusive(events, ends, end)
                + check_connect_work(work) + check_epochs(events, epochs))


def read_worker_file(path: Path) -> list[dict]:
    """A worker's timeline file: ownership events and ``ran`` ranges, complete lines only
    (a line the actor is still writing is read next time)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().split("\n")[:-1] if line.strip()]
