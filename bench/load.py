"""How fast a killed partition is serving again: its load, in records per second.

Run: ``python bench/load.py [--records R] [--shape mixed|groups|distinct|all] [--no-reference]
[--actor]``. For each shape it writes a partition log of R records (default 1,000,000), as the
partition writes them (real records, batches as turns produce them), then loads it:

- ``bulk``: the partition's load path (``actors.runtime.loading.load_shard``);
- ``reference``: every record decoded and replayed one by one, in order
  (``load_shard_by_record``, in ``tests/actors/runtime/reference.py``), which is what the
  bulk path must equal (checked here too);

and prints records/s for both and their ratio, by the wall clock and by the process's CPU
time (on a shared machine the wall clock also counts other processes' turns; the CPU figure
is what the same load takes on a core of its own). The shapes:

- ``mixed``: what a real ``__consumer_offsets`` partition holds: consumer groups of 50 members
  on 100 partitions (their join and convergence records) and, for 90% of the records, the
  members' periodic offset commits of every partition (a later commit overwrites an earlier);
- ``groups``: group records only (the log ``bench/heartbeat.py`` used to load): the worst case,
  three quarters of the records survive compaction and each becomes a member's state;
- ``distinct``: offset commits of a million distinct partitions, all surviving (what a
  snapshot of a partition with a million committed partitions holds).

``--actor`` also measures it end to end on Ray: an ``OffsetsPartition`` over the ``mixed`` log
is killed, and the time from the kill until it answers again is printed beside the load time
it reports (the restart of a Ray worker process comes on top of the load).
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors.runtime.loading import load_shard
from actors.runtime.log import PartitionLog
from protocol import messages as m
from protocol.codec import encode_record
from protocol.config import CoordinatorConfig
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.records import OffsetCommitKey, OffsetCommitValue, Record
from protocol.shard import GroupCoordinatorShard
from tests.actors.runtime.reference import load_shard_by_record

CONFIG = CoordinatorConfig(
    group_consumer_session_timeout_ms=60_000, group_consumer_max_session_timeout_ms=120_000
)
MEMBERS, PARTITIONS = 50, 100
OFFSETS_SHARE = 0.9
WRITE_BATCH = 1_000  # records per appended batch for the offset commits (one turn's worth)


def image(topic_id: str = "t-id") -> MetadataImage:
    return MetadataImage([TopicMetadata(topic_id, "t", PARTITIONS)])


def group_records(topic_id: str = "t-id") -> list[Record]:
    """One group's records as the shard writes them: 50 members join, then converge."""
    shard = GroupCoordinatorShard(CONFIG, image(topic_id))
    records: list[Record] = []
    owned: dict[str, tuple[int, list]] = {}
    for _ in range(6):
        reqs = [
            m.ConsumerGroupHeartbeatRequest("g", f"m{i}", 0, rebalance_timeout_ms=60_000,
                                            subscribed_topic_names=["t"], topic_partitions=[])
            if f"m{i}" not in owned else
            m.ConsumerGroupHeartbeatRequest("g", f"m{i}", owned[f"m{i}"][0],
                                            topic_partitions=owned[f"m{i}"][1])
            for i in range(MEMBERS)
        ]
        result = shard.handle_batch(reqs)
        records += result.records
        for req, resp in result.replies:
            assigned = owned.get(req.member_id, (0, []))[1]
            if resp.assignment is not None:
                assigned = resp.assignment.assigned_topic_partitions
            owned[req.member_id] = (resp.member_epoch, assigned)
    return records


def _renamed(template: list[Record], group_id: str) -> list[bytes]:
    return [
        encode_record(dataclasses.replace(r, key=dataclasses.replace(r.key, group_id=group_id)))
        for r in template
    ]


def _commit(group_id: str, partition: int, offset: int) -> bytes:
    value = OffsetCommitValue(offset, 3, "", 1_700_000_000_000 + offset, -1)
    return encode_record(Record(OffsetCommitKey(group_id, "t", partition), value))


def write_log(directory: str, shape: str, total: int, topic_id: str = "t-id") -> int:
    """Write ``total`` records of ``shape`` as a partition would (fsync off: setup, not the
    measured part); returns the number of groups."""
    log = PartitionLog(directory, fsync=False)
    log.load()
    written = 0

    def append(batch: list[bytes]) -> None:
        nonlocal written
        batch = batch[: total - written]
        if batch:
            log.append(batch)
            written += len(batch)

    groups = 0
    if shape == "distinct":
        while written < total:
            append([_commit(f"g{written // PARTITIONS}", p, 1) for p in range(PARTITIONS)])
        log.close()
        return written // PARTITIONS
    template = group_records(topic_id)
    share = 0.0 if shape == "groups" else OFFSETS_SHARE
    groups = max(1, round(total * (1 - share) / len(template)))
    for g in range(groups):
        append(_renamed(template, f"g{g}"))
    offset = 0
    while written < total:
        offset += 1
        batch: list[bytes] = []
        for g in range(groups):
            batch += [_commit(f"g{g}", p, offset) for p in range(PARTITIONS)]
            if len(batch) >= WRITE_BATCH:
                append(batch)
                batch = []
        append(batch)
    log.close()
    return groups


def same_state(a: GroupCoordinatorShard, b: GroupCoordinatorShard) -> bool:
    return a.groups == b.groups and a.offsets.offsets == b.offsets.offsets


def measure(shape: str, total: int, reference: bool) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"cohort-load-{shape}-") as d:
        groups = write_log(d, shape, total)
        gc.collect()
        started, cpu = time.perf_counter(), time.process_time()
        shard, _, stats = load_shard(PartitionLog(d), CONFIG, image())
        stats["seconds"] = time.perf_counter() - started
        stats["cpu_seconds"] = time.process_time() - cpu
        stats["groups"] = groups
        if reference:
            gc.unfreeze()
            gc.collect()
            started, cpu = time.perf_counter(), time.process_time()
            ref, _ = load_shard_by_record(PartitionLog(d), CONFIG, image())
            stats["reference_seconds"] = time.perf_counter() - started
            stats["reference_cpu_seconds"] = time.process_time() - cpu
            assert same_state(shard, ref), f"{shape}: the bulk load differs from the reference"
        del shard
        gc.unfreeze()
        gc.collect()
    return stats


def report(shape: str, stats: dict) -> None:
    n, s, c = stats["records"], stats["seconds"], stats["cpu_seconds"]
    print(
        f"{shape:>8}: {n:,} records, {stats['groups']:,} groups, {stats['replayed']:,} survive "
        f"compaction\n          bulk load        {s:6.2f} s = {n / s:>10,.0f} records/s wall, "
        f"{c:6.2f} s = {n / c:>10,.0f} records/s CPU (wall: read {stats['log_seconds']:.2f} s, "
        f"compact {stats['compact_seconds']:.2f} s, replay {stats['replay_seconds']:.2f} s)",
        flush=True,
    )
    if "reference_seconds" in stats:
        r, rc = stats["reference_seconds"], stats["reference_cpu_seconds"]
        print(
            f"          record by record {r:6.2f} s = {n / r:>10,.0f} records/s wall, "
            f"{rc:6.2f} s = {n / rc:>10,.0f} records/s CPU; bulk = {r / s:.1f}x wall, "
            f"{rc / c:.1f}x CPU",
            flush=True,
        )


def actor_failover(total: int) -> None:
    """Kill a partition actor holding the ``mixed`` log; time until it serves again."""
    import ray

    from actors.cluster import Cluster

    storage = tempfile.mkdtemp(prefix="cohort-load-actor-")
    try:
        cluster = Cluster.start(num_partitions=1, storage_path=storage, config=CONFIG)
        topic_id = cluster.create_topic("t", PARTITIONS)
        ray.kill(cluster.partition(0), no_restart=True)
        directory = Path(storage) / "offsets-0"
        shutil.rmtree(directory)
        write_log(str(directory), "mixed", total, topic_id)
        cluster = Cluster.start(num_partitions=1, storage_path=storage, config=CONFIG)
        old = ray.get(cluster.partition(0).info.remote())
        killed = time.monotonic()
        cluster.kill_partition(0)
        while True:
            try:
                info = ray.get(cluster.partition(0).info.remote(), timeout=10)
                if info["pid"] != old["pid"] and info["state"] == "active":
                    break
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                pass
            time.sleep(0.01)
        serving = time.monotonic() - killed
        load = info["load"]
        print(f"   actor: {load['records']:,} records; kill -> serving {serving:.2f} s, of which "
              f"the load {load['seconds']:.2f} s = {load['records'] / load['seconds']:,.0f} "
              f"records/s (first start: {old['load']['seconds']:.2f} s)")
        cluster.shutdown()
        ray.shutdown()
    finally:
        shutil.rmtree(storage, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--shape", choices=["mixed", "groups", "distinct", "all"], default="all")
    ap.add_argument("--no-reference", action="store_true",
                    help="skip the record-by-record load (slow) and the ratio")
    ap.add_argument("--actor", action="store_true", help="also kill a partition actor on Ray")
    args = ap.parse_args()
    shapes = ["mixed", "groups", "distinct"] if args.shape == "all" else [args.shape]
    for shape in shapes:
        report(shape, measure(shape, args.records, not args.no_reference))
    if args.actor:
        actor_failover(args.records)


if __name__ == "__main__":
    main()
