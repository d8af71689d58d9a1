"""A shard's state as Arrow tables: what ``OffsetsPartition.query(shard_tables)`` returns.

Six are shared by every group type; a group type may have tables of its own besides (the
Connect row's ``connect_assignment``, for its connectors and tasks). Each row of the group-type
table writes its groups' rows (``GroupType.export``) and names its own tables' columns
(``GroupType.export_tables``); this module holds the shared schemas, the offsets and rebalance
rows, and names no group type.

These tables are the export's contract (``actors.tools.export`` turns them into Spark DataFrames and
Parquet files), so their schemas are fixed here as constants, one per table, and every table
is built with exactly its schema, even when it has no rows. Tables are built column by column
(one Python list per column, filled by list comprehensions over the members' records, then one
``pa.array`` per column), not as row dicts: a few hundred thousand rows a second on one core
(``bench/export.py``).

The offsets partition a table came from is not known to the shard; ``actors.tools.export`` adds it
as the ``offsets_partition`` column.

Integer columns never hold nulls (Kafka's ``-1`` stands for "none", as on the wire), so they
stay integers in pandas too (``toPandas`` turns a nullable integer column into floats).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterable, Mapping

import pyarrow as pa

from protocol.group_types import GROUP_TYPES, type_of

_STR = pa.string()
_I32 = pa.int32()
_I64 = pa.int64()


def _f(name: str, type_: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable=nullable)


GROUPS_SCHEMA = pa.schema([
    _f("group_id", _STR),
    _f("group_type", _STR),  # the row's name: "consumer" | "classic" | "connect" | "share"
    _f("protocol_type", _STR),  # "consumer" for KIP-848 groups; a classic group's own
    _f("state", _STR),
    _f("group_epoch", _I32),  # classic: the generation id
    _f("assignment_epoch", _I32),  # classic: -1 (a classic group has no separate target)
    _f("assignor", _STR),  # classic: the selected protocol name ("range", ...)
    _f("member_count", _I32),
])

MEMBERS_SCHEMA = pa.schema([
    _f("group_id", _STR),
    _f("member_id", _STR),
    _f("instance_id", _STR, nullable=True),
    _f("rack_id", _STR, nullable=True),
    _f("client_id", _STR),
    _f("client_host", _STR),
    _f("member_epoch", _I32),  # classic: the generation id
    _f("state", _STR),
    _f("subscribed_topics", pa.list_(_STR)),
    _f("subscribed_topic_regex", _STR, nullable=True),
    # "consumer" | "classic" (a classic member of a modern group too) | "connect" | "share"
    _f("protocol", _STR),
])

TARGET_ASSIGNMENT_SCHEMA = pa.schema([
    _f("group_id", _STR),
    _f("member_id", _STR),
    _f("topic_id", _STR),
    _f("topic_name", _STR),
    _f("partition", _I32),
])

CURRENT_ASSIGNMENT_SCHEMA = pa.schema([
    *TARGET_ASSIGNMENT_SCHEMA,
    _f("pending_revocation", pa.bool_()),
])

OFFSETS_SCHEMA = pa.schema([
    _f("group_id", _STR),
    _f("topic", _STR),
    _f("partition", _I32),
    _f("committed_offset", _I64),
    _f("leader_epoch", _I32),
    _f("metadata", _STR),
    _f("commit_timestamp", _I64),
    _f("expire_timestamp", _I64),
])

REBALANCES_SCHEMA = pa.schema([
    _f("group_id", _STR),
    _f("time_ms", _I64),
    _f("generation_id", _I32),
    _f("reason", _STR),
    _f("member_id", _STR, nullable=True),
    _f("group_instance_id", _STR, nullable=True),
])

# A row's column types (``GroupType.export_tables``) in Arrow's terms.
_ARROW_TYPES = {"string": _STR, "int32": _I32, "int64": _I64, "bool": pa.bool_()}


def _row_schema(columns: tuple[tuple[str, str, bool], ...]) -> pa.Schema:
    return pa.schema([_f(name, _ARROW_TYPES[kind], nullable) for name, kind, nullable in columns])


# Table name -> schema, in export order: the shared tables, then the rows' own.
SCHEMAS: dict[str, pa.Schema] = {
    "groups": GROUPS_SCHEMA,
    "members": MEMBERS_SCHEMA,
    "target_assignment": TARGET_ASSIGNMENT_SCHEMA,
    "current_assignment": CURRENT_ASSIGNMENT_SCHEMA,
    "offsets": OFFSETS_SCHEMA,
    "rebalances": REBALANCES_SCHEMA,
    **{
        name: _row_schema(columns)
        for row in GROUP_TYPES
        for name, columns in row.export_tables.items()
    },
}
TABLES: tuple[str, ...] = tuple(SCHEMAS)

NO_EPOCH = -1


class _Columns:
    """One list per column of a schema, filled a column at a time (``extend``) or, for the
    small tables, a row at a time (``add``)."""

    def __init__(self, schema: pa.Schema) -> None:
        self.schema = schema
        self.data: dict[str, list] = {name: [] for name in schema.names}

    def add(self, **row: object) -> None:
        assert row.keys() == self.data.keys(), sorted(row.keys() ^ self.data.keys())
        for name, value in row.items():
            self.data[name].append(value)

    def extend(self, **columns: list) -> None:
        """Append equally long columns, one for each of the schema's."""
        assert columns.keys() == self.data.keys(), sorted(columns.keys() ^ self.data.keys())
        lengths = {len(values) for values in columns.values()}
        assert len(lengths) == 1, f"columns of different lengths {lengths}"
        for name, values in columns.items():
            self.data[name].extend(values)

    def extend_partitions(self, partitions: Iterable[int], **fixed: object) -> None:
        """One row per partition: the ``partition`` column takes ``partitions``, every other
        column its ``fixed`` value."""
        ps = list(partitions)
        self.extend(partition=ps, **{name: [value] * len(ps) for name, value in fixed.items()})

    def table(self) -> pa.Table:
        return pa.Table.from_arrays(
            [pa.array(self.data[f.name], type=f.type) for f in self.schema], schema=self.schema
        )


def shard_tables(shard) -> dict[str, pa.Table]:
    """Every group, member, assignment, committed offset and rebalance cause of ``shard``
    (a ``GroupCoordinatorShard``), as the tables of ``SCHEMAS``."""
    with _gc_paused():
        return _shard_tables(shard)


@contextlib.contextmanager
def _gc_paused():
    """The cycle collector off while building: the columns allocate millions of objects, which
    would set off full collections that walk the whole shard each time, to find nothing (plain
    lists of values hold no cycles). Halves the time of a large export."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _shard_tables(shard) -> dict[str, pa.Table]:
    """The group-type table's rows in order, each type's groups by its row's writer (a row
    without one shows its groups' rows alone: ``_any_groups``), then offsets and rebalances."""
    cols = {name: _Columns(schema) for name, schema in SCHEMAS.items()}
    groups = [shard.groups[gid] for gid in sorted(shard.groups)]
    for row in GROUP_TYPES:
        of_type = [g for g in groups if g.group_type == row.name]
        (row.export or _any_groups)(of_type, shard, cols)
    _offsets(shard.offsets.offsets, cols["offsets"])
    _rebalances(shard.history.causes, cols["rebalances"])
    return {name: c.table() for name, c in cols.items()}


def _any_groups(groups: list, shard, cols: dict[str, _Columns]) -> None:
    """The ``groups`` rows of a group type whose row has no writer: what every group answers
    (its row's protocol type, its state, members and epochs when it has them)."""
    for g in groups:
        cols["groups"].add(
            group_id=g.group_id, group_type=g.group_type,
            protocol_type=type_of(g).list_protocol_type(g), state=g.state,
            group_epoch=getattr(g, "group_epoch", NO_EPOCH),
            assignment_epoch=getattr(g, "assignment_epoch", NO_EPOCH), assignor="",
            member_count=len(getattr(g, "members", ())),
        )


def _rebalances(history: dict, out: _Columns) -> None:
    """Why each group rebalanced (classic PreparingRebalance, consumer epoch bumps): kept
    per group id, so a group's history spans its protocol conversions."""
    for gid in sorted(history):
        for cause in history[gid]:
            out.add(
                group_id=gid, time_ms=cause.time_ms, generation_id=cause.generation_id,
                reason=cause.reason or "", member_id=cause.member_id,
                group_instance_id=cause.group_instance_id,
            )


# ---------------------------------------------------------------------- offsets


def _offsets(offsets: Mapping[str, Mapping[tuple[str, int], object]], cols: _Columns) -> None:
    """``offsets``: group id -> (topic, partition) -> ``OffsetCommitValue``."""
    for gid in sorted(offsets):
        by_partition = offsets[gid]
        items = list(by_partition.items()) if isinstance(by_partition, Mapping) else []
        values = [v for _, v in items]
        cols.extend(
            group_id=[gid] * len(items),
            topic=[tp[0] for tp, _ in items],
            partition=[tp[1] for tp, _ in items],
            committed_offset=[v.offset for v in values],
            leader_epoch=[v.leader_epoch for v in values],
            metadata=[v.metadata or "" for v in values],
            commit_timestamp=[v.commit_timestamp for v in values],
            expire_timestamp=[v.expire_timestamp for v in values],
        )
