"""``cohort demo``: the README's main command, on a local Ray with the embedded storage.

It starts Cohort (a local Ray when none is running), creates a topic, runs a group of three
consumer actors until it is stable, then adds a fourth consumer and kills the group's
coordinator partition in the middle of the rebalance that follows. Ray restarts the actor,
it reloads its log, and the consumers finish the rebalance against it. The demo prints the
group before and after, the kill, a short ownership timeline, and the invariant check of
that timeline (no partition owned by two consumers at once).
"""

from __future__ import annotations

import time

import ray

from actors.cluster import Cluster
from actors.tools.invariants import check_exclusive_ownership, summarize
from protocol.config import CoordinatorConfig

# Kafka's defaults (45 s sessions, 5 s heartbeats) would make a demo slow to watch; a group
# config could do the same per group, but a demo cluster may as well start quick.
DEMO_CONFIG = CoordinatorConfig(
    group_consumer_session_timeout_ms=10_000,
    group_consumer_min_session_timeout_ms=1_000,
    group_consumer_heartbeat_interval_ms=500,
    group_consumer_min_heartbeat_interval_ms=100,
    group_connect_heartbeat_interval_ms=500,
)
TOPIC_PARTITIONS = 6


def run_demo(storage_path: str = "./cohort-data", partitions: int | None = None,
             out=print) -> int:
    started = time.monotonic()
    cluster = Cluster.start(num_partitions=partitions, storage_path=storage_path,
                            config=DEMO_CONFIG)
    run = time.strftime("%H%M%S")
    topic, group = f"orders-{run}", f"demo-{run}"
    try:
        cluster.create_topic(topic, TOPIC_PARTITIONS)
        p = cluster.partition_for(group)
        out(f"Cohort on Ray: {cluster.num_partitions} __consumer_offsets partitions, storage "
            f"{cluster.storage_path}")
        out(f"topic {topic} ({TOPIC_PARTITIONS} partitions); group {group} lives on offsets-{p}")
        consumers = [cluster.spawn_consumer(group, topics=[topic]) for _ in range(3)]
        _show(out, "before", cluster.wait_stable(group, members=3))

        consumers.append(cluster.spawn_consumer(group, topics=[topic]))
        state = _wait_rebalancing(cluster, group)
        killed_at = time.monotonic()
        cluster.kill_partition(p)
        out(f"\nconsumer 4 joined; group is {state}: killing offsets-{p} mid-rebalance")
        after = cluster.wait_stable(group, members=4)
        out(f"offsets-{p} restarted, reloaded its log and finished the rebalance in "
            f"{time.monotonic() - killed_at:.1f} s")
        _show(out, "after", after)

        timelines = ray.get([c.timeline.remote() for c in consumers])
        _show_timeline(out, timelines, started)
        violations = check_exclusive_ownership(
            [e for tl in timelines for e in tl], {}, time.monotonic()
        )
        out(f"\nno partition owned twice at once -> {summarize(violations)}")
        ray.get([c.stop.remote(leave=True) for c in consumers])
        return 0 if not violations else 1
    finally:
        cluster.release()  # a Cohort started by `cohort start` stays up


def _wait_rebalancing(cluster: Cluster, group: str, timeout_s: float = 10.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = cluster.describe(group).group_state
        if state in ("assigning", "reconciling"):
            return state
        time.sleep(0.01)
    return cluster.describe(group).group_state


def _show(out, title: str, group) -> None:
    out(f"\n{title}: group {group.group_id} {group.group_state}, epoch {group.group_epoch}, "
        f"assignor {group.assignor_name}")
    for mem in sorted(group.members, key=lambda mm: mm.member_id):
        owned = sorted(p for tp in mem.assignment.topic_partitions for p in tp.partitions)
        out(f"  member {mem.member_id[:8]}  epoch {mem.member_epoch:>2}  partitions {owned}")


def _show_timeline(out, timelines: list[list[dict]], t0: float) -> None:
    out("\nownership timeline (seconds since start):")
    names = {}
    for tl in timelines:
        for e in tl:
            names.setdefault(e["member_id"], f"c{len(names) + 1}")
    events = sorted((e for tl in timelines for e in tl), key=lambda e: e["t"])
    for e in events:
        parts = ",".join(str(p) for _, p in sorted(e["partitions"]))
        out(f"  {e['t'] - t0:6.2f}  {names[e['member_id']]} {e['event']:<8} [{parts}] "
            f"epoch {e['epoch']}")
