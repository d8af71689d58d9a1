"""A group of 10,000 members, hosted by a few consumer actors, on 100,000 partitions.

Run: ``python bench/scale.py [--members N] [--partitions P] [--hosts H]``. Starts Cohort on a
local Ray (one ``__consumer_offsets`` partition, fsync on), creates one topic of P
partitions, and spawns H ``ConsumerClient`` actors hosting N/H members each; every actor
sends its members' heartbeats to the coordinator as one batched call. It prints when the
last member joined (all N are in the group) and when the group became stable (every member
at the group epoch, every partition owned by its target), and the time between the two,
which is what the issue asks for; also the time from the first spawn.

Kafka's defaults apply (5 s heartbeat interval, 45 s session timeout), so convergence is
counted in heartbeat rounds: members ack revocations at once, but a member waiting for a
partition to be released learns of it at its next heartbeat.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray

from actors.cluster import Cluster
from protocol.config import CoordinatorConfig

POLL_S = 0.5


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="cohort-scale-") as data:
        cluster = Cluster.start(num_partitions=1, storage_path=data, config=CoordinatorConfig())
        cluster.create_topic("scale", args.partitions)
        group = "scale-g"
        partition = cluster.coordinator(group)
        started = time.monotonic()
        per_host = args.members // args.hosts
        hosts = [
            cluster.spawn_consumers(group, per_host + (1 if i < args.members % args.hosts else 0),
                                    topics=["scale"], stream=False)
            for i in range(args.hosts)
        ]
        last_join = stable = None
        summary: dict = {}
        while time.monotonic() - started < args.timeout:
            summary = ray.get(partition.group_summary.remote(group)) or {}
            now = time.monotonic()
            if last_join is None and summary.get("members") == args.members:
                last_join = now
                print(f"last join after {now - started:6.1f} s (epoch {summary['group_epoch']})")
            if last_join is not None and summary.get("state") == "stable":
                stable = now
                break
            time.sleep(POLL_S)
        load = ray.get(partition.info.remote())
        owned = sum(len(a) for a in ray.get([h.assignment.remote() for h in hosts]))
        cluster.shutdown()
        ray.shutdown()

    print(f"{args.members:,} members in {args.hosts} actors, {args.partitions:,} partitions")
    if stable is None:
        print(f"NOT stable after {args.timeout:.0f} s: {summary}")
        sys.exit(1)
    print(f"  last join -> stable group        {stable - last_join:6.1f} s")
    print(f"  first spawn -> stable group      {stable - started:6.1f} s")
    print(f"  group epoch {summary['group_epoch']}, partitions owned by clients {owned:,}, "
          f"coordinator pid {load['pid']}")


if __name__ == "__main__":
    main()
