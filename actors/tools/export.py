"""Export the coordinator's state to Spark (RayDP) and Parquet, without collecting on the driver.

Each ``OffsetsPartition`` turns its shard into seven Arrow tables
(``actors.tools.state_tables``), which stay in Ray's object store. To Spark
(``export_to_spark``): only the tables' row counts come to the driver, which cuts the
partitions into runs of about ``ROWS_PER_BLOCK`` rows; a zero-CPU task per run adds the
``offsets_partition`` column and writes each table's rows of the run as one Arrow IPC block
into the object store (``spark_blocks``); RayDP's Arrow path then makes one Spark task per
block, which a Spark executor (a Ray actor) reads from the object store in the JVM
(``blocks_to_spark``). Spark's tasks carry object ids and owner addresses, never rows, and
the driver only ever holds references and row counts. (The previous path went through
``ray.data``, a Dataset per table repartitioned into a few blocks: several ``ray.data``
executions per export, each with its own start-up; ``export_datasets`` still makes those
Datasets for the Parquet export without Spark, where ``ray.data``'s writers do the work.)

A Spark session on Ray comes from ``start_spark`` (RayDP's ``init_spark`` with the options Java
17 needs). Its driver JVM runs in the calling process, so a Ray client (``ray://``) cannot host
it: from a client, use ``export_via_actor``, which runs ``export_parquet`` in a zero-CPU actor
inside the cluster and writes the files on that actor's node (so ``out_dir`` should be a path
that node can write, shared storage on a multi-node cluster).

The functions take the partition actors' handles (``Cluster.partitions()``, or
``actors.runtime.controller.partition_handles``), not a ``Cluster``: the export reads the
partitions and nothing else, and ``Cluster.export`` calls into this module, so this module
must not need ``actors.cluster`` back.

Sizing: a RayDP executor is a Ray actor holding ``executor_cores`` CPUs for the session's
lifetime (``executor_actor_cpus`` overrides the Ray-side reservation); the RayDP app master is
placed with no CPU. The Spark path's tasks take no CPU; ``ray.data``'s repartition tasks (the
Parquet export without Spark) need one free CPU while they run.
"""

from __future__ import annotations

import math
import os
import sys
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import ray

from actors.runtime.controller import partition_handles
from actors.tools.state_tables import SCHEMAS, TABLES, shard_tables

# The offsets partition actors, ``offsets-0`` first: anything answering ``query(shard_tables)``.
Partitions = Sequence[Any]

PARTITION_COLUMN = "offsets_partition"
# Rows per Spark task (one ray.data block each), and at most this many blocks per table.
ROWS_PER_BLOCK = 500_000
MAX_BLOCKS = 16

# Java 17 closes the JDK internals Spark (and Arrow, via Netty) reach into; these reopen them.
JAVA17_OPTIONS = " ".join([
    *(
        f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
        for pkg in (
            "java.lang", "java.lang.invoke", "java.lang.reflect", "java.io", "java.net",
            "java.nio", "java.util", "java.util.concurrent", "java.util.concurrent.atomic",
            "sun.nio.ch", "sun.nio.cs", "sun.security.action", "sun.util.calendar",
        )
    ),
    "-Djdk.reflect.useDirectMethodHandle=false",
    "-Dio.netty.tryReflectionSetAccessible=true",
])
# RayDP 1.6.5 reads this key for the JVM of its app master (raydp/spark/ray_cluster_master.py).
APP_MASTER_JAVA_OPTIONS_KEY = "spark.ray.raydp_app_master.extraJavaOptions"
# RayDP 1.6.5: Ray resources of the app-master actor, and the CPUs an executor actor reserves.
APP_MASTER_CPU_KEY = "spark.ray.raydp_spark_master.actor.resource.CPU"
EXECUTOR_ACTOR_CPU_KEY = "spark.ray.raydp_spark_executor.actor.resource.cpu"
JAVA_OPTIONS_KEYS = (
    "spark.driver.extraJavaOptions", "spark.executor.extraJavaOptions",
    APP_MASTER_JAVA_OPTIONS_KEY,
)


def export_schema(name: str) -> pa.Schema:
    """The schema of an exported table: the shard's table plus the offsets partition."""
    return SCHEMAS[name].append(pa.field(PARTITION_COLUMN, pa.int32(), nullable=False))


# ---------------------------------------------------------------------- Spark session


def start_spark(app_name: str = "cohort-export", num_executors: int = 1,
                executor_cores: int = 1, executor_memory: str = "1GB",
                executor_actor_cpus: float | None = None,
                configs: dict[str, str] | None = None):
    """A Spark session whose executors are Ray actors (RayDP), set up for Java 17.

    ``executor_actor_cpus`` is the CPU each executor actor reserves in Ray (default:
    ``executor_cores``); fewer lets Spark share a small machine with the rest of Ray. Stop the
    session with ``raydp.stop_spark()``.
    """
    import raydp

    # Spark's Python workers (users' UDFs) must run this interpreter, which has pyspark's
    # dependencies; PySpark takes it from the environment.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    conf = {
        APP_MASTER_CPU_KEY: "0",
        "spark.driver.memory": "1g",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(max(2, num_executors * executor_cores)),
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
    }
    if executor_actor_cpus is not None:
        conf[EXECUTOR_ACTOR_CPU_KEY] = str(executor_actor_cpus)
    conf.update(configs or {})
    for key in JAVA_OPTIONS_KEYS:  # the user's JVM options come after Java 17's
        conf[key] = f"{JAVA17_OPTIONS} {conf.get(key, '')}".strip()
    return raydp.init_spark(
        app_name, num_executors=num_executors, executor_cores=executor_cores,
        executor_memory=executor_memory, fault_tolerant_mode=False, configs=conf,
    )


# ---------------------------------------------------------------------- ray.data datasets


@ray.remote(num_cpus=0)
def _tag_partition(tables: dict[str, pa.Table], partition: int) -> tuple[pa.Table, ...]:
    """One partition's tables, each with the ``offsets_partition`` column, as separate objects."""
    out = []
    for name in TABLES:
        table = tables[name]
        out.append(_tagged(table, partition, name))
    return tuple(out)


def table_refs(partitions: Partitions) -> dict[str, list[ray.ObjectRef]]:
    """Per table, one object reference per offsets partition (nothing comes to the driver)."""
    refs: dict[str, list[ray.ObjectRef]] = {name: [] for name in TABLES}
    for p, handle in enumerate(partitions):
        tables = handle.query.remote(shard_tables)
        split = _tag_partition.options(num_returns=len(TABLES)).remote(tables, p)
        for name, ref in zip(TABLES, split, strict=True):
            refs[name].append(ref)
    return refs


def export_datasets(partitions: Partitions,
                    num_blocks: int | None = None) -> dict[str, ray.data.Dataset]:
    """One materialized ``ray.data`` Dataset per table, in a few blocks.

    ``num_blocks`` defaults to one per ``ROWS_PER_BLOCK`` rows (at most ``MAX_BLOCKS``).
    A table with no rows is an empty Dataset (``count() == 0``) whose blocks may lack a schema:
    use ``export_schema(name)`` for it.
    """
    out = {}
    for name, refs in table_refs(partitions).items():
        ds = ray.data.from_arrow_refs(refs)
        rows = ds.count()  # from the blocks' metadata
        blocks = num_blocks or max(1, min(MAX_BLOCKS, math.ceil(rows / ROWS_PER_BLOCK)))
        out[name] = ds.repartition(blocks).materialize() if rows else ds
    return out


# ---------------------------------------------------------------------- Spark and Parquet


@ray.remote(num_cpus=0)
def _arrow_ipc(block: pa.Table, schema: pa.Schema) -> bytes:
    """One block as an Arrow IPC stream: the bytes RayDP's executors read from the store."""
    return _ipc_bytes(block.select(schema.names).cast(schema), schema)


def _block_refs(ds: ray.data.Dataset) -> list[ray.ObjectRef]:
    return [ref for bundle in ds.iter_internal_ref_bundles() for ref in bundle.block_refs]


def dataset_to_spark(spark: Any, ds: ray.data.Dataset, schema: pa.Schema):
    """A materialized Dataset as a Spark DataFrame of ``schema``, through RayDP's Arrow path:
    each block becomes Arrow IPC bytes in the object store (a zero-CPU task) that Spark's
    executors read in the JVM (``blocks_to_spark``). (``Dataset.to_spark`` would go through
    pandas in Spark's Python workers, which pyspark 3.5 cannot do with pandas 3's
    Arrow-backed string columns.)"""
    refs = [_arrow_ipc.remote(block, schema) for block in _block_refs(ds)]
    return blocks_to_spark(spark, refs, schema)


def export_to_spark(partitions: Partitions, spark: Any,
                    num_blocks: int | None = None) -> dict[str, Any]:
    """The coordinator's state as Spark DataFrames (table name -> DataFrame), read by Spark's
    executors from Ray's object store. ``spark`` must be a RayDP session (``start_spark``)."""
    return {name: df for name, (df, _) in _frames(partitions, spark, num_blocks).items()}


@ray.remote(num_cpus=0)
def _row_counts(tables: dict[str, pa.Table]) -> dict[str, int]:
    return {name: tables[name].num_rows for name in TABLES}


@ray.remote(num_cpus=0)
def _ipc_blocks(partition_ids: list[int], *tables: dict[str, pa.Table]) -> tuple[bytes, ...]:
    """A few partitions' tables, per table concatenated (with the ``offsets_partition``
    column) and written as one Arrow IPC stream: one Spark task's block of each table."""
    blocks = []
    for name in TABLES:
        schema = export_schema(name)
        parts = [
            _tagged(t[name], p, name).select(schema.names).cast(schema)
            for p, t in zip(partition_ids, tables, strict=True)
        ]
        blocks.append(_ipc_bytes(pa.concat_tables(parts), schema))
    return tuple(blocks)


def _tagged(table: pa.Table, partition: int, name: str) -> pa.Table:
    column = pa.repeat(pa.scalar(partition, pa.int32()), table.num_rows)
    return table.append_column(export_schema(name).field(PARTITION_COLUMN), column)


def _ipc_bytes(table: pa.Table, schema: pa.Schema) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def spark_blocks(partitions: Partitions, num_blocks: int | None = None
                 ) -> dict[str, tuple[list[ray.ObjectRef], int]]:
    """Per table, the Arrow IPC blocks Spark reads (object references) and its row count.

    Each partition's tables stay in the object store; only their row counts come to the
    driver, to cut the partitions into runs of about ``ROWS_PER_BLOCK`` rows (at most
    ``MAX_BLOCKS``; ``num_blocks`` runs if given), and a zero-CPU task per run writes each
    table's rows of the run as one block. A table with no rows in a run gets no block.
    """
    tables = [handle.query.remote(shard_tables) for handle in partitions]
    counts = ray.get([_row_counts.remote(t) for t in tables])
    out: dict[str, tuple[list[ray.ObjectRef], int]] = {name: ([], 0) for name in TABLES}
    for run in _runs([sum(c.values()) for c in counts], num_blocks):
        refs = _ipc_blocks.options(num_returns=len(TABLES)).remote(
            run, *(tables[p] for p in run)
        )
        for name, ref in zip(TABLES, refs, strict=True):
            rows = sum(counts[p][name] for p in run)
            if rows:
                blocks, total = out[name]
                out[name] = ([*blocks, ref], total + rows)
    return out


def _runs(rows: list[int], num_blocks: int | None) -> list[list[int]]:
    """Consecutive partitions cut into runs: ``num_blocks`` of them, or of about
    ``ROWS_PER_BLOCK`` rows each (at most ``MAX_BLOCKS``)."""
    if not rows:
        return []
    if num_blocks:
        size = math.ceil(len(rows) / max(1, min(num_blocks, len(rows))))
        return [list(range(i, min(i + size, len(rows)))) for i in range(0, len(rows), size)]
    target = max(ROWS_PER_BLOCK, math.ceil(sum(rows) / MAX_BLOCKS))
    runs: list[list[int]] = [[]]
    held = 0
    for p, n in enumerate(rows):
        if runs[-1] and held + n > target:
            runs.append([])
            held = 0
        runs[-1].append(p)
        held += n
    return runs


def blocks_to_spark(spark: Any, blocks: list[ray.ObjectRef], schema: pa.Schema):
    """Arrow IPC blocks in the object store as a Spark DataFrame of ``schema``.

    Spark's executors (Ray actors themselves) read each block from the object store in the
    JVM, one task per block: the tasks carry object ids and owner addresses, never rows. The
    references are handed to RayDP's app master, which keeps them alive as long as the Spark
    session, as RayDP does for its own conversions.
    """
    from raydp.spark import dataset as raydp_dataset
    from raydp.spark.ray_cluster_master import RAYDP_SPARK_MASTER_SUFFIX

    holder = ray.get_actor(spark.sparkContext.appName + RAYDP_SPARK_MASTER_SUFFIX)
    ray.get(holder.add_objects.remote(uuid.uuid4().hex, blocks))
    # RayDP 1.6.5's public ray_dataset_to_spark_dataframe does the same after fetching the
    # first block to the driver to see its type; ours are known to be IPC bytes.
    locations = raydp_dataset.get_locations(blocks)
    return raydp_dataset._convert_by_rdd(spark, blocks, locations, _spark_schema(schema))


def _frames(partitions: Partitions, spark: Any,
            num_blocks: int | None) -> dict[str, tuple[Any, int]]:
    """Each table's DataFrame and row count (known from the tables, without a Spark job)."""
    out = {}
    for name, (blocks, rows) in spark_blocks(partitions, num_blocks).items():
        schema = export_schema(name)
        if rows == 0:
            out[name] = (spark.createDataFrame([], _spark_schema(schema)), 0)
        else:
            out[name] = (blocks_to_spark(spark, blocks, schema), rows)
    return out


def _spark_schema(schema: pa.Schema):
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def export_parquet(partitions: Partitions, out_dir: str | os.PathLike, spark: Any = None,
                   num_blocks: int | None = None) -> dict[str, int]:
    """Write every table as Parquet files under ``out_dir/<table>/``, replacing what was there.

    Through Spark when ``spark`` is given, else with ``ray.data``'s writers (Ray tasks, so the
    files land on whichever node runs them: use shared storage on a multi-node cluster).
    Returns the row count of each table.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    counts = {}
    if spark is not None:
        for name, (df, rows) in _frames(partitions, spark, num_blocks).items():
            df.write.mode("overwrite").parquet(str(out / name))
            counts[name] = rows
        return counts
    for name, ds in export_datasets(partitions, num_blocks).items():
        path = out / name
        _clear(path)
        counts[name] = ds.count()
        if counts[name]:
            ds.write_parquet(str(path))
        else:  # ray.data writes no file for an empty dataset: write the schema alone
            import pyarrow.parquet as pq

            path.mkdir(parents=True, exist_ok=True)
            pq.write_table(export_schema(name).empty_table(), path / "empty.parquet")
    return counts


def _clear(path: Path) -> None:
    """Remove the Parquet files of an earlier export of this table (nothing else)."""
    if not path.is_dir():
        return
    for f in path.iterdir():
        if f.is_file() and (f.suffix == ".parquet" or f.name.startswith(("_", "."))):
            f.unlink()


@ray.remote(num_cpus=0, max_restarts=0)
class _Exporter:
    """Runs an export inside the cluster: where a Ray client's export has to happen."""

    def run(self, num_partitions: int, out_dir: str, use_spark: bool,
            num_blocks: int | None) -> dict[str, int]:
        partitions = partition_handles(num_partitions)  # by name: the caller may be a client
        if not use_spark:
            return export_parquet(partitions, out_dir, num_blocks=num_blocks)
        import raydp

        spark = start_spark(app_name=f"cohort-export-{os.getpid()}")
        try:
            return export_parquet(partitions, out_dir, spark, num_blocks)
        finally:
            raydp.stop_spark()


def export_via_actor(num_partitions: int, out_dir: str, use_spark: bool = False,
                     num_blocks: int | None = None) -> dict[str, int]:
    """``export_parquet`` run by a zero-CPU actor in the cluster, for a ``ray://`` client
    (whose process cannot host Spark's driver); the actor finds the ``num_partitions``
    partition actors by name. ``out_dir`` is a path on the actor's node. With ``use_spark``
    the actor starts (and stops) its own RayDP session, which needs a free CPU for the
    executor. Returns the row count of each table."""
    exporter = _Exporter.remote()
    try:
        return ray.get(exporter.run.remote(num_partitions, str(out_dir), use_spark, num_blocks))
    finally:
        ray.kill(exporter)
