"""Many chaos runs in a row, each with a fresh seed and a fresh Cohort: kills, commits, violations.

Run: ``python bench/chaos.py --runs 12 --steps 120 --kills 1000`` (or ``--seconds 60`` per
run). One local Ray hosts every run; each run starts Cohort on new storage, follows its seed's
schedule (``actors/tools/chaos_schedule.py``: partition kills, half of them mid-rebalance,
controller kills with changes in flight, consumer, classic consumer and Connect worker kills,
connector task-count changes; with ``--node-kills``, on a Ray cluster of several nodes on this
machine, kills and stalls of whole nodes), checks DESIGN.md's invariants (the Connect groups'
too) and stops Cohort again. Each run prints its seed and its counts; the end prints the
totals and, for every run with a violation, the command that replays its schedule. Exits 1
on any violation.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray

from actors.cluster import Cluster
from actors.tools.chaos import ChaosReport, run_chaos
from protocol.config import CoordinatorConfig

# Short sessions so that a killed consumer's partitions move within seconds, and a short
# classic join delay: more kills and rebalances per minute of a run.
BENCH_CONFIG = CoordinatorConfig(
    group_consumer_session_timeout_ms=10_000,
    group_consumer_min_session_timeout_ms=1_000,
    group_consumer_heartbeat_interval_ms=300,
    group_consumer_min_heartbeat_interval_ms=100,
    group_min_session_timeout_ms=1_000,
    group_initial_rebalance_delay_ms=300,
    group_connect_heartbeat_interval_ms=300,
)
TOTALS = ("steps", "kills", "partition_kills", "mid_rebalance_kills", "controller_kills",
          "consumer_kills", "classic_kills", "worker_kills", "consumers_added",
          "workers_added", "connector_changes", "rebalances", "commits", "commits_lost",
          "node_kills", "node_pauses", "node_faults_skipped", "clients_lost_with_nodes")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--kills", type=int, help="stop starting new runs once the runs so far "
                    "killed this many actors in total")
    length = ap.add_mutually_exclusive_group()
    length.add_argument("--steps", type=int, help="steps per run (replays exactly)")
    length.add_argument("--seconds", type=float, help="seconds per run (default 60)")
    ap.add_argument("--seed", type=int, help="seed of the first run (default: random); "
                    "run i uses seed + i")
    ap.add_argument("--groups", type=int, default=2)
    ap.add_argument("--classic-groups", type=int, default=2)
    ap.add_argument("--connect-groups", type=int, default=1,
                    help="Kafka Connect worker groups on the new protocol")
    ap.add_argument("--classic-connect-groups", type=int, default=1,
                    help="classic Kafka Connect worker groups")
    ap.add_argument("--consumers", type=int, default=3,
                    help="initial consumers (and Connect workers) per group")
    ap.add_argument("--topic-partitions", type=int, default=6)
    ap.add_argument("--partitions", type=int, default=4, help="__consumer_offsets partitions")
    ap.add_argument("--pause", type=float, nargs=2, default=(0.2, 1.0), metavar=("MIN", "MAX"),
                    help="seconds between steps, drawn from the seed")
    ap.add_argument("--node-kills", action="store_true",
                    help="a Ray cluster of a head and --workers worker nodes on this machine "
                         "(actors/tools/local_nodes); kills and stalls of whole nodes among "
                         "the steps; dead workers are replaced between runs")
    ap.add_argument("--workers", type=int, default=2, help="worker nodes with --node-kills")
    a = ap.parse_args()
    if a.steps is None and a.seconds is None:
        a.seconds = 60.0
    base = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)

    os.environ.setdefault("RAY_DEDUP_LOGS", "0")
    nodes = None
    if a.node_kills:
        from actors.tools.local_nodes import LocalNodes

        nodes = LocalNodes(workers=a.workers)
        ray.init(address=nodes.address, namespace="cohort", log_to_driver=False)
    else:
        ray.init(namespace="cohort", include_dashboard=False, log_to_driver=False)
    root = Path(tempfile.mkdtemp(prefix="cohort-bench-chaos-"))
    reports: list[ChaosReport] = []
    started = time.monotonic()
    try:
        for i in range(a.runs):
            seed = base + i
            print(f"run {i + 1}/{a.runs}: seed {seed}", flush=True)
            if nodes is not None:
                _replace_dead(nodes)
            reports.append(_one_run(a, seed, root / f"run-{i}"))
            print(reports[-1].summary(), flush=True)
            _print_totals(reports, time.monotonic() - started)
            if a.kills is not None and sum(r.kills for r in reports) >= a.kills:
                break
    finally:
        ray.shutdown()
        if nodes is not None:
            nodes.shutdown()
        shutil.rmtree(root, ignore_errors=True)
    failing = [r for r in reports if r.violations]
    for r in failing:
        print(f"violations in seed {r.seed}; replay: python bench/chaos.py --runs 1 "
              f"--seed {r.seed} --steps {r.steps} {_shape(a)}")
    return 1 if failing else 0


def _one_run(a: argparse.Namespace, seed: int, storage: Path) -> ChaosReport:
    cluster = Cluster.start(num_partitions=a.partitions, storage_path=str(storage / "data"),
                            config=BENCH_CONFIG, shared_storage=a.node_kills)
    try:
        return run_chaos(cluster, a.seconds, storage / "timelines", groups=a.groups,
                         consumers=a.consumers, partitions=a.topic_partitions, seed=seed,
                         progress=False, classic_groups=a.classic_groups,
                         pause_s=tuple(a.pause), steps=a.steps,
                         connect_groups=a.connect_groups,
                         classic_connect_groups=a.classic_connect_groups,
                         node_faults=a.node_kills)
    finally:
        cluster.shutdown()
        shutil.rmtree(storage, ignore_errors=True)


def _replace_dead(nodes) -> None:
    """Start a fresh worker for each one the previous run killed (on one machine nothing
    else would: a real cluster's autoscaler or KubeRay does)."""
    from actors.runtime.placement_nodes import alive_nodes

    nodes.replace_dead(alive_nodes())


def _print_totals(reports: list[ChaosReport], elapsed_s: float) -> None:
    totals = {k: sum(getattr(r, k) for r in reports) for k in TOTALS}
    violations = sum(len(r.violations) for r in reports)
    print(f"totals after {len(reports)} runs ({elapsed_s / 60:.1f} min): "
          + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in totals.items())
          + f", violations {violations}", flush=True)


def _shape(a: argparse.Namespace) -> str:
    return (f"--groups {a.groups} --classic-groups {a.classic_groups} --connect-groups "
            f"{a.connect_groups} --classic-connect-groups {a.classic_connect_groups} --consumers "
            f"{a.consumers} --topic-partitions {a.topic_partitions} --partitions "
            f"{a.partitions} --pause {a.pause[0]} {a.pause[1]}"
            + (f" --node-kills --workers {a.workers}" if a.node_kills else ""))


if __name__ == "__main__":
    sys.exit(main())
