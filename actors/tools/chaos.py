"""Chaos: run groups of consumers and Connect workers while killing partitions, the controller,
consumers and workers.

KIP-848 groups and classic groups consume, and Kafka Connect worker groups (new protocol and
classic, ``chaos_connect``) run connectors, while the runner follows the run's schedule
(``chaos_schedule``: a pure function of the seed): it kills a group's coordinator partition
(half of the time just after provoking a rebalance, so the kill lands mid-rebalance), kills
the controller with a topic creation and a group config change in flight, kills a consumer,
a classic consumer or a Connect worker (and starts a replacement), adds a consumer, or changes
a connector's task count. Then it lets the system settle and checks DESIGN.md's invariants
(for Connect groups, over connectors and tasks: ``chaos_connect``):

1. no partition owned by two members at once (from every member's timeline, including the
   timelines of killed consumers, which their actors append to files as they go);
2. member epochs never go down and never exceed the group epoch (generation, for classic);
3. once chaos stops, each group converges: every partition owned by exactly one member; and
   after a controller restart every partition catches up on its image;
4. a restarted partition serves what it acknowledged: the group epoch and every surviving
   member's epoch right after reload are at least what they were just before the kill; a
   restarted controller still has every topic and group config it acknowledged;
5. committed offsets, read before and after every action, never go back or vanish; every
   commit a consumer saw acknowledged is still held at the end; and every partition's
   processed ranges (the consumers' synthetic streams) leave no gap.

Share groups (``chaos_share``, invariant 7) and streams groups (``chaos_streams``, invariant 8)
join a run through runs built on this one, driven by the same schedule.

A run of ``steps`` replays its seed's schedule exactly; a run of ``seconds`` stops when time is
up, and its report says how many steps that was.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import ray

from actors.cluster import Cluster
from actors.tools.chaos_connect import ConnectChaos
from actors.tools.chaos_controller import kill_controller
from actors.tools.chaos_nodes import NodeChaos
from actors.tools.chaos_schedule import (
    ADD_CONSUMER,
    ALTER_CONNECTOR,
    DEFAULT_PAUSE_S,
    KILL_CLASSIC,
    KILL_CONSUMER,
    KILL_CONTROLLER,
    KILL_PARTITION,
    KILL_WORKER,
    NEEDS_NODES,
    Step,
    chaos_schedule,
)
from actors.tools.invariants import (
    Violation,
    check_all,
    check_converged,
    check_not_behind,
    summarize,
)
from actors.tools.invariants_offsets import (
    check_acknowledged_commits,
    check_offsets_monotonic,
    check_stream,
)
from protocol import messages as m

SETTLE_TIMEOUT_S = 120.0  # a loaded machine starts actors slowly
UNSTABLE_TIMEOUT_S = 10.0
PROGRESS_WIDTH = 30
# Live consumers a group may reach; beyond it a provoked rebalance is a graceful leave.
EXTRA_CONSUMERS_PER_GROUP = 2
CLASSIC_ASSIGNORS = (("range",), ("cooperative-sticky",))  # by classic group index
REBALANCING = ("assigning", "reconciling", "preparing_rebalance", "completing_rebalance")


@dataclass
class ChaosReport:
    seed: int
    seconds: float = 0.0
    steps: int = 0
    partition_kills: int = 0
    mid_rebalance_kills: int = 0
    controller_kills: int = 0
    consumer_kills: int = 0
    classic_kills: int = 0
    consumers_added: int = 0
    rebalances: int = 0
    events: int = 0
    commits: int = 0
    commits_lost: int = 0
    # The Connect side (``chaos_connect``): its groups, worker kills, connector changes,
    # the workers' ownership events and their tasks' ``ran`` ranges.
    connect_groups: list[str] = field(default_factory=list)
    worker_kills: int = 0
    workers_added: int = 0
    connector_changes: int = 0
    connect_events: int = 0
    work_ranges: int = 0
    # Whole-node faults (``--node-kills``, ``chaos_nodes``).
    node_kills: int = 0
    node_pauses: int = 0
    node_faults_skipped: int = 0
    clients_lost_with_nodes: int = 0
    node_failover_max_s: float = 0.0
    violations: list[Violation] = field(default_factory=list)

    @property
    def kills(self) -> int:
        return self.partition_kills + self.controller_kills + self.consumer_kills + \
            self.classic_kills + self.worker_kills

    def summary(self) -> str:
        return (
            f"chaos seed {self.seed}: {self.steps} steps in {self.seconds:.0f} s, "
            f"kills: {self.kills} = {self.partition_kills} partitions "
            f"({self.mid_rebalance_kills} mid-rebalance) + {self.controller_kills} controller "
            f"+ {self.consumer_kills} consumers + {self.classic_kills} classic consumers "
            f"+ {self.worker_kills} connect workers, "
            f"consumers added: {self.consumers_added}, rebalances: {self.rebalances}, "
            f"timeline events: {self.events}, acknowledged commits: {self.commits} "
            f"(lost: {self.commits_lost})\n"
            f"connect groups: {len(self.connect_groups)}, workers added: "
            f"{self.workers_added}, connector changes: {self.connector_changes}, worker "
            f"events: {self.connect_events}, task work ranges: {self.work_ranges}\n"
            f"node kills: {self.node_kills} (every partition serving again within "
            f"{self.node_failover_max_s:.1f} s), node pauses: {self.node_pauses}, skipped "
            f"(no node to hit): {self.node_faults_skipped}, client actors lost with their "
            f"node: {self.clients_lost_with_nodes}\n"
            f"{summarize(self.violations)}\n"
            f"replay: cohort chaos --seed {self.seed} --steps {self.steps}"
        )


@dataclass
class _Consumer:
    handle: object
    group: str
    classic: bool
    timeline_path: Path
    killed_at: float | None = None


class ChaosRun:
    def __init__(self, cluster: Cluster, workdir: Path, groups: int, consumers: int,
                 partitions: int, seed: int, progress: bool, classic_groups: int = 1,
                 pause_s: tuple[float, float] = DEFAULT_PAUSE_S, connect_groups: int = 0,
                 classic_connect_groups: int = 0, node_faults: bool = False) -> None:
        self.cluster = cluster
        self.nodes = NodeChaos(cluster) if node_faults else None
        self.seed = seed
        self.workdir = workdir
        self.progress = progress
        self.pause_s = pause_s
        self.tag = f"chaos{seed}-{int(time.time() * 1000) % 10**8}"
        self.groups = [f"{self.tag}-g{i}" for i in range(groups)]
        self.classic = [f"{self.tag}-c{i}" for i in range(classic_groups)]
        self.topics = {g: f"{g}-topic" for g in self.groups + self.classic}
        self.partitions = partitions
        self.initial_consumers = consumers
        self.consumers: list[_Consumer] = []
        self.connect = ConnectChaos(cluster, workdir, self.tag, connect_groups,
                                    classic_connect_groups, workers=consumers)
        self.report = ChaosReport(seed, connect_groups=list(self.connect.groups))
        self.offset_samples: list[dict[tuple[str, str, int], int]] = []

    # ------------------------------------------------------------------ the run

    def run(self, seconds: float | None = None, steps: int | None = None) -> ChaosReport:
        """Follow the schedule until ``steps`` steps are done or ``seconds`` are up (the two
        openers always run), then settle and check."""
        if seconds is None and steps is None:
            raise ValueError("a chaos run needs seconds or steps")
        try:
            return self._run(seconds, steps)
        finally:
            self._release_consumers()

    def _release_consumers(self) -> None:
        """End the consumers this run spawned, once it is checked. Left running, they
        heartbeat and fetch for the rest of their driver's life (a real client's, whose
        gateway the run may have stopped, reconnects without end: ~30% of a core each in a
        test session)."""
        for c in self.consumers:
            if c.killed_at is None:
                with contextlib.suppress(Exception):  # already gone with its node
                    ray.kill(c.handle, no_restart=True)
                c.killed_at = time.monotonic()

    def _run(self, seconds: float | None, steps: int | None) -> ChaosReport:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for g in self.groups + self.classic:
            self.cluster.create_topic(self.topics[g], self.partitions)
            for _ in range(self.initial_consumers):
                self._spawn(g)
        self.connect.start()
        for g in self.groups + self.classic:
            self._wait_stable(g)
        self.connect.wait_converged(SETTLE_TIMEOUT_S)
        started = time.monotonic()
        schedule = chaos_schedule(self.seed, len(self.groups), len(self.classic), self.pause_s,
                                  len(self.connect.groups), self.nodes is not None)
        for step in schedule:
            elapsed = time.monotonic() - started
            if step.index >= 2 and (
                (steps is not None and step.index >= steps)
                or (seconds is not None and elapsed >= seconds)
            ):
                break
            self._show(step.index, elapsed, seconds, steps)
            time.sleep(step.pause_s)
            self._sample_offsets()
            self._act(step)
            self._sample_offsets()
            self.report.steps = step.index + 1
        if self.progress:
            print(file=sys.stderr)
        self.report.seconds = time.monotonic() - started
        self._settle_and_check()
        return self.report

    def _act(self, step: Step) -> None:
        if step.kind == KILL_PARTITION:
            self._kill_partition(step)
        elif step.kind == KILL_CONTROLLER:
            self.report.controller_kills += 1
            self.report.violations += kill_controller(self.cluster, f"{self.tag}-{step.index}")
        elif step.kind == KILL_CONSUMER:
            self._kill_consumer(step, classic=False)
        elif step.kind == KILL_CLASSIC:
            self._kill_consumer(step, classic=True)
        elif step.kind == ADD_CONSUMER:
            self._spawn(self.groups[step.group])
            self.report.consumers_added += 1
        elif step.kind == KILL_WORKER:
            self.connect.kill_worker(step)
        elif step.kind == ALTER_CONNECTOR:
            self.connect.alter_connector(step)
        elif step.kind in NEEDS_NODES:
            self._node_fault(step)
        else:
            raise ValueError(f"unknown chaos step {step.kind}")

    def _sample_offsets(self) -> None:
        """Read every group's committed offsets: invariant 5 says the readings never go back
        (a partition kill in between must not lose an acknowledged commit)."""
        sample = {}
        for g in self.groups:
            resp = self.cluster.call(m.OffsetFetchRequest(group_id=g))
            for t in resp.topics:
                for p in t.partitions:
                    sample[(g, t.name, p.partition_index)] = p.committed_offset
        self.offset_samples.append(sample)

    def _spawn(self, group: str) -> None:
        path = self.workdir / f"consumer-{len(self.consumers)}.jsonl"
        classic = group in self.classic
        options = {}
        if classic:
            options = {"protocol": "classic",
                       "assignors": CLASSIC_ASSIGNORS[self.classic.index(group) % 2]}
        handle = self.cluster.spawn_consumer(
            group, topics=[self.topics[group]], timeline_path=str(path), **options
        )
        self.consumers.append(_Consumer(handle, group, classic, path))

    def _alive(self, group: str | None = None, classic: bool | None = None) -> list[_Consumer]:
        return [c for c in self.consumers
                if c.killed_at is None and (group is None or c.group == group)
                and (classic is None or c.classic == classic)]

    # ------------------------------------------------------------------ actions

    def _kill_partition(self, step: Step) -> None:
        everyone = self.groups + self.classic + self.connect.groups
        group = everyone[step.group % len(everyone)]
        if step.provoke:
            self._provoke(group, step.pick)
        before = self._describe(group)
        self.cluster.kill_partition(self.cluster.partition_for(group))
        self.report.partition_kills += 1
        if before.group_state in REBALANCING:
            self.report.mid_rebalance_kills += 1
        after = self._describe(group)  # retried until the partition has reloaded
        self.report.violations += check_not_behind(before, after)

    def _node_fault(self, step: Step) -> None:
        self.report.violations += self.nodes.run_step(
            step, self.groups + self.classic + self.connect.groups, self._describe,
            self._alive() + self.connect.alive(),
            lambda c: self._spawn(c.group) if isinstance(c, _Consumer)
            else self.connect.spawn(c.group))

    def _provoke(self, group: str, pick: int) -> None:
        """Start a rebalance and wait until it is under way: a new consumer joins, or, when
        the group is at its bound, one of its consumers leaves and a new one replaces it (the
        same with workers in a Connect group)."""
        alive = self._alive(group)
        if group in self.connect.groups:
            self.connect.provoke(group, pick)
        elif len(alive) < self.initial_consumers + EXTRA_CONSUMERS_PER_GROUP:
            self._spawn(group)
            self.report.consumers_added += 1
        else:
            leaver = alive[pick % len(alive)]
            ray.get(leaver.handle.stop.remote(leave=True))
            leaver.killed_at = time.monotonic()
            self._spawn(group)
        deadline = time.monotonic() + UNSTABLE_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._describe(group).group_state in REBALANCING:
                return
            time.sleep(0.02)

    def _kill_consumer(self, step: Step, classic: bool) -> None:
        groups = self.classic if classic else self.groups
        alive = self._alive(classic=classic)
        if len(alive) <= len(groups):
            self._spawn(groups[step.group])
            self.report.consumers_added += 1
            return
        victim = alive[step.pick % len(alive)]
        ray.kill(victim.handle, no_restart=True)
        victim.killed_at = time.monotonic()
        if classic:
            self.report.classic_kills += 1
        else:
            self.report.consumer_kills += 1
        self._spawn(victim.group)

    def _describe(self, group: str) -> SimpleNamespace:
        """One view of either kind of group: its state, its epoch (a classic group's
        generation) and its members' epochs (none for classic members), as
        ``check_not_behind`` reads them."""
        if group in self.connect.groups:
            return self.connect.describe(group)
        if group in self.classic:
            g = self.cluster.call(m.DescribeGroupsRequest(groups=[group])).groups[0]
            return SimpleNamespace(group_id=group, error_code=g.error_code,
                                   group_state=g.group_state, group_epoch=g.generation_id,
                                   members=[])
        return self.cluster.describe(group)

    def _wait_stable(self, group: str) -> None:
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            g = self._describe(group)
            members = group in self.classic or g.members  # classic views list none
            if g.error_code == 0 and g.group_state == "stable" and members:
                return
            if time.monotonic() > deadline:
                raise TimeoutError(f"group {group} not stable after {SETTLE_TIMEOUT_S} s")
            time.sleep(0.2)

    # ------------------------------------------------------------------ the checks

    def _settle_and_check(self) -> None:
        everyone = self.groups + self.classic
        expected = {g: [(self.topics[g], p) for p in range(self.partitions)] for g in everyone}
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while True:
            assignments = self._assignments()
            converged = check_converged(assignments, expected)
            if not converged or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        self.report.violations += converged
        end = time.monotonic()
        for c in self._alive():
            ray.get(c.handle.stop.remote(leave=False))
        events = [e for c in self.consumers for e in _read_timeline(c.timeline_path)]
        ends = {}
        for c in self.consumers:
            for e in _read_timeline(c.timeline_path):
                ends[e["member_id"]] = c.killed_at if c.killed_at is not None else end
        epochs = {}
        for g in everyone:
            epochs[g] = self._describe(g).group_epoch
            self.report.rebalances += epochs[g]
        self.report.events = len(events)
        self.report.violations += check_all(events, ends, end, epochs)
        self._sample_offsets()
        final = self.offset_samples[-1]
        self.report.violations += check_offsets_monotonic(self.offset_samples)
        self.report.violations += check_stream(events, final)
        lost = check_acknowledged_commits(events, final)
        self.report.commits_lost = len(lost)
        self.report.violations += lost
        self.report.commits = sum(1 for e in events if e["event"] == "committed")
        self.report.violations += self.connect.check(time.monotonic() + SETTLE_TIMEOUT_S)
        c, r = self.connect.counts, self.report
        r.worker_kills, r.workers_added, r.connector_changes = (
            c.worker_kills, c.workers_added, c.connector_changes)
        r.rebalances += c.rebalances
        r.connect_events, r.work_ranges = c.events, c.work_ranges
        if self.nodes is not None:
            self.nodes.report_into(r)
        self.report.violations.sort(key=lambda v: v.invariant)

    def _assignments(self) -> dict[tuple[str, str], list[tuple[str, int]]]:
        out = {}
        alive = self._alive()
        members = ray.get([c.handle.members.remote() for c in alive])
        for c, ms in zip(alive, members, strict=True):
            for mem in ms:
                out[(c.group, mem["member_id"])] = [tuple(tp) for tp in mem["assignment"]]
        return out

    def _show(self, step: int, elapsed: float, seconds: float | None, steps: int | None) -> None:
        if not self.progress:
            return
        share = elapsed / seconds if seconds is not None else step / max(steps or 1, 1)
        done = int(PROGRESS_WIDTH * min(share, 1.0))
        r = self.report
        bar = "#" * done + "-" * (PROGRESS_WIDTH - done)
        print(
            f"\r[{bar}] step {step}, {elapsed:5.1f} s  kills: {r.partition_kills} partitions, "
            f"{r.controller_kills} controller, {r.consumer_kills + r.classic_kills} consumers, "
            f"{self.connect.counts.worker_kills} workers",
            end="", file=sys.stderr, flush=True,
        )


def _read_timeline(path: Path) -> list[dict]:
    if not path.exists():
        return []
    out = []
    # A line the actor is still writing has no newline yet: it is read next time, not now.
    for line in path.read_text().split("\n")[:-1]:
        if line.strip():
            e = json.loads(line)
            e["partitions"] = [tuple(tp) for tp in e["partitions"]]
            out.append(e)
    return out


def run_chaos(cluster: Cluster, seconds: float | None, workdir: str | Path, groups: int = 3,
              consumers: int = 3, partitions: int = 6, seed: int = 0,
              progress: bool = True, classic_groups: int = 1,
              pause_s: tuple[float, float] = DEFAULT_PAUSE_S,
              steps: int | None = None, connect_groups: int = 0,
              classic_connect_groups: int = 0, node_faults: bool = False) -> ChaosReport:
    """One chaos run; ``connect_groups`` Connect worker groups of the new protocol and
    ``classic_connect_groups`` classic ones run beside the consumer groups (none by default
    here; ``cohort chaos`` runs one of each); ``node_faults`` adds kills and stalls of whole
    nodes (``chaos_nodes``: a Ray cluster of several nodes)."""
    run = ChaosRun(cluster, Path(workdir), groups, consumers, partitions, seed, progress,
                   classic_groups, pause_s, connect_groups, classic_connect_groups, node_faults)
    return run.run(seconds, steps)
