"""What a rolling restart costs, for each way a consumer can rejoin its group.

Run: ``python bench/rolling_restart.py [--consumers 10] [--partitions 120]
[--revocation-cost-ms 20] [--small] [--explain]``. ``--small`` is the old form: 4 consumers on 12
partitions. Every consumer pays ``--revocation-cost-ms`` per partition it revokes (what a real
consumer spends committing and flushing it) before it tells the coordinator, including when
it closes. In one run, on one local Ray, the same rolling restart (stop consumer i, start its
replacement, wait until the group is whole again with the replacement owning its share,
next) is done for:

1. classic eager (``range``): dynamic members leave, the replacement joins; every rebalance
   revokes everything from everyone;
2. classic cooperative (``cooperative-sticky``): the same, but only moved partitions stop;
3. classic static with ``restart`` (KIP-345 + KIP-800): no LeaveGroup, the replacement takes
   its instance id back with join reason ``restart``: no rebalance at all;
4. the new protocol (KIP-848): dynamic members leave and join.

For each it prints the partition-seconds during which no consumer owned a partition (from the
consumers' own timelines) and the number of rebalances (generations or group epochs), then
how many times fewer unowned partition-seconds the new protocol has than each classic mode.
The machine is shared: compare the modes of one run with each other, not runs with runs.
``--explain`` then splits the new protocol's unowned partition-seconds, restart by restart,
into the scenario's costs (revocations paid) and Cohort's (a leave's way to the coordinator,
the coordinator to the new owner), from the timelines and the coordinator's rebalance history
(``bench/restart_phases.py``).

A stopping consumer closes as Kafka's does: it revokes (and pays for) what it owns; a dynamic
member then leaves, a static one sends no LeaveGroup and keeps its place for its session.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray
import restart_phases

from actors.cluster import Cluster
from actors.tools.chaos import _read_timeline
from actors.tools.invariants import check_exclusive_ownership, ownership_intervals, unowned_seconds
from actors.tools.state_tables import shard_tables
from protocol import messages as m
from protocol.config import CoordinatorConfig

CONFIG = CoordinatorConfig(
    group_consumer_session_timeout_ms=6_000,
    group_consumer_min_session_timeout_ms=1_000,
    group_consumer_heartbeat_interval_ms=500,
    group_consumer_min_heartbeat_interval_ms=100,
    group_min_session_timeout_ms=1_000,
    group_initial_rebalance_delay_ms=500,
)
MODES = ("classic-eager", "classic-cooperative", "classic-static-restart", "consumer")


def _spawn(cluster: Cluster, mode: str, group: str, topic: str, i: int, path: Path, first: bool,
           cost_ms: int):
    if mode == "consumer":
        return cluster.spawn_consumer(group, topics=[topic], timeline_path=str(path),
                                      revocation_cost_ms=cost_ms)
    options: dict = {"timeline_path": str(path), "heartbeat_interval_ms": 500,
                     "session_timeout_ms": 6_000, "rebalance_timeout_ms": 10_000,
                     "revocation_cost_ms": cost_ms}
    if mode == "classic-cooperative":
        options["assignors"] = ("cooperative-sticky",)
    else:
        options["assignors"] = ("range",)
    instance = None
    if mode == "classic-static-restart":
        instance = f"{group}-{i}"
        if not first:
            options["join_reason"] = "restart"
    return cluster.spawn_consumer(group, topics=[topic], protocol="classic",
                                  instance_id=instance, **options)


def _rebalances(cluster: Cluster, mode: str, group: str) -> int:
    if mode == "consumer":
        return cluster.describe(group).group_epoch
    return cluster.call(m.DescribeGroupsRequest([group])).groups[0].generation_id


def _whole(handles, partitions: int) -> bool:
    """Every partition owned once, and every consumer, the replacement too, owning its share:
    the restart is over only when the replacement is back in (every partition owned once is
    already true when the survivors hold the leaver's partitions, before the replacement has
    even started, and the next restart would then overlap this one's join)."""
    shares = [ray.get(h.assignment.remote()) for h in handles]
    owned = [tp for share in shares for tp in share]
    fair = partitions // len(handles)
    return (
        len(owned) == partitions
        and len(set(map(tuple, owned))) == partitions
        and all(fair <= len(share) <= fair + 1 for share in shares)
    )


def _wait_whole(handles, partitions: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not _whole(handles, partitions):
        if time.monotonic() > deadline:
            raise TimeoutError("the group did not own every partition again, balanced")
        time.sleep(0.1)


def run_mode(cluster: Cluster, mode: str, consumers: int, partitions: int, workdir: Path,
             cost_ms: int) -> dict:
    topic = group = f"rolling-{mode}"
    cluster.create_topic(topic, partitions)
    paths = []
    handles = []
    for i in range(consumers):
        paths.append(workdir / f"{mode}-{i}-0.jsonl")
        handles.append(_spawn(cluster, mode, group, topic, i, paths[-1], True, cost_ms))
    _wait_whole(handles, partitions)
    time.sleep(1.0)  # let the last rebalance settle before the clock starts
    before = _rebalances(cluster, mode, group)
    start = time.monotonic()
    stopped: dict[str, float] = {}  # member id -> when its process stopped owning anything
    restarts: list[dict] = []  # per restart: its window and the member that left
    for i in range(consumers):
        began = time.monotonic()
        ray.get(handles[i].stop.remote(leave=True))  # a static member sends no LeaveGroup
        at = time.monotonic()
        members = {e["member_id"] for e in ray.get(handles[i].timeline.remote())}
        for member_id in members:
            stopped.setdefault(member_id, at)
        ray.kill(handles[i])
        paths.append(workdir / f"{mode}-{i}-1.jsonl")
        handles[i] = _spawn(cluster, mode, group, topic, i, paths[-1], False, cost_ms)
        _wait_whole(handles, partitions)
        restarts.append({"start": began, "end": time.monotonic(),
                         "leaver": next(iter(members), None)})
    end = time.monotonic()
    rebalances = _rebalances(cluster, mode, group) - before
    for h in handles:
        ray.get(h.stop.remote(leave=True))
    events = [e for p in paths for e in _read_timeline(p)]
    intervals = ownership_intervals(events, stopped, end)
    tps = [(topic, p) for p in range(partitions)]
    per_restart = [unowned_seconds(intervals, tps, r["start"], r["end"]) for r in restarts]
    phases = None
    if mode == "consumer":
        table = ray.get(cluster.coordinator(group).query.remote(shard_tables))["rebalances"]
        history = [h for h in table.to_pylist() if h["group_id"] == group]
        phases = restart_phases.explain(events, restarts, history, cost_ms / 1000)
    return {
        "mode": mode,
        "per_restart": per_restart,
        "phases": phases,
        "unowned_partition_s": unowned_seconds(intervals, tps, start, end),
        "rebalances": rebalances,
        "seconds": end - start,
        "overlaps": len(check_exclusive_ownership(events, stopped, end)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--consumers", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=120)
    parser.add_argument("--revocation-cost-ms", type=int, default=20,
                        help="what revoking one partition costs a consumer (commit and flush)")
    parser.add_argument("--small", action="store_true", help="the small form: 4 x 12")
    parser.add_argument("--modes", nargs="*", default=list(MODES))
    parser.add_argument("--explain", action="store_true",
                        help="split KIP-848's unowned partition-seconds into phases per restart")
    args = parser.parse_args()
    if args.small:
        args.consumers, args.partitions = 4, 12
    ray.init(namespace="cohort", include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory(prefix="cohort-rolling-") as tmp:
        cluster = Cluster.start(num_partitions=2, storage_path=str(Path(tmp) / "data"),
                                config=CONFIG)
        rows = [run_mode(cluster, mode, args.consumers, args.partitions, Path(tmp),
                         args.revocation_cost_ms)
                for mode in args.modes]
        cluster.shutdown()
    print(f"rolling restart of {args.consumers} consumers on {args.partitions} partitions, "
          f"revocation cost {args.revocation_cost_ms} ms per partition")
    print(f"{'mode':<24}{'unowned partition-s':>20}{'rebalances':>12}{'seconds':>10}"
          f"{'overlaps':>10}")
    for r in rows:
        print(f"{r['mode']:<24}{r['unowned_partition_s']:>20.1f}{r['rebalances']:>12}"
              f"{r['seconds']:>10.1f}{r['overlaps']:>10}")
    new = next((r for r in rows if r["mode"] == "consumer"), None)
    if new is not None:
        for r in rows:
            if r is new:
                continue
            if new["unowned_partition_s"] > 0:
                ratio = r["unowned_partition_s"] / new["unowned_partition_s"]
                print(f"KIP-848 vs {r['mode']}: {ratio:.1f}x fewer unowned partition-seconds")
            else:
                print(f"KIP-848 vs {r['mode']}: KIP-848 left no partition unowned")
    if new is not None and args.explain:
        print(f"\nwhere KIP-848's unowned partition-seconds go ({args.consumers} restarts; "
              f"bench/restart_phases.py):")
        print("\n".join(restart_phases.report(new["phases"], new["per_restart"])))
    return 0 if all(r["overlaps"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
