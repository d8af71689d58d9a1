"""How fast the coordinator's state reaches Spark: ray.data + RayDP next to the driver path.

Run: ``python bench/export.py [--rows N] [--holders H] [--blocks B]``.

Setup (not timed): H zero-CPU actors each hold a pure ``GroupCoordinatorShard`` filled by
replaying records (groups of 1,000 members, and committed offsets), N member and offset rows
in all, half of each. The actors stand in for ``OffsetsPartition``: each answers
``export_tables()``, so the export code runs unchanged against them.

Timed: first ``shard_tables`` in every actor at once (the Arrow tables both paths start from,
kept by the actors); then each path, until Spark has read every row of every table (a
``noop`` write of each DataFrame):

1. object store + RayDP (``actors.tools.export.export_to_spark``): the Arrow tables stay in the
   object store; a zero-CPU task per run of partitions writes each table's rows as one Arrow
   IPC block there; Spark's executors read the blocks in the JVM (tasks carry object ids);
2. ray.data + RayDP (``export_datasets`` + ``dataset_to_spark``, the previous path): the same
   tables go through ``ray.data`` (``from_arrow_refs``, ``repartition``) before the IPC blocks;
3. driver: the tables are fetched to the driver, turned into Python rows and handed to
   ``spark.createDataFrame`` (what one writes without RayDP; its tasks carry the rows).

It prints rows/s for each and the ratios to the driver path. The machine is shared, so
absolute rates drift between runs; the ratios are the figures to compare.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import pyarrow as pa
import ray

from actors.tools.export import (
    dataset_to_spark,
    export_datasets,
    export_schema,
    export_to_spark,
    start_spark,
)
from actors.tools.state_tables import TABLES
from protocol.consumer.records import (
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
)
from protocol.records import OffsetCommitKey, OffsetCommitValue, Record
from protocol.shard import GroupCoordinatorShard

MEMBERS_PER_GROUP = 1_000
PARTITIONS_PER_TOPIC = 100


def synthetic_shard(holder: int, members: int, offsets: int) -> GroupCoordinatorShard:
    """A shard of ``members`` members (groups of 1,000) and ``offsets`` committed offsets,
    built by replaying the records a coordinator would have written."""
    shard = GroupCoordinatorShard()
    for i in range(members):
        gid = f"h{holder}-g{i // MEMBERS_PER_GROUP}"
        if i % MEMBERS_PER_GROUP == 0:
            shard.replay(Record(ConsumerGroupMetadataKey(gid), ConsumerGroupMetadataValue(1)))
        meta = ConsumerGroupMemberMetadataValue(
            client_id=f"client-{i}", client_host="/10.0.0.1",
            subscribed_topic_names=(f"topic-{i % 10}",), rebalance_timeout_ms=60_000,
        )
        shard.replay(Record(ConsumerGroupMemberMetadataKey(gid, f"h{holder}-m{i}"), meta))
    committed: dict[str, dict[tuple[str, int], OffsetCommitValue]] = {}
    for j in range(offsets):
        gid = f"h{holder}-g{j // (10 * PARTITIONS_PER_TOPIC)}"
        topic, p = f"topic-{j // PARTITIONS_PER_TOPIC % 10}", j % PARTITIONS_PER_TOPIC
        value = OffsetCommitValue(offset=1_000 + j, commit_timestamp=1_700_000_000_000)
        shard.replay(Record(OffsetCommitKey(gid, topic, p), value))
        committed.setdefault(gid, {})[(topic, p)] = value
    if not getattr(shard.offsets, "offsets", None):
        shard.offsets.offsets = committed  # offsets replay not implemented yet: place them
    return shard


@ray.remote(num_cpus=0)
class ShardHolder:
    """A stand-in for ``OffsetsPartition``: a synthetic shard that answers ``export_tables``
    with its Arrow tables, made once by ``make_tables`` so that the transports are timed
    alone."""

    def __init__(self, holder: int, members: int, offsets: int) -> None:
        self.shard = synthetic_shard(holder, members, offsets)
        self.tables: dict[str, pa.Table] | None = None

    def make_tables(self) -> int:
        from actors.tools.state_tables import shard_tables

        self.tables = shard_tables(self.shard)
        return sum(t.num_rows for t in self.tables.values())

    def export_tables(self) -> dict[str, pa.Table]:
        assert self.tables is not None, "make_tables first"
        return self.tables

    def query(self, fn: object) -> dict[str, pa.Table]:
        """What ``actors.tools.export`` asks a partition (``fn``: ``shard_tables``)."""
        return self.export_tables()


def read_all(frames: dict) -> None:
    """Make Spark read every row and column of every DataFrame."""
    for df in frames.values():
        df.write.format("noop").mode("overwrite").save()


def via_raydp(holders: list, spark, blocks: int | None) -> float:
    """``holders`` stand in for the partition actors ``export_to_spark`` reads."""
    started = time.perf_counter()
    read_all(export_to_spark(holders, spark, blocks))
    return time.perf_counter() - started


def via_ray_data(holders: list, spark, blocks: int | None) -> float:
    """The previous path: ``ray.data`` datasets repartitioned, then RayDP's Arrow path."""
    started = time.perf_counter()
    frames = {}
    for name, ds in export_datasets(holders, blocks).items():
        if ds.count():
            frames[name] = dataset_to_spark(spark, ds, export_schema(name))
    read_all(frames)
    return time.perf_counter() - started


def via_driver(holders: list, spark) -> float:
    from actors.tools.export import _spark_schema

    started = time.perf_counter()
    per_partition = ray.get([h.export_tables.remote() for h in holders])
    frames = {}
    for name in TABLES:
        schema = export_schema(name)
        rows: list[tuple] = []
        for p, tables in enumerate(per_partition):
            t = tables[name]
            columns = [c.to_pylist() for c in t.columns] + [[p] * t.num_rows]
            rows += zip(*columns, strict=True)
        frames[name] = spark.createDataFrame(rows, _spark_schema(schema))
    read_all(frames)
    return time.perf_counter() - started


def _progress(path: str, seconds: float) -> None:
    """A timestamped line as each path finishes, on stderr (where Spark logs its warnings),
    so that a warning can be told to belong to the path running before it."""
    print(f"{time.strftime('%y/%m/%d %H:%M:%S')} bench: {path} done in {seconds:.1f} s",
          file=sys.stderr, flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000, help="members + offsets, in all")
    ap.add_argument("--holders", type=int, default=4, help="actors holding a shard each")
    ap.add_argument("--blocks", type=int, default=None, help="ray.data blocks per table")
    ap.add_argument("--executor-memory", default="2GB")
    args = ap.parse_args()

    ray.init(namespace="cohort-bench-export", include_dashboard=False, log_to_driver=False,
             object_store_memory=2 << 30)
    per_holder = args.rows // (2 * args.holders)
    started = time.perf_counter()
    holders = [ShardHolder.remote(h, per_holder, per_holder) for h in range(args.holders)]
    ray.get([h.__ray_ready__.remote() for h in holders])
    built_s = time.perf_counter() - started
    started = time.perf_counter()
    rows = sum(ray.get([h.make_tables.remote() for h in holders]))
    tables_s = time.perf_counter() - started
    print(f"{args.holders} shards of {per_holder:,} members + {per_holder:,} offsets "
          f"(built by replay in {built_s:.1f} s): {rows:,} rows in all tables")
    print(f"  shard_tables, {args.holders} actors at once      {tables_s:7.1f} s "
          f"{rows / tables_s:12,.0f} rows/s   (both paths start from these)")

    spark = start_spark(app_name="cohort-bench-export", executor_memory=args.executor_memory,
                        configs={"spark.driver.memory": "2g"})
    via_raydp(holders, spark, args.blocks)  # warm up: worker processes, JIT, Spark's codegen
    raydp_s = via_raydp(holders, spark, args.blocks)
    _progress("object store + RayDP", raydp_s)
    via_ray_data(holders, spark, args.blocks)  # warm up ray.data's executor
    ray_data_s = via_ray_data(holders, spark, args.blocks)
    _progress("ray.data + RayDP", ray_data_s)
    driver_s = via_driver(holders, spark)
    _progress("driver rows", driver_s)
    import raydp

    raydp.stop_spark()
    ray.shutdown()

    print(f"  object store + RayDP (IPC blocks read by executors) {raydp_s:7.1f} s "
          f"{rows / raydp_s:12,.0f} rows/s")
    print(f"  ray.data repartition + RayDP (previous path)        {ray_data_s:7.1f} s "
          f"{rows / ray_data_s:12,.0f} rows/s")
    print(f"  driver rows + spark.createDataFrame                 {driver_s:7.1f} s "
          f"{rows / driver_s:12,.0f} rows/s")
    print(f"  ratio: object store + RayDP is {driver_s / raydp_s:.1f} x the driver path "
          f"({(driver_s + tables_s) / (raydp_s + tables_s):.1f} x counting shard_tables); "
          f"the previous ray.data path {driver_s / ray_data_s:.1f} x")


if __name__ == "__main__":
    main()
