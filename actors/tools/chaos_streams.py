"""Chaos with streams groups (KIP-1071) beside the run's other groups: ``--streams-groups N``.

Each streams group runs ``STREAMS_MEMBERS`` light member actors
(``actors/clients/streams_member.py``: a word count's topology over a topic of the run, two
subtopologies, the second stateful; one standby replica, members spread over
``PROCESSES`` Streams processes so standbys have somewhere to go and somewhere not to).
The run's schedule (``chaos_schedule``, the seed's) drives them too: on each step a generator
seeded by the run's seed and the step's index picks a streams group and, by the step's kind,
kills its coordinator partition (on a provoked kill a new member joins first, so the kill lands
mid-rebalance), kills one of its members (and starts a replacement), or adds a member. After
the run's own checks, each streams group settles and invariant 8 is checked over every
member's timeline, killed members' included (``invariants_streams``): no task active on two
members at once; at the end every task active on exactly one live member and no standby on
its active's process.

Built on the share groups' run (``chaos_share``), so ``--share-groups`` and
``--streams-groups`` combine.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from pathlib import Path

import ray
from ray.exceptions import RayActorError

from actors.cluster import Cluster
from actors.tools.chaos import SETTLE_TIMEOUT_S, ChaosReport
from actors.tools.chaos_schedule import ADD_CONSUMER, KILL_CONSUMER, KILL_PARTITION
from actors.tools.chaos_share import ShareChaosRun, read_timeline
from actors.tools.invariants import Violation
from actors.tools.invariants_streams import STREAMS_INVARIANT, check_streams
from protocol.streams import messages as sm

STREAMS_MEMBERS = 3
MAX_STREAMS_MEMBERS = 5
PROCESSES = 2
STANDBYS = 1
# The group configs a streams group of a run gets, within the cluster's bounds: short, so a
# killed member's tasks move within the run's patience.
SESSION_TIMEOUT_MS = 4_000
HEARTBEAT_INTERVAL_MS = 300
STOP_TIMEOUT_S = 30.0
DEATH_TIMEOUT_S = 30.0
# Seeds this module's own generator apart from the share groups' (same step, other draws).
SALT = 7_919


@dataclass
class _Member:
    handle: object
    group: str
    path: Path
    member_id: str
    dead_at: float | None = None  # wall clock, when it was seen dead


class StreamsChaosRun(ShareChaosRun):
    def __init__(self, cluster: Cluster, workdir: Path, groups: int, consumers: int,
                 partitions: int, seed: int, progress: bool, share_groups: int,
                 streams_groups: int, **options) -> None:
        super().__init__(cluster, workdir, groups, consumers, partitions, seed, progress,
                         share_groups, **options)
        self.streams_groups = [f"{self.tag}-t{i}" for i in range(streams_groups)]
        self.streams_members: list[_Member] = []
        self.streams_kills = 0
        self.streams_added = 0
        self.streams_partition_kills = 0
        self.streams_events = 0
        self.streams_settled_s = 0.0

    def run(self, seconds: float | None = None, steps: int | None = None) -> ChaosReport:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for g in self.streams_groups:
            self.cluster.create_topic(self.topics.setdefault(g, f"{g}-words"), self.partitions)
            self.cluster.set_group_config(g, **self._group_configs())
            for _ in range(STREAMS_MEMBERS):
                self._spawn_streams(g)
        report = super().run(seconds, steps)
        report.violations.sort(key=lambda v: v.invariant)
        return report

    def _group_configs(self) -> dict[str, int]:
        c = self.cluster.config
        return {
            "streams_session_timeout_ms": min(max(SESSION_TIMEOUT_MS,
                                                  c.group_streams_min_session_timeout_ms),
                                              c.group_streams_max_session_timeout_ms),
            "streams_heartbeat_interval_ms": min(max(HEARTBEAT_INTERVAL_MS,
                                                     c.group_streams_min_heartbeat_interval_ms),
                                                 c.group_streams_max_heartbeat_interval_ms),
            "streams_num_standby_replicas": min(STANDBYS, c.group_streams_max_standby_replicas),
            "streams_initial_rebalance_delay_ms": 0,
        }

    def _spawn_streams(self, group: str) -> None:
        n = len(self.streams_members)
        path = self.workdir / f"streams-{n}.jsonl"
        handle = self.cluster.spawn_streams_member(
            group, self.topics[group], process_id=f"{group}-process-{n % PROCESSES}",
            timeline_path=str(path))
        self.streams_members.append(_Member(handle, group, path,
                                            ray.get(handle.member_id.remote())))

    def _alive_streams(self, group: str) -> list[_Member]:
        return [s for s in self.streams_members if s.dead_at is None and s.group == group]

    def _act(self, step) -> None:
        super()._act(step)
        if not self.streams_groups:
            return
        rng = random.Random((self.seed * 1_000_003 + step.index) * SALT)
        group = rng.choice(self.streams_groups)
        alive = self._alive_streams(group)
        if step.kind == KILL_PARTITION and rng.random() < 0.5:
            if step.provoke and len(alive) < MAX_STREAMS_MEMBERS:
                self._spawn_streams(group)  # its join starts a rebalance the kill lands in
                self.streams_added += 1
            self.cluster.kill_partition(self.cluster.partition_for(group))
            self.streams_partition_kills += 1
        elif step.kind == KILL_CONSUMER and alive:
            self._kill(rng.choice(alive))
            self._spawn_streams(group)
        elif step.kind == ADD_CONSUMER and len(alive) < MAX_STREAMS_MEMBERS:
            self._spawn_streams(group)
            self.streams_added += 1

    def _kill(self, victim: _Member) -> None:
        """Kill a member's actor and note when it was dead: its tasks were owned until then."""
        ray.kill(victim.handle, no_restart=True)
        deadline = time.monotonic() + DEATH_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                ray.get(victim.handle.member_id.remote(), timeout=1.0)
            except RayActorError:
                break
            except ray.exceptions.GetTimeoutError:
                continue
            time.sleep(0.02)
        victim.dead_at = time.time()
        self.streams_kills += 1

    # ------------------------------------------------------------------ settle and check

    def _settle_and_check(self) -> None:
        super()._settle_and_check()
        started = time.monotonic()
        seen = {g: self._settle_streams(g) for g in self.streams_groups}
        self.streams_settled_s = time.monotonic() - started
        for g in self.streams_groups:
            self.report.violations += self._check_streams(g, seen[g])
        for s in self.streams_members:
            if s.dead_at is None:
                ray.get(s.handle.stop.remote(leave=True), timeout=STOP_TIMEOUT_S)

    def _tasks(self) -> set[tuple[str, int]]:
        return {(sub, p) for sub in ("0", "1") for p in range(self.partitions)}

    def _settle_streams(self, group: str) -> list[dict]:
        """Wait (bounded) until the group is stable at one epoch, its live members' active
        tasks are every task once, and each member's timeline ends where the member is; the
        timelines read then are what the checks judge (a stall after the settle, members
        fenced by their own session deadline, is a new episode, not the end state). At the
        deadline, the last timelines read: the checks say what is wrong."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        tasks = sorted(self._tasks())
        while True:
            alive = self._alive_streams(group)
            owned = ray.get([s.handle.owned.remote() for s in alive])
            events = [e for s in self.streams_members if s.group == group
                      for e in read_timeline(s.path)]
            if time.monotonic() >= deadline:
                return events
            described = self.cluster.call(sm.StreamsGroupDescribeRequest([group])).groups[0]
            epochs = {o["epoch"] for o in owned}
            actives = sorted(tuple(t) for o in owned for t in o["active"])
            last = {e["member_id"]: sorted(map(tuple, e["active"])) for e in events}
            if (described.group_state == "stable" and epochs == {described.group_epoch}
                    and actives == tasks
                    and all(last.get(s.member_id) == sorted(map(tuple, o["active"]))
                            for s, o in zip(alive, owned, strict=True))):
                return events
            time.sleep(0.1)

    def _check_streams(self, group: str, events: list[dict]) -> list[Violation]:
        mine = [s for s in self.streams_members if s.group == group]
        self.streams_events += len(events)
        live = [s for s in mine if s.dead_at is None]
        found = []
        for s, stats in zip(live, ray.get([s.handle.stats.remote() for s in live]), strict=True):
            if stats["error"] is not None:
                found.append(Violation(STREAMS_INVARIANT, f"streams member {s.member_id} of "
                                       f"{group} failed with error {stats['error']}"))
        ends = {s.member_id: s.dead_at for s in mine if s.dead_at is not None}
        return found + check_streams(events, ends, [s.member_id for s in live], self._tasks())

    def streams_summary(self) -> str:
        return (f"streams groups: {len(self.streams_groups)}, streams members: "
                f"{len(self.streams_members)} ({self.streams_kills} killed, "
                f"{self.streams_added} added), streams-group partition kills: "
                f"{self.streams_partition_kills}, task timeline events: "
                f"{self.streams_events}, settled in {self.streams_settled_s:.1f} s")


def run_chaos(cluster: Cluster, seconds: float | None, workdir: str | Path, groups: int = 3,
              consumers: int = 3, partitions: int = 6, seed: int = 0, progress: bool = True,
              share_groups: int = 0, streams_groups: int = 1, steps: int | None = None,
              **options) -> ChaosReport:
    """``chaos.run_chaos`` with ``streams_groups`` streams groups (and ``share_groups`` share
    groups) beside its groups; ``options`` are ``ChaosRun``'s. The report's summary gains a
    line about the streams groups (and one about the share groups, if any)."""
    run = StreamsChaosRun(cluster, Path(workdir), groups, consumers, partitions, seed,
                          progress, share_groups, streams_groups, **options)
    report = run.run(seconds, steps)
    summary = report.summary
    lines = [run.share_summary()] if share_groups else []
    lines.append(run.streams_summary())

    report.summary = lambda: "\n".join([summary(), *lines])  # type: ignore[method-assign]
    return report
