"""How long one KIP-848 step takes, with and without the short reconciliation interval.

Run: ``python bench/steps.py [--consumers 4] [--partitions 12] [--interval-ms 250]
[--short-ms 50] [--trials 6] [--rounds 2] [--quiet-s 5]``. In one run, on one local Ray, the
same group of consumer actors (one member each, real ``ConsumerClient`` actors, heartbeat
interval ``--interval-ms``) goes through ``--trials`` leave + join steps in each mode:

* ``short``: ``group_consumer_reconciliation_heartbeat_interval_ms = --short-ms``: a member
  with a step waiting (a revocation to acknowledge, partitions another member still holds)
  is told to come back after the short interval;
* ``wake``: as ``short``, and the coordinator also wakes a client actor whose members a turn
  gave a reason to heartbeat (a new target, or released partitions they wait for:
  ``protocol/consumer/wake_ups.py``, sent by ``actors/runtime/wakers.py``), so that a stable
  member hears of a step elsewhere at once instead of at its next heartbeat, and a joining
  member takes a released partition at once instead of at its next short interval;
* ``off``: the same setting equal to the heartbeat interval and no wake-ups, which is
  Kafka's behaviour.

The modes alternate ``--rounds`` times (a fresh Cohort each time) so that the shared
machine's drift hits both alike. For each step it reads the consumers' own timelines:

* leave: from the leaver's revocation (it revokes, then sends the leave) to the moment the
  last of its partitions is owned again;
* join: from the coordinator's epoch bump for the new member (its rebalance history) to the
  moment the new member owns its whole share;
* hand-off: for each partition that moved between two live members, from its revocation by
  the old owner to its assignment to the new one, which is the part an interval rule can
  shorten. What it cannot shorten is notification: a member that is stable when a step
  starts elsewhere learns of it at its next heartbeat, uniform over one interval.

Then a quiet period (``--quiet-s``): heartbeats per stable member per second in each mode,
which must be the same (1000 / interval): the short interval costs a stable group nothing.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray

from actors.cluster import Cluster
from actors.tools.state_tables import shard_tables
from protocol.config import CoordinatorConfig

GROUP = TOPIC = "steps"
POLL_S = 0.02


def config(interval_ms: int, short_ms: int) -> CoordinatorConfig:
    return CoordinatorConfig(
        group_consumer_session_timeout_ms=10_000,
        group_consumer_min_session_timeout_ms=1_000,
        group_consumer_heartbeat_interval_ms=interval_ms,
        group_consumer_min_heartbeat_interval_ms=min(25, short_ms),
        group_consumer_reconciliation_heartbeat_interval_ms=short_ms,
    )


def _spawn(cluster: Cluster, wake: bool):
    return cluster.spawn_consumer(GROUP, topics=[TOPIC], stream=False, wake_ups=wake)


def _wait_whole(cluster: Cluster, handles: list, partitions: int, timeout_s: float = 60.0):
    """Until the group is stable with these members and they own every partition once."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        g = cluster.describe(GROUP)
        if g.group_state == "stable" and len(g.members) == len(handles):
            owned = [tp for a in ray.get([h.assignment.remote() for h in handles]) for tp in a]
            if len(owned) == partitions == len(set(map(tuple, owned))):
                return
        time.sleep(POLL_S)
    raise TimeoutError("the group did not become whole again")


def _timelines(handles: list) -> list[list[dict]]:
    return ray.get([h.timeline.remote() for h in handles])


def _last_assigned(timelines: list[list[dict]], since: float) -> float:
    return max(
        e["t"] for tl in timelines for e in tl if e["event"] == "assigned" and e["t"] >= since
    )


def _handoffs(timelines: list[list[dict]], since: float) -> list[float]:
    """Revoked by one live member -> assigned to another, per partition, after ``since``."""
    revoked: dict[tuple, float] = {}
    assigned: dict[tuple, float] = {}
    for tl in timelines:
        for e in tl:
            if e["t"] < since:
                continue
            for tp in map(tuple, e["partitions"]):
                if e["event"] == "revoked":
                    revoked[tp] = e["t"]
                elif e["event"] == "assigned":
                    assigned[tp] = e["t"]
    return [assigned[tp] - t for tp, t in revoked.items() if tp in assigned and assigned[tp] >= t]


def _join_bump_s(cluster: Cluster) -> float:
    """When the coordinator bumped the epoch for the newest join (its monotonic clock)."""
    table = ray.get(cluster.coordinator(GROUP).query.remote(shard_tables))["rebalances"].to_pylist()
    joins = [r for r in table if r["group_id"] == GROUP and r["reason"] == "new member joined"]
    return joins[-1]["time_ms"] / 1000


def _heartbeats(handles: list) -> int:
    return sum(s["heartbeats"] for s in ray.get([h.stats.remote() for h in handles]))


def run_mode(args, short_ms: int, wake: bool, data: str) -> dict:
    cluster = Cluster.start(num_partitions=1, storage_path=data,
                            config=config(args.interval_ms, short_ms))
    cluster.create_topic(TOPIC, args.partitions)
    handles = [_spawn(cluster, wake) for _ in range(args.consumers)]
    _wait_whole(cluster, handles, args.partitions)
    time.sleep(1.0)
    before = _heartbeats(handles)
    time.sleep(args.quiet_s)
    quiet_rate = (_heartbeats(handles) - before) / args.quiet_s / len(handles)
    out: dict = {"leave": [], "join": [], "handoff": [], "quiet_rate": quiet_rate}
    for _ in range(args.trials):
        time.sleep(random.uniform(0, args.interval_ms / 1000))  # phases independent of steps
        victim = handles.pop(0)
        ray.get(victim.stop.remote(leave=True))
        left_at = max(e["t"] for e in ray.get(victim.timeline.remote()) if e["event"] == "revoked")
        ray.kill(victim)
        _wait_whole(cluster, handles, args.partitions)
        tls = _timelines(handles)
        out["leave"].append(_last_assigned(tls, left_at) - left_at)
        out["handoff"] += _handoffs(tls, left_at)
        time.sleep(random.uniform(0, args.interval_ms / 1000))
        handles.append(_spawn(cluster, wake))
        _wait_whole(cluster, handles, args.partitions)
        joined_at = _join_bump_s(cluster)
        tls = _timelines(handles)
        out["join"].append(_last_assigned(tls, joined_at) - joined_at)
        out["handoff"] += _handoffs(tls, joined_at)
    cluster.shutdown()
    return out


def _median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--consumers", type=int, default=4)
    ap.add_argument("--partitions", type=int, default=12)
    ap.add_argument("--interval-ms", type=int, default=250)
    ap.add_argument("--short-ms", type=int, default=50)
    ap.add_argument("--trials", type=int, default=6, help="leave + join steps per round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quiet-s", type=float, default=5.0)
    args = ap.parse_args()
    ray.init(namespace="cohort", include_dashboard=False, log_to_driver=False)
    modes = {"short": (args.short_ms, False), "wake": (args.short_ms, True),
             "off": (args.interval_ms, False)}
    results = {name: {"leave": [], "join": [], "handoff": [], "quiet_rate": []} for name in modes}
    with tempfile.TemporaryDirectory(prefix="cohort-steps-") as tmp:
        for r in range(args.rounds):
            for name, (short_ms, wake) in modes.items():
                got = run_mode(args, short_ms, wake, str(Path(tmp) / f"{name}-{r}"))
                for key in ("leave", "join", "handoff"):
                    results[name][key] += got[key]
                results[name]["quiet_rate"].append(got["quiet_rate"])
    ray.shutdown()

    h = args.interval_ms / 1000
    print(f"{args.consumers} consumer actors, {args.partitions} partitions, heartbeat interval "
          f"{args.interval_ms} ms; short interval {args.short_ms} ms; "
          f"{args.rounds} x {args.trials} leave + join steps per mode")
    print(f"{'median (x interval)':<26}{'short':>8}{'wake':>8}{'off':>8}{'short/off':>11}"
          f"{'wake/off':>10}{'n':>6}")
    for key, label in (("leave", "leave -> whole"), ("join", "join -> whole"),
                       ("handoff", "hand-off (revoked->owned)")):
        s, w, o = (_median(results[n][key]) for n in ("short", "wake", "off"))
        print(f"{label:<26}{s / h:>8.2f}{w / h:>8.2f}{o / h:>8.2f}{s / o:>11.2f}{w / o:>10.2f}"
              f"{len(results['short'][key]):>6}")
    qs, qw, qo = (statistics.mean(results[n]["quiet_rate"]) for n in ("short", "wake", "off"))
    print(f"quiet period ({args.quiet_s:.0f} s, stable group): heartbeats per member per second "
          f"short {qs:.2f}, wake {qw:.2f}, off {qo:.2f} (1000/interval = {1 / h:.2f}); "
          f"short/off {qs / qo:.2f}, wake/off {qw / qo:.2f}")


if __name__ == "__main__":
    main()
