"""Time from a node's death to its partitions serving again elsewhere: local dir vs object store.

Run: ``python bench/node_failover.py --trials 3``. On this machine, a Ray cluster of a head and
two workers (``actors/tools/local_nodes``: each its own raylet, health checks of 1 s x 5) hosts
Cohort twice: once on a local directory every node sees (the stand-in for an EFS/NFS mount,
``shared_storage=True``), once on an S3 prefix of a SeaweedFS the bench starts on 127.0.0.1.
Each partition holds ``--groups`` groups with ``--commits`` offset commits each. A trial kills a
worker node that hosts partitions (SIGKILL of its raylet and every process under it, through a
Ray task pinned to the node: ``actors/tools/node_faults``; Cohort restarted on the same storage
before each trial, so that its partitions are spread again), then times

- ``dead``: until the GCS declares the node dead (Ray's health checks; the same for both),
- ``serving``: until every partition that was on the node answers an OffsetFetch with every
  offset it had acknowledged, from another node (death detection + Ray's restart + the load);

and starts a fresh worker in the dead one's place. Prints the medians side by side and the
ratio object store / local. Exits 1 if a committed offset came back wrong.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray

from actors.cluster import Cluster
from actors.runtime.controller import partition_actor_name
from actors.runtime.placement_nodes import node_of_actors
from actors.tools.local_nodes import LocalNodes
from actors.tools.node_faults import kill_node, wait_dead
from protocol import messages as m
from protocol.errors import Errors
from tests.object_store import aws_env, seaweedfs

SERVE_TIMEOUT_S = 180.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=3, help="node kills per storage")
    ap.add_argument("--partitions", type=int, default=6, help="__consumer_offsets partitions")
    ap.add_argument("--groups", type=int, default=20, help="groups per partition")
    ap.add_argument("--commits", type=int, default=5, help="offset commits per group")
    a = ap.parse_args()
    nodes = LocalNodes(workers=2)
    ray.init(address=nodes.address, namespace="cohort", log_to_driver=False)
    results: dict[str, list[tuple[float, float]]] = {}
    bad = 0
    try:
        with tempfile.TemporaryDirectory(prefix="cohort-failover-") as tmp, seaweedfs() as s3:
            storages = {"local shared dir": (str(Path(tmp) / "shared"), {}),
                        "object store": (s3.url("failover"), s3.env)}
            for kind, (path, env) in storages.items():
                print(f"{kind}: {a.trials} node kills", flush=True)
                results[kind] = []
                offsets: dict[str, int] = {}
                for t in range(a.trials):
                    # A fresh start on the same storage spreads the partitions over the nodes
                    # again (a killed node's partitions stay bunched up where Ray put them).
                    with aws_env(env):
                        cohort = Cluster.start(num_partitions=a.partitions, storage_path=path,
                                               shared_storage=True)
                    try:
                        offsets = offsets or _seed(cohort, a.groups, a.commits)
                        dead_s, serving_s, wrong = _trial(cohort, nodes, offsets)
                    finally:
                        cohort.shutdown()
                    bad += wrong
                    results[kind].append((dead_s, serving_s))
                    print(f"  trial {t + 1}: dead after {dead_s:.2f} s, serving after "
                          f"{serving_s:.2f} s, wrong offsets {wrong}", flush=True)
    finally:
        ray.shutdown()
        nodes.shutdown()
    _print(results, a)
    return 1 if bad else 0


def _seed(cohort: Cluster, groups: int, commits: int) -> dict[str, int]:
    """``groups`` groups on every partition, each with ``commits`` commits; the last offsets."""
    topic = "failover-topic"
    cohort.create_topic(topic, 1)
    offsets: dict[str, int] = {}
    per: dict[int, int] = {}
    i = 0
    while min(per.get(p, 0) for p in range(cohort.num_partitions)) < groups:
        g = f"failover-g{i}"
        i += 1
        p = cohort.partition_for(g)
        if per.get(p, 0) >= groups:
            continue
        per[p] = per.get(p, 0) + 1
        for c in range(1, commits + 1):
            cohort.call(_commit(g, topic, c * 10))
        offsets[g] = commits * 10
    return offsets


def _trial(cohort: Cluster, nodes: LocalNodes, offsets: dict[str, int]) -> tuple[float, float, int]:
    where = node_of_actors()
    hosting = {}
    for p in range(cohort.num_partitions):
        node = where.get(partition_actor_name(p))
        if node in nodes.workers:
            hosting.setdefault(node, []).append(p)
    victim = max(hosting, key=lambda n: len(hosting[n]))
    moved = [g for g in offsets if cohort.partition_for(g) in hosting[victim]]
    started = time.monotonic()
    kill_node(victim)
    dead_s = wait_dead(victim)
    pending = set(moved)
    wrong = 0
    while pending:
        for g in list(pending):
            resp = cohort.call(m.OffsetFetchRequest(group_id=g), deadline_s=SERVE_TIMEOUT_S)
            if resp.error_code == Errors.NONE:
                got = [x.committed_offset for t in resp.topics for x in t.partitions]
                wrong += got != [offsets[g]]
                pending.discard(g)
        if time.monotonic() - started > SERVE_TIMEOUT_S:
            raise TimeoutError(f"{len(pending)} groups not served in {SERVE_TIMEOUT_S} s")
    serving_s = time.monotonic() - started
    nodes.replace(victim, removed=False)
    return dead_s, serving_s, wrong


def _commit(group: str, topic: str, offset: int) -> m.OffsetCommitRequest:
    return m.OffsetCommitRequest(
        group_id=group,
        topics=[m.OffsetCommitRequestTopic(topic, [m.OffsetCommitRequestPartition(0, offset)])])


def _print(results: dict[str, list[tuple[float, float]]], a: argparse.Namespace) -> None:
    print(f"\nnode death -> its partitions serving elsewhere ({a.partitions} partitions, "
          f"{a.groups} groups x {a.commits} commits each), median of {a.trials}:")
    print(f"{'storage':<18} {'dead (s)':>9} {'serving (s)':>12} {'load part (s)':>14}")
    med = {}
    for kind, rows in results.items():
        dead = statistics.median(r[0] for r in rows)
        serving = statistics.median(r[1] for r in rows)
        med[kind] = serving
        print(f"{kind:<18} {dead:>9.2f} {serving:>12.2f} {serving - dead:>14.2f}")
    if len(med) == 2 and med["local shared dir"] > 0:
        print(f"ratio object store / local shared dir (serving): "
              f"{med['object store'] / med['local shared dir']:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
