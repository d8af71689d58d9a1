"""Real Kafka clients on Cohort's gateway and on librdkafka's mock cluster, side by side.

The same scenario (3 confluent-kafka consumers join, a 4th joins, one leaves) with the same
clients, group protocol and heartbeat interval runs against Cohort (a local Ray, the gateway
in front of the partition actors) and against librdkafka's in-process mock cluster (the
differential oracle), in one run. Prints each step's time to convergence for both, and
whether either side's callback timelines ever show a partition owned twice.

    .venv/bin/python bench/real_clients.py [--protocol consumer|classic] [--rounds 3]
        [--heartbeat-ms 500] [--partitions 8]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

# The repository first: bench/ holds a module named like the assignors package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray

from actors.cluster import Cluster
from actors.tools.kafka_mock import MockCluster
from actors.tools.kafka_scenario import run_scenario
from protocol.config import CoordinatorConfig


def client_config(protocol: str, heartbeat_ms: int, session_ms: int) -> dict:
    if protocol == "classic":
        return {"session.timeout.ms": session_ms, "heartbeat.interval.ms": heartbeat_ms}
    return {}  # KIP-848: the broker (group config / mock setting) sets the timing


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--protocol", choices=["consumer", "classic"], default="consumer")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--heartbeat-ms", type=int, default=500)
    ap.add_argument("--session-ms", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=8)
    args = ap.parse_args()

    config = CoordinatorConfig(
        group_consumer_heartbeat_interval_ms=args.heartbeat_ms,
        group_consumer_min_heartbeat_interval_ms=100,
        group_consumer_session_timeout_ms=args.session_ms,
        group_consumer_min_session_timeout_ms=1_000,
        group_min_session_timeout_ms=1_000,
        group_initial_rebalance_delay_ms=0,
    )
    ray.init(namespace="cohort", include_dashboard=False, log_to_driver=False)
    cluster = Cluster.start(num_partitions=4, storage_path=tempfile.mkdtemp(prefix="bench-"),
                            config=config)
    bootstrap = cluster.start_gateway(port=0)
    conf = client_config(args.protocol, args.heartbeat_ms, args.session_ms)
    times: dict[str, dict[str, list[float]]] = {"cohort": {}, "mock": {}}
    overlaps = {"cohort": 0, "mock": 0}
    unconverged = {"cohort": 0, "mock": 0}
    try:
        for r in range(args.rounds):
            tag = f"bench-{int(time.time())}-{r}"
            cluster.create_topic(tag, args.partitions)
            sides = [("cohort", bootstrap, None)]
            mock = MockCluster()
            mock.create_topic(tag, args.partitions)
            mock.set_group_consumer_timing(args.heartbeat_ms, args.session_ms)
            sides.append(("mock", mock.bootstrap, mock))
            for side, boot, _ in sides:
                result = run_scenario(boot, f"{tag}-g", tag, args.partitions, args.protocol,
                                      conf)
                for step in result.steps:
                    times[side].setdefault(step.name, []).append(step.seconds)
                    unconverged[side] += not step.converged
                overlaps[side] += len(result.overlaps())
            mock.close()
    finally:
        cluster.stop_gateway()
        cluster.shutdown()
        ray.shutdown()

    print(f"real clients: confluent-kafka, group.protocol={args.protocol}, heartbeat "
          f"{args.heartbeat_ms} ms, {args.partitions} partitions, {args.rounds} rounds "
          "(median s to convergence, min-max)")
    print(f"{'step':<20} {'cohort gateway':>22} {'librdkafka mock':>22}")
    for name in times["cohort"]:
        cells = []
        for side in ("cohort", "mock"):
            xs = times[side][name]
            cells.append(f"{statistics.median(xs):6.2f} ({min(xs):.2f}-{max(xs):.2f})")
        print(f"{name:<20} {cells[0]:>22} {cells[1]:>22}")
    print(f"steps not converged: cohort {unconverged['cohort']}, mock {unconverged['mock']}; "
          f"partitions owned twice in the callback timelines: cohort {overlaps['cohort']}, "
          f"mock {overlaps['mock']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
