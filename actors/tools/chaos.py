"""Chaos: run groups of consumers while killing partition and consumer actors at random.

For ``seconds``, several groups consume while the runner, at random moments, kills a
group's coordinator partition (half of the time just after provoking a rebalance, so the
kill lands mid-rebalance), kills a consumer actor (and starts a replacement), or adds a
consumer. Then it lets the system settle and checks DESIGN.md's invariants:

1. no partition owned by two members at once (from every member's timeline, including the
   timelines of killed consumers, which their actors append to files as they go);
2. member epochs never go down and never exceed the group epoch;
3. once chaos stops, each group converges: every partition owned by exactly one member;
4. a restarted partition serves what it acknowledged: the group epoch and every surviving
   member's epoch right after reload are at least what they were just before the kill;
5. committed offsets, read before and after every action, never go back or vanish, and
   every partition's processed ranges (the consumers' synthetic streams) leave no gap.

Everything random comes from ``seed``, so a failing run can be replayed (up to timing).
"""

from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import ray

from actors.cluster import Cluster
from actors.tools.invariants import (
    Violation,
    check_all,
    check_converged,
    check_not_behind,
    check_offsets_monotonic,
    check_stream,
    summarize,
)
from protocol import messages as m

SETTLE_TIMEOUT_S = 60.0
PROGRESS_WIDTH = 30


@dataclass
class ChaosReport:
    seconds: float
    partition_kills: int = 0
    mid_rebalance_kills: int = 0
    consumer_kills: int = 0
    consumers_added: int = 0
    rebalances: int = 0
    events: int = 0
    commits: int = 0
    violations: list[Violation] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"chaos: {self.seconds:.0f} s, kills: {self.partition_kills} partitions "
            f"({self.mid_rebalance_kills} mid-rebalance) + {self.consumer_kills} consumers, "
            f"consumers added: {self.consumers_added}, rebalances: {self.rebalances}, "
            f"timeline events: {self.events}, acknowledged commits: {self.commits}\n"
            f"{summarize(self.violations)}"
        )


@dataclass
class _Consumer:
    handle: object
    group: str
    timeline_path: Path
    killed_at: float | None = None


class ChaosRun:
    def __init__(self, cluster: Cluster, workdir: Path, groups: int, consumers: int,
                 partitions: int, seed: int, progress: bool) -> None:
        self.cluster = cluster
        self.rng = random.Random(seed)
        self.workdir = workdir
        self.progress = progress
        self.tag = f"chaos{seed}-{int(time.time() * 1000) % 10**8}"
        self.groups = [f"{self.tag}-g{i}" for i in range(groups)]
        self.topics = {g: f"{g}-topic" for g in self.groups}
        self.partitions = partitions
        self.initial_consumers = consumers
        self.consumers: list[_Consumer] = []
        self.report = ChaosReport(seconds=0)
        self.offset_samples: list[dict[tuple[str, str, int], int]] = []

    # ------------------------------------------------------------------ the run

    def run(self, seconds: float) -> ChaosReport:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for g in self.groups:
            self.cluster.create_topic(self.topics[g], self.partitions)
            for _ in range(self.initial_consumers):
                self._spawn(g)
        started = time.monotonic()
        for g in self.groups:
            self.cluster.wait_stable(g, timeout_s=SETTLE_TIMEOUT_S)
        self._kill_mid_rebalance()  # at least one kill lands mid-rebalance, whatever the seed
        while (elapsed := time.monotonic() - started) < seconds:
            self._show(elapsed, seconds)
            time.sleep(self.rng.uniform(0.5, 2.0))
            self._sample_offsets()
            self.rng.choice([self._kill_partition, self._kill_partition, self._kill_consumer,
                             self._add_consumer])()
            self._sample_offsets()
        self._show(seconds, seconds)
        if self.progress:
            print(file=sys.stderr)
        self.report.seconds = time.monotonic() - started
        self._settle_and_check()
        return self.report

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
        handle = self.cluster.spawn_consumer(
            group, topics=[self.topics[group]], timeline_path=str(path)
        )
        self.consumers.append(_Consumer(handle, group, path))

    def _alive(self, group: str | None = None) -> list[_Consumer]:
        return [c for c in self.consumers
                if c.killed_at is None and (group is None or c.group == group)]

    # ------------------------------------------------------------------ actions

    def _kill_mid_rebalance(self, attempts: int = 5) -> None:
        for _ in range(attempts):
            before = self.report.mid_rebalance_kills
            self._kill_partition(provoke=True)
            if self.report.mid_rebalance_kills > before:
                return

    def _kill_partition(self, provoke: bool | None = None) -> None:
        group = self.rng.choice(self.groups)
        if provoke or (provoke is None and self.rng.random() < 0.5):
            self._spawn(group)  # provoke a rebalance, then kill while it is under way
            self.report.consumers_added += 1
            self._wait_unstable(group)
        before = self.cluster.describe(group)
        p = self.cluster.partition_for(group)
        self.cluster.kill_partition(p)
        self.report.partition_kills += 1
        if before.group_state in ("assigning", "reconciling"):
            self.report.mid_rebalance_kills += 1
        after = self.cluster.describe(group)  # retried until the partition has reloaded
        self.report.violations += check_not_behind(before, after)

    def _wait_unstable(self, group: str, timeout_s: float = 3.0) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.cluster.describe(group).group_state in ("assigning", "reconciling"):
                return
            time.sleep(0.02)

    def _kill_consumer(self) -> None:
        alive = self._alive()
        if len(alive) <= len(self.groups):
            return self._add_consumer()
        victim = self.rng.choice(alive)
        ray.kill(victim.handle, no_restart=True)
        victim.killed_at = time.monotonic()
        self.report.consumer_kills += 1
        self._spawn(victim.group)

    def _add_consumer(self) -> None:
        self._spawn(self.rng.choice(self.groups))
        self.report.consumers_added += 1

    # ------------------------------------------------------------------ the checks

    def _settle_and_check(self) -> None:
        expected = {g: [(self.topics[g], p) for p in range(self.partitions)] for g in self.groups}
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
        for g in self.groups:
            described = self.cluster.describe(g)
            epochs[g] = described.group_epoch
            self.report.rebalances += described.group_epoch
        self.report.events = len(events)
        self.report.violations += check_all(events, ends, end, epochs)
        self._sample_offsets()
        self.report.violations += check_offsets_monotonic(self.offset_samples)
        self.report.violations += check_stream(events, self.offset_samples[-1])
        self.report.commits = sum(1 for e in events if e["event"] == "committed")
        self.report.violations.sort(key=lambda v: v.invariant)

    def _assignments(self) -> dict[tuple[str, str], list[tuple[str, int]]]:
        out = {}
        alive = self._alive()
        members = ray.get([c.handle.members.remote() for c in alive])
        for c, ms in zip(alive, members, strict=True):
            for mem in ms:
                out[(c.group, mem["member_id"])] = [tuple(tp) for tp in mem["assignment"]]
        return out

    def _show(self, elapsed: float, total: float) -> None:
        if not self.progress:
            return
        done = int(PROGRESS_WIDTH * min(elapsed / total, 1.0))
        r = self.report
        bar = "#" * done + "-" * (PROGRESS_WIDTH - done)
        print(
            f"\r[{bar}] {elapsed:5.1f}/{total:.0f} s  kills: {r.partition_kills} partitions, "
            f"{r.consumer_kills} consumers",
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


def run_chaos(cluster: Cluster, seconds: float, workdir: str | Path, groups: int = 3,
              consumers: int = 3, partitions: int = 6, seed: int = 0,
              progress: bool = True) -> ChaosReport:
    run = ChaosRun(cluster, Path(workdir), groups, consumers, partitions, seed, progress)
    return run.run(seconds)
