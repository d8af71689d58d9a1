"""``cohort chaos --share-groups N``: share groups (KIP-932) in the chaos run.

Beside the run's consumer and Connect groups, N share groups of Ray share consumers
(``cluster.spawn_share_consumer``, each appending its timeline to a file) read a topic of
their own. The run's schedule drives them too, with choices drawn from the same seed: a
partition kill also kills a share group's partition half of the time, a consumer kill also
kills a share consumer (and starts a replacement), an added consumer may be a share consumer.
When chaos stops, the surviving share consumers close their sessions and leave, and invariant
7 (``invariants_share``) is checked on every share consumer's timeline, killed ones included,
against the share-partitions' start offsets.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import dataclass
from pathlib import Path

import ray

from actors.cluster import Cluster
from actors.tools.chaos import ChaosReport, ChaosRun
from actors.tools.chaos_schedule import ADD_CONSUMER, KILL_CONSUMER, KILL_PARTITION
from actors.tools.invariants_share import check_share
from protocol import messages as m
from protocol.wire.stream import SyntheticStream

SHARE_CONSUMERS = 2
MAX_SHARE_CONSUMERS = 5
STOP_TIMEOUT_S = 30.0


@dataclass
class _Share:
    handle: object
    group: str
    path: Path
    member_id: str
    killed: bool = False


class ShareChaosRun(ChaosRun):
    def __init__(self, cluster: Cluster, workdir: Path, groups: int, consumers: int,
                 partitions: int, seed: int, progress: bool, share_groups: int,
                 **options) -> None:
        super().__init__(cluster, workdir, groups, consumers, partitions, seed, progress,
                         **options)
        self.share_groups = [f"{self.tag}-s{i}" for i in range(share_groups)]
        self.share_consumers: list[_Share] = []
        self.share_kills = 0
        self.share_partition_kills = 0
        self.share_events = 0
        self.share_acquired = 0

    def run(self, seconds: float | None = None, steps: int | None = None) -> ChaosReport:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for g in self.share_groups:
            self.cluster.create_topic(self.topics.setdefault(g, f"{g}-topic"), self.partitions)
            for _ in range(SHARE_CONSUMERS):
                self._spawn_share(g)
        report = super().run(seconds, steps)
        report.violations.sort(key=lambda v: v.invariant)
        return report

    def _spawn_share(self, group: str) -> None:
        path = self.workdir / f"share-{len(self.share_consumers)}.jsonl"
        handle = self.cluster.spawn_share_consumer(group, topics=[self.topics[group]],
                                                   timeline_path=str(path))
        self.share_consumers.append(_Share(handle, group, path,
                                           ray.get(handle.member_id.remote())))

    def _act(self, step) -> None:
        super()._act(step)
        if not self.share_groups:
            return
        rng = random.Random(self.seed * 1_000_003 + step.index)
        group = rng.choice(self.share_groups)
        alive = [s for s in self.share_consumers if not s.killed and s.group == group]
        if step.kind == KILL_PARTITION and rng.random() < 0.5:
            self.cluster.kill_partition(self.cluster.partition_for(group))
            self.share_partition_kills += 1
        elif step.kind == KILL_CONSUMER and alive:
            victim = rng.choice(alive)
            ray.kill(victim.handle, no_restart=True)
            victim.killed = True
            self.share_kills += 1
            self._spawn_share(group)
        elif step.kind == ADD_CONSUMER and len(alive) < MAX_SHARE_CONSUMERS:
            self._spawn_share(group)

    def _settle_and_check(self) -> None:
        super()._settle_and_check()
        for s in self.share_consumers:
            if not s.killed:
                ray.get(s.handle.stop.remote(leave=True), timeout=STOP_TIMEOUT_S)
        limit = self.cluster.config.group_share_delivery_count_limit
        end = SyntheticStream(0).end_offset(int(time.time() * 1000))
        for g in self.share_groups:
            mine = [s for s in self.share_consumers if s.group == g]
            events = [e for s in mine for e in read_timeline(s.path)]
            resp = self.cluster.call(m.DescribeShareGroupOffsetsRequest(group_id=g,
                                                                         log_end_offset=end))
            starts = {(t.topic_id, p.partition): p.start_offset
                      for t in resp.topics for p in t.partitions if p.start_offset >= 0}
            killed = {s.member_id for s in mine if s.killed}
            self.report.violations += check_share(events, starts, limit, killed)
            self.share_events += len(events)
            self.share_acquired += sum(e["last_offset"] - e["first_offset"] + 1
                                       for e in events if e["event"] == "acquired")

    def share_summary(self) -> str:
        return (f"share groups: {len(self.share_groups)}, share consumers: "
                f"{len(self.share_consumers)} ({self.share_kills} killed), share-group "
                f"partition kills: {self.share_partition_kills}, records acquired: "
                f"{self.share_acquired}, "
                f"timeline events: {self.share_events}")


def read_timeline(path: Path) -> list[dict]:
    """A timeline file's events (a client actor appends one JSON object a line; a torn last
    line, written by a killed actor, is not one)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().split("\n")[:-1] if line.strip()]


def run_chaos(cluster: Cluster, seconds: float | None, workdir: str | Path, groups: int = 3,
              consumers: int = 3, partitions: int = 6, seed: int = 0, progress: bool = True,
              share_groups: int = 1, steps: int | None = None, **options) -> ChaosReport:
    """``chaos.run_chaos`` with ``share_groups`` share groups beside its groups; ``options``
    are ``ChaosRun``'s. The report's summary gains a line about the share groups."""
    run = ShareChaosRun(cluster, Path(workdir), groups, consumers, partitions, seed, progress,
                        share_groups, **options)
    report = run.run(seconds, steps)
    summary = report.summary

    report.summary = lambda: summary() + "\n" + run.share_summary()  # type: ignore[method-assign]
    return report
