"""How fast one partition actor takes heartbeats, next to how fast Ray calls one actor at all.

Run: ``python bench/heartbeat.py [--callers N] [--seconds S] [--batch B] [--load-records R]``.
In one run, on one local Ray:

1. raw: N caller actors each call a no-op async actor method back to back for S seconds;
2. heartbeat: the same N callers, each one member of a stable group, send steady-state
   heartbeats to one ``OffsetsPartition`` back to back (one request per call, fsync on), as
   Cohort's own callers send them since issue 23 (pickled by the caller: ``handle_packed``),
   and as they did before (the message objects, pickled by Ray: ``handle``), side by side;
3. batched: each caller hosts B members and sends their heartbeats as one
   ``handle_batch_packed``;
4. load: a partition log of R records (default 1,000,000: real group records, written as the
   partition writes them) is loaded by the partition's own load path.

It prints the rates and the ratios heartbeat/raw and batched/heartbeat, which are what to
compare across machines: the machine is shared, so absolute rates drift between runs.
``bench/ray_call.py`` splits one call's time into its parts.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import pickle
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray

from actors.cluster import Cluster
from actors.runtime.loading import load_shard
from actors.runtime.log import PartitionLog
from protocol import messages as m
from protocol.codec import encode_record
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard

# Long sessions: nothing may expire while the callers spin.
CONFIG = CoordinatorConfig(
    group_consumer_session_timeout_ms=60_000, group_consumer_max_session_timeout_ms=120_000
)


@ray.remote(num_cpus=0)
class Noop:
    async def ping(self, x: object) -> object:
        return x


@ray.remote(num_cpus=0)
class Caller:
    """Sends back to back for a while; one call in flight, as a Kafka client keeps one."""

    async def raw(self, target, seconds: float) -> int:
        n, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            await target.ping.remote(None)
            n += 1
        return n

    async def join(self, partition, group: str, members: list[str], topic: str) -> None:
        self.members = {mid: (0, []) for mid in members}
        for _ in range(50):
            reqs = [self._request(group, mid, topic) for mid in members]
            replies = await partition.handle_batch.remote(reqs)
            for mid, r in zip(members, replies, strict=True):
                assert r.error_code == Errors.NONE, r
                owned = self.members[mid][1] if r.assignment is None else (
                    r.assignment.assigned_topic_partitions
                )
                self.members[mid] = (r.member_epoch, owned)
            await asyncio.sleep(0.05)

    def _request(self, group: str, mid: str, topic: str) -> m.ConsumerGroupHeartbeatRequest:
        epoch, owned = self.members[mid]
        if epoch == 0:
            return m.ConsumerGroupHeartbeatRequest(
                group, mid, 0, rebalance_timeout_ms=60_000, subscribed_topic_names=[topic],
                topic_partitions=[],
            )
        return m.ConsumerGroupHeartbeatRequest(group, mid, epoch, topic_partitions=owned)

    async def heartbeats(self, partition, group: str, seconds: float, batched: bool,
                         packed: bool = True) -> int:
        reqs = [self._request(group, mid, "") for mid in self.members]
        n, deadline = 0, time.monotonic() + seconds
        while time.monotonic() < deadline:
            if batched:
                replies = pickle.loads(await partition.handle_batch_packed.remote(
                    pickle.dumps(reqs)))
            elif packed:
                data = await partition.handle_packed.remote(pickle.dumps(reqs[n % len(reqs)]))
                replies = [pickle.loads(data)]
            else:
                replies = [await partition.handle.remote(reqs[n % len(reqs)])]
            assert all(r.error_code == Errors.NONE for r in replies), replies[0]
            n += len(replies)
        return n


def rate(callers: list, method: str, seconds: float, *args) -> float:
    """Calls per second summed over the callers, each counting over its own ``seconds``."""
    counts = ray.get([getattr(c, method).remote(*args) for c in callers])
    return sum(counts) / seconds


def heartbeat_rate(cluster: Cluster, callers: list, per_caller: int, seconds: float,
                   batched: bool, tag: str, packed: bool = True) -> float:
    group = f"bench-{tag}"
    topic = f"bench-{tag}-t"
    cluster.create_topic(topic, max(1, len(callers) * per_caller))
    partition = cluster.coordinator(group)
    ray.get([
        c.join.remote(partition, group, [f"{tag}-{i}-{j}" for j in range(per_caller)], topic)
        for i, c in enumerate(callers)
    ])
    cluster.wait_stable(group, members=len(callers) * per_caller)
    return rate(callers, "heartbeats", seconds, partition, group, seconds, batched, packed)


def group_records(members: int, partitions: int) -> list:
    """One group's records as the shard writes them: members join, then converge."""
    image = MetadataImage([TopicMetadata("t-id", "t", partitions)])
    shard = GroupCoordinatorShard(CONFIG, image)
    records = []
    owned: dict[str, tuple[int, list]] = {}
    for _ in range(6):
        reqs = [
            m.ConsumerGroupHeartbeatRequest("g", f"m{i}", 0, rebalance_timeout_ms=60_000,
                                            subscribed_topic_names=["t"], topic_partitions=[])
            if f"m{i}" not in owned else
            m.ConsumerGroupHeartbeatRequest("g", f"m{i}", owned[f"m{i}"][0],
                                            topic_partitions=owned[f"m{i}"][1])
            for i in range(members)
        ]
        result = shard.handle_batch(reqs)
        records += result.records
        for req, resp in result.replies:
            assigned = owned.get(req.member_id, (0, []))[1]
            if resp.assignment is not None:
                assigned = resp.assignment.assigned_topic_partitions
            owned[req.member_id] = (resp.member_epoch, assigned)
    return records


def load_time(total_records: int, directory: str) -> dict:
    template = group_records(members=50, partitions=100)
    log = PartitionLog(directory)
    log.load()
    written, g = 0, 0
    while written < total_records:
        batch = [
            encode_record(dataclasses.replace(r, key=dataclasses.replace(r.key, group_id=f"g{g}")))
            for r in template
        ][: total_records - written]
        log.append(batch)
        written += len(batch)
        g += 1
    log.close()
    _, _, stats = load_shard(PartitionLog(directory), CONFIG, MetadataImage(
        [TopicMetadata("t-id", "t", 100)]
    ))
    stats["groups"] = g
    return stats


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--callers", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--load-records", type=int, default=1_000_000)
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="cohort-bench-") as data:
        cluster = Cluster.start(num_partitions=1, storage_path=data, config=CONFIG)
        callers = [Caller.remote() for _ in range(args.callers)]
        noop = Noop.remote()
        ray.get([c.raw.remote(noop, 0.2) for c in callers])  # start every worker first
        raw = rate(callers, "raw", args.seconds, noop, args.seconds)
        single = heartbeat_rate(cluster, callers, 1, args.seconds, False, "single")
        plain = heartbeat_rate(cluster, callers, 1, args.seconds, False, "plain", packed=False)
        batched = heartbeat_rate(cluster, callers, args.batch, args.seconds, True, "batched")
        cluster.shutdown()
        ray.shutdown()

    print(f"{args.callers} callers, {args.seconds:.0f} s each, one call in flight per caller")
    print(f"  raw no-op async actor calls        {raw:10,.0f} /s")
    print(f"  heartbeats, one per call           {single:10,.0f} /s   "
          f"= {single / raw:.2f} x raw, {single / plain:.2f} x unpacked")
    print(f"    unpacked (Ray pickles them)      {plain:10,.0f} /s   = {plain / raw:.2f} x raw")
    print(f"  heartbeats, {args.batch} per call          {batched:10,.0f} /s   "
          f"= {batched / single:.1f} x one per call, {batched / raw:.1f} x raw calls")

    with tempfile.TemporaryDirectory(prefix="cohort-load-") as d:
        stats = load_time(args.load_records, d)
    print(f"partition load: {stats['records']:,} records ({stats['groups']:,} groups) in "
          f"{stats['records'] / stats['records_per_s']:.1f} s = "
          f"{stats['records_per_s']:,.0f} records/s; {stats['replayed']:,} survive compaction "
          f"and are replayed (log read alone: {stats['log_records_per_s']:,.0f} records/s)")


if __name__ == "__main__":
    main()
