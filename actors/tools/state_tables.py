"""A shard's state as seven Arrow tables: what ``OffsetsPartition.query(shard_tables)`` returns.

Six are shared by every group type; Connect groups add rows to ``groups`` and ``members`` and
have ``connect_assignment`` for their connectors and tasks (``actors.tools.connect_tables``).

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

from actors.tools.connect_tables import (
    CONNECT_ASSIGNMENT_SCHEMA,
    assignment_table,
    group_row,
    member_rows,
)
from actors.tools.share_tables import share_groups
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
)
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.connect.group import ConnectGroup
from protocol.consumer.describe import topic_name
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import MemberState
from protocol.group_types import GROUP_TYPES, type_of
from protocol.metadata import MetadataImage

_STR = pa.string()
_I32 = pa.int32()
_I64 = pa.int64()


def _f(name: str, type_: pa.DataType, nullable: bool = False) -> pa.Field:
    return pa.field(name, type_, nullable=nullable)


GROUPS_SCHEMA = pa.schema([
    _f("group_id", _STR),
    _f("group_type", _STR),  # "consumer" | "classic" | "connect"
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
    # "consumer" | "classic" (a classic member of a consumer group too) | "connect"
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

# Table name -> schema, in export order.
SCHEMAS: dict[str, pa.Schema] = {
    "groups": GROUPS_SCHEMA,
    "members": MEMBERS_SCHEMA,
    "target_assignment": TARGET_ASSIGNMENT_SCHEMA,
    "current_assignment": CURRENT_ASSIGNMENT_SCHEMA,
    "offsets": OFFSETS_SCHEMA,
    "rebalances": REBALANCES_SCHEMA,
    "connect_assignment": CONNECT_ASSIGNMENT_SCHEMA,
}
TABLES: tuple[str, ...] = tuple(SCHEMAS)

NO_EPOCH = -1
_MEMBER_STATES = {int(s): s.label for s in MemberState}


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
    """The group-type table's rows in order, each type's groups by its writer (a type with
    none yet shows its groups' rows alone: ``_any_groups``), then offsets and rebalances."""
    cols = {name: _Columns(schema) for name, schema in SCHEMAS.items()}
    groups = [shard.groups[gid] for gid in sorted(shard.groups)]
    by_type = {row.name: [g for g in groups if g.group_type == row.name] for row in GROUP_TYPES}
    for name, of_type in by_type.items():
        _GROUP_WRITERS.get(name, _any_groups)(of_type, shard, cols)
    _offsets(shard.offsets.offsets, cols["offsets"])
    _rebalances(shard.history.causes, cols["rebalances"])
    tables = {name: c.table() for name, c in cols.items() if name != "connect_assignment"}
    tables["connect_assignment"] = assignment_table(by_type.get("connect", []))
    return tables


def _any_groups(groups: list, shard, cols: dict[str, _Columns]) -> None:
    """The ``groups`` rows of a group type no writer below knows yet: what every group
    answers (its row's protocol type, its state, members and epochs when it has them)."""
    for g in groups:
        cols["groups"].add(
            group_id=g.group_id, group_type=g.group_type,
            protocol_type=type_of(g).list_protocol_type(g), state=g.state,
            group_epoch=getattr(g, "group_epoch", NO_EPOCH),
            assignment_epoch=getattr(g, "assignment_epoch", NO_EPOCH), assignor="",
            member_count=len(getattr(g, "members", ())),
        )


def _consumer_groups(groups: list[ConsumerGroup], shard, cols: dict[str, _Columns]) -> None:
    for g in groups:
        _consumer_group(g, shard.image, shard.config, cols)
    _consumer_members(groups, cols["members"])


def _classic_groups(groups: list[ClassicGroup], shard, cols: dict[str, _Columns]) -> None:
    for g in groups:
        _classic_group(g, shard.image, cols)


def _connect_groups(groups: list[ConnectGroup], shard, cols: dict[str, _Columns]) -> None:
    for g in groups:
        cols["groups"].add(**group_row(g, shard.config.default_connect_assignor))
        for row in member_rows(g):
            cols["members"].add(**row)


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


# ---------------------------------------------------------------------- consumer groups


def _consumer_group(group: ConsumerGroup, image: MetadataImage, config,
                    cols: dict[str, _Columns]) -> None:
    """The group's row and its assignments' rows (its members' rows come in one pass over
    every consumer group: ``_consumer_members``)."""
    gid = group.group_id
    cols["groups"].add(
        group_id=gid, group_type="consumer", protocol_type=PROTOCOL_TYPE, state=group.state,
        group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
        assignor=group.assignor(config).name, member_count=len(group.members),
    )
    names: dict[str, str] = {}

    def name_of(topic_id: str) -> str:
        if topic_id not in names:
            names[topic_id] = topic_name(image, group, topic_id)
        return names[topic_id]

    current = cols["current_assignment"]
    for mid in sorted(group.members):
        held = group.members[mid].current  # the member's current-assignment record
        for pending, parts in ((False, held.assigned_partitions),
                               (True, held.partitions_pending_revocation)):
            for tid, ps in sorted(parts.items()) if parts else ():
                current.extend_partitions(ps, group_id=gid, member_id=mid, topic_id=tid,
                                          topic_name=name_of(tid), pending_revocation=pending)
    target = cols["target_assignment"]
    for mid in sorted(group.target):
        for tid, ps in sorted(group.target[mid].partitions.items()):
            target.extend_partitions(ps, group_id=gid, member_id=mid, topic_id=tid,
                                     topic_name=name_of(tid))


def _consumer_members(groups: list[ConsumerGroup], cols: _Columns) -> None:
    """Every member of ``groups``, a column at a time, from the member's two records."""
    members = [(g.group_id, g.members[mid]) for g in groups for mid in sorted(g.members)]
    metas = [mem.metadata for _, mem in members]
    currents = [mem.current for _, mem in members]
    unknown = MemberState.UNKNOWN.label
    cols.extend(
        group_id=[gid for gid, _ in members],
        member_id=[mem.member_id for _, mem in members],
        instance_id=[md.instance_id for md in metas],
        rack_id=[md.rack_id for md in metas],
        client_id=[md.client_id or "" for md in metas],
        client_host=[md.client_host or "" for md in metas],
        member_epoch=[c.member_epoch for c in currents],
        state=[_MEMBER_STATES.get(c.state, unknown) for c in currents],
        subscribed_topics=[md.subscribed_topic_names for md in metas],  # tuples: Arrow takes them
        subscribed_topic_regex=[md.subscribed_topic_regex for md in metas],
        protocol=["consumer" if md.classic_member_metadata is None else "classic" for md in metas],
    )




# ---------------------------------------------------------------------- classic groups


def _classic_group(group: ClassicGroup, image: MetadataImage, cols: dict[str, _Columns]) -> None:
    """A classic group's rows. Its members' subscriptions and assignments are opaque bytes,
    read only when the group speaks the consumer protocol; bytes that do not decode give no
    subscribed topics and no assignment rows, never an error. The leader's assignment is both
    the member's target and (as far as the coordinator knows) what it owns."""
    gid = group.group_id
    cols["groups"].add(
        group_id=gid, group_type="classic", protocol_type=group.protocol_type or "",
        state=group.state, group_epoch=group.generation_id, assignment_epoch=NO_EPOCH,
        assignor=group.protocol_name or "", member_count=len(group.members),
    )
    consumer = group.protocol_type == PROTOCOL_TYPE
    for mid in sorted(group.members):
        mem = group.members[mid]
        topics, rack = _subscription(mem, group.protocol_name) if consumer else ([], None)
        cols["members"].add(
            group_id=gid, member_id=mid, instance_id=mem.group_instance_id, rack_id=rack,
            client_id=mem.client_id or "", client_host=mem.client_host or "",
            member_epoch=group.generation_id, state=_classic_member_state(mem),
            subscribed_topics=topics, subscribed_topic_regex=None, protocol="classic",
        )
        for topic, ps in _assignment(mem) if consumer else ():
            t = image.topic_by_name(topic)
            row = {"group_id": gid, "member_id": mid, "topic_id": t.topic_id if t else "",
                   "topic_name": topic}
            cols["target_assignment"].extend_partitions(ps, **row)
            cols["current_assignment"].extend_partitions(ps, **row, pending_revocation=False)


def _classic_member_state(mem: ClassicMember) -> str:
    if mem.awaiting_join is not None:
        return "awaiting_join"
    if mem.awaiting_sync is not None:
        return "awaiting_sync"
    return "stable"


def _subscription(mem: ClassicMember, protocol: str | None) -> tuple[list[str], str | None]:
    try:
        s = decode_subscription(mem.metadata_for(protocol))
    except ConsumerProtocolError:
        return [], None
    return sorted(s.topics), s.rack_id


def _assignment(mem: ClassicMember) -> list[tuple[str, list[int]]]:
    try:
        return sorted(decode_assignment(mem.assignment).assigned_partitions)
    except ConsumerProtocolError:
        return []


# group type (a row of ``protocol.group_types``) -> the writer of its groups' rows
_GROUP_WRITERS = {
    "consumer": _consumer_groups,
    "classic": _classic_groups,
    "connect": _connect_groups,
    "share": share_groups,
}


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
