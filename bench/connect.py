"""What a rolling restart of a Kafka Connect cluster costs, new protocol against classic Connect.

Run: ``python bench/connect.py [--workers 10 --connectors 50 --tasks 8] [--delay-ms 5000]
[--small]`` (``--small``: 4 workers, 10 connectors x 4 tasks, the assignor at 100 workers x
10,000 tasks). In one run, on one local Ray, the same rolling restart (stop worker i, start its
replacement, wait until every connector and task runs on exactly one worker again, next) is
done for:

1. ``connect-static``: the new protocol (ConnectGroupHeartbeat, seed 004) with static workers
   (``instance_id``, as a StatefulSet restarts them): the worker leaves with epoch -2 and its
   replacement reclaims its work at once;
2. ``connect``: the new protocol, dynamic workers: the leaver's work is held for
   ``scheduled.rebalance.max.delay.ms``, then goes to the replacement;
3. ``classic-sessioned``: classic Connect, incremental cooperative (``connect.protocol=
   sessioned``, Kafka's default): the same hold, through JoinGroup/SyncGroup rounds;
4. ``classic-eager``: classic Connect, eager (``connect.protocol=eager``): every rebalance
   stops every connector and task on every worker.

For each it prints the task-seconds and connector-seconds during which no worker ran a unit
(from the workers' own timelines), the epoch bumps (group epochs for the new protocol,
generations for classic), the run's length and any double ownership (must be 0); then the
ratios classic / new protocol of stopped task-seconds and of epoch bumps, in this one run
(above 1: the new protocol stopped less). Every mode uses the same ``--delay-ms`` (Kafka's
default is 300,000; the bench scales it down so a run ends). Last, the incremental
cooperative assignor's time for one round at 1,000 workers x 100,000 tasks
(``bench/connect_assignor.py``'s scenarios). The machine is shared: compare the modes of
one run with each other, not runs with runs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray

from actors.cluster import Cluster
from actors.tools.invariants import (
    CONNECTOR_TASK,
    check_connect_converged,
    check_connect_exclusive,
    connect_units,
    ownership_intervals,
    unowned_seconds,
)
from bench import connect_assignor
from protocol import messages as m
from protocol.config import CoordinatorConfig

RESULTS = Path(__file__).resolve().parent / "results" / "connect.json"
CONFIG = CoordinatorConfig(
    group_connect_session_timeout_ms=6_000,
    group_connect_heartbeat_interval_ms=300,
    group_min_session_timeout_ms=1_000,
    group_initial_rebalance_delay_ms=300,
)
MODES = ("connect-static", "connect", "classic-sessioned", "classic-eager")
OWNERSHIP = ("assigned", "revoked", "lost")


def _spawn(cluster: Cluster, mode: str, group: str, i: int, delay_ms: int):
    options: dict = {"scheduled_rebalance_max_delay_ms": delay_ms, "records_per_s": 10.0}
    if mode.startswith("classic-"):
        return cluster.spawn_worker(group, protocol="classic",
                                    connect_protocol=mode.removeprefix("classic-"),
                                    heartbeat_interval_ms=300, session_timeout_ms=6_000,
                                    **options)
    instance = f"{group}-{i}" if mode == "connect-static" else None
    return cluster.spawn_worker(group, instance_id=instance, **options)


def _epoch(cluster: Cluster, mode: str, group: str) -> int:
    if mode.startswith("classic-"):
        return cluster.call(m.DescribeGroupsRequest([group])).groups[0].generation_id
    return cluster.describe_connect(group).group_epoch


def _whole(cluster: Cluster, group: str, handles) -> bool:
    infos = ray.get([h.info.remote() for h in handles])
    by_worker = {(group, str(n)): i["assignment"] for n, i in enumerate(infos)}
    return not check_connect_converged(by_worker, {group: cluster.list_connectors(group)})


def _wait_whole(cluster: Cluster, group: str, handles, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not _whole(cluster, group, handles):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{group}: the workers did not run every unit again")
        time.sleep(0.05)


def run_mode(cluster: Cluster, mode: str, workers: int, connectors: int, tasks: int,
             delay_ms: int) -> dict:
    group = f"connect-rolling-{mode}"
    for c in range(connectors):
        cluster.create_connector(group, f"connector-{c:03d}", tasks)
    timeout_s = 120.0 + delay_ms / 1000
    handles = [_spawn(cluster, mode, group, i, delay_ms) for i in range(workers)]
    _wait_whole(cluster, group, handles, timeout_s)
    time.sleep(2.0)  # let the last round settle before the clock starts
    _wait_whole(cluster, group, handles, timeout_s)
    before = _epoch(cluster, mode, group)
    start = time.monotonic()
    events: list[dict] = []
    stopped: dict[str, float] = {}  # member id -> when its process stopped
    for i in range(workers):
        ray.get(handles[i].stop.remote(leave=True))
        at = time.monotonic()
        timeline = ray.get(handles[i].timeline.remote())
        for e in timeline:
            stopped.setdefault(e["member_id"], at)
        events += timeline
        ray.kill(handles[i])
        handles[i] = _spawn(cluster, mode, group, i, delay_ms)
        _wait_whole(cluster, group, handles, timeout_s)
    end = time.monotonic()
    bumps = _epoch(cluster, mode, group) - before
    for h in handles:
        events += ray.get(h.timeline.remote())
        ray.get(h.stop.remote(leave=True))
    events = [e for e in events if e["event"] in OWNERSHIP]
    as_units = [dict(e, partitions=connect_units(e)) for e in events]
    intervals = ownership_intervals(as_units, stopped, end)
    names = [f"connector-{c:03d}" for c in range(connectors)]
    task_units = [(n, t) for n in names for t in range(tasks)]
    return {
        "mode": mode,
        "task_s_stopped": unowned_seconds(intervals, task_units, start, end),
        "connector_s_stopped": unowned_seconds(
            intervals, [(n, CONNECTOR_TASK) for n in names], start, end),
        "epoch_bumps": bumps,
        "seconds": end - start,
        "overlaps": len(check_connect_exclusive(events, stopped, end)),
    }


def _ratio(classic: float, new: float) -> str:
    """classic / new: above 1, the new protocol did better by that factor."""
    if new <= 0:
        return "inf (none with the new protocol)" if classic > 0 else "- (none either way)"
    return f"{classic / new:.2f}x"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=10)
    parser.add_argument("--connectors", type=int, default=50)
    parser.add_argument("--tasks", type=int, default=8, help="tasks per connector")
    parser.add_argument("--delay-ms", type=int, default=5_000,
                        help="scheduled.rebalance.max.delay.ms of every mode")
    parser.add_argument("--modes", nargs="*", default=list(MODES), choices=MODES)
    parser.add_argument("--assignor-workers", type=int, default=1_000)
    parser.add_argument("--assignor-connectors", type=int, default=2_000)
    parser.add_argument("--assignor-tasks", type=int, default=50)
    parser.add_argument("--small", action="store_true",
                        help="4 workers, 10 connectors x 4 tasks; assignor 100 x 200 x 50")
    args = parser.parse_args()
    if args.small:
        args.workers, args.connectors, args.tasks = 4, 10, 4
        args.assignor_workers, args.assignor_connectors = 100, 200
    ray.init(namespace="cohort", include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory(prefix="cohort-connect-bench-") as tmp:
        cluster = Cluster.start(num_partitions=2, storage_path=str(Path(tmp) / "data"),
                                config=CONFIG)
        try:
            rows = [run_mode(cluster, mode, args.workers, args.connectors, args.tasks,
                             args.delay_ms) for mode in args.modes]
        finally:
            cluster.shutdown()
            ray.shutdown()
    print(f"rolling restart of {args.workers} Connect workers running {args.connectors} "
          f"connectors x {args.tasks} tasks, scheduled.rebalance.max.delay.ms "
          f"{args.delay_ms}")
    print(f"{'mode':<20}{'task-s stopped':>16}{'connector-s stopped':>21}{'epoch bumps':>13}"
          f"{'seconds':>10}{'overlaps':>10}")
    for r in rows:
        print(f"{r['mode']:<20}{r['task_s_stopped']:>16.1f}{r['connector_s_stopped']:>21.1f}"
              f"{r['epoch_bumps']:>13}{r['seconds']:>10.1f}{r['overlaps']:>10}")
    by_mode = {r["mode"]: r for r in rows}
    for new_mode in ("connect-static", "connect"):
        new = by_mode.get(new_mode)
        for classic in ("classic-sessioned", "classic-eager"):
            old = by_mode.get(classic)
            if new is None or old is None:
                continue
            print(f"{classic} / {new_mode}: task-seconds stopped "
                  f"{_ratio(old['task_s_stopped'], new['task_s_stopped'])}, epoch bumps "
                  f"{_ratio(old['epoch_bumps'], new['epoch_bumps'])}")
    total = args.assignor_connectors * args.assignor_tasks
    print(f"\nincremental cooperative assignor, {args.assignor_workers} workers x {total} tasks "
          f"({args.assignor_connectors} connectors x {args.assignor_tasks}), one round:")
    assignor = connect_assignor.run(args.assignor_workers, args.assignor_connectors,
                                    args.assignor_tasks, repeat=1)
    for r in assignor:
        print(f"  {r['scenario']:<22}{r['seconds']:>8.3f} s  moved {r['moved']}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"rolling_restart": rows, "assignor": assignor,
                                   "args": vars(args)}, indent=2) + "\n")
    return 0 if all(r["overlaps"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
