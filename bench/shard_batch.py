"""Benchmark one turn for many joins against one turn per join (the KIP-1263 motivation).

Run: ``python bench/shard_batch.py [--members N] [--partitions P]``. N members join a group
subscribed to 100 topics of P/100 partitions each, first one request per turn
(``shard.handle``: a target assignment per join, as Kafka's coordinator does), then all in a
single turn (``shard.handle_batch``: one target assignment). It then sends every member's
first acknowledging heartbeat as one turn and reports when the group is stable. Prints both
times and their ratio, which is what to compare across machines.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from protocol import messages as m
from protocol import partitions as pm
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard

TOPICS = 100


def setup(num_partitions: int) -> tuple[GroupCoordinatorShard, list[str]]:
    per_topic = max(1, num_partitions // TOPICS)
    image = MetadataImage([TopicMetadata(f"t{i}-id", f"t{i}", per_topic) for i in range(TOPICS)])
    return GroupCoordinatorShard(metadata=image), [f"t{i}" for i in range(TOPICS)]


def joins(n: int, topics: list[str]) -> list[m.ConsumerGroupHeartbeatRequest]:
    return [
        m.ConsumerGroupHeartbeatRequest(
            "g",
            f"m{i:06}",
            0,
            rebalance_timeout_ms=60_000,
            subscribed_topic_names=topics,
            topic_partitions=[],
        )
        for i in range(n)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument(
        "--batch-only", action="store_true", help="skip one-turn-per-join (slow at 10,000)"
    )
    args = parser.parse_args()

    one_by_one_s = None
    if not args.batch_only:
        shard, topics = setup(args.partitions)
        start = time.perf_counter()
        for req in joins(args.members, topics):
            shard.handle(req)
        one_by_one_s = time.perf_counter() - start

    shard, topics = setup(args.partitions)
    start = time.perf_counter()
    res = shard.handle_batch(joins(args.members, topics))
    batch_s = time.perf_counter() - start
    heartbeats = [
        m.ConsumerGroupHeartbeatRequest(
            "g",
            req.member_id,
            resp.member_epoch,
            topic_partitions=pm.to_wire(pm.from_wire(resp.assignment.assigned_topic_partitions)),
        )
        for req, resp in res.replies
    ]
    start = time.perf_counter()
    shard.handle_batch(heartbeats)
    heartbeat_s = time.perf_counter() - start

    print(f"{args.members} members joining a group on {args.partitions} partitions")
    if one_by_one_s is not None:
        print(f"  one turn per join  : {one_by_one_s:8.3f} s")
    print(f"  one turn for all   : {batch_s:8.3f} s")
    if one_by_one_s is not None:
        print(f"  ratio              : {one_by_one_s / batch_s:8.1f}x")
    print(
        f"  then one heartbeat turn for all members: {heartbeat_s:.3f} s, "
        f"group {shard.groups['g'].state}"
    )


if __name__ == "__main__":
    main()
