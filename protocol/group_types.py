"""Every group type a shard hosts, as one table: a group type is a row, not a wing.

h11's habit (the machine as data) and Kafka's ``Group`` interface in one place: the shard's
replay, tick, metadata and turn, DeleteGroups, the offsets rules, ListGroups, DescribeGroups,
the codec's registry, compaction, the runtime's metrics and wake-ups, the state tables and the
admin tools iterate these rows or look a group's row up by its ``group_type``; none of them
asks "is this a consumer group?".

A row (``protocol.group_row.GroupType``) is built by its type's package (``<type>/row.py``),
which owns everything in it: its rules, records, timers, lifecycle answers and the shapes
others see. Adding a group type: write its package and its row there, list the row below, and
give its requests their rows in the API table (``protocol/api.py``).

Rows are in the order the shard visits types (metadata, end of turn, state tables): consumer,
classic, connect, share, streams.
"""

from __future__ import annotations

from collections.abc import Iterable

from protocol.classic.group import EMPTY as CLASSIC_EMPTY
from protocol.classic.row import ROW as CLASSIC
from protocol.connect.row import ROW as CONNECT
from protocol.consumer.row import ROW as CONSUMER
from protocol.group_row import Group, GroupType
from protocol.records import SHARD_SCHEMAS
from protocol.share.row import ROW as SHARE
from protocol.streams.row import ROW as STREAMS

__all__ = [
    "ALL_STATES",
    "BY_NAME",
    "BY_RECORD_KEY",
    "GROUP_TOMBSTONE_SCOPE",
    "GROUP_TYPES",
    "RECORD_SCHEMAS",
    "SIMPLE_GROUPS",
    "SIMPLE_GROUP_STATE",
    "GroupType",
    "group_counts",
    "type_of",
]

GROUP_TYPES: tuple[GroupType, ...] = (CONSUMER, CLASSIC, CONNECT, SHARE, STREAMS)
BY_NAME: dict[str, GroupType] = {row.name: row for row in GROUP_TYPES}
BY_RECORD_KEY: dict[type, GroupType] = {k: row for row in GROUP_TYPES for k in row.record_keys}
ALL_STATES: tuple[str, ...] = tuple(dict.fromkeys(s for row in GROUP_TYPES for s in row.states))
# key class -> value class of every record a shard writes: the codec's registry.
RECORD_SCHEMAS: dict[type, type] = {
    **SHARD_SCHEMAS,
    **{k: v for row in GROUP_TYPES for k, v in row.record_schemas.items()},
}
# A group's own record type -> the record types its tombstone takes with it (compaction), for
# each type whose state spans several records (a classic group is one record).
GROUP_TOMBSTONE_SCOPE: dict[int, frozenset[int]] = {
    row.group_key.TYPE: frozenset(k.TYPE for k in row.record_keys)
    for row in GROUP_TYPES
    if len(row.record_keys) > 1
}


# A group known only by its committed offsets (Kafka's "simple" group: a consumer committing
# without group management) has no group object; the tools show it as Kafka does, an empty
# group of this row.
SIMPLE_GROUPS: GroupType = CLASSIC
# ... and in this state (ListGroups and DescribeGroups show it EMPTY, as Kafka does).
SIMPLE_GROUP_STATE: str = CLASSIC_EMPTY


def type_of(group: Group) -> GroupType:
    """The row of a hosted group (every group class names its row by ``group_type``)."""
    return BY_NAME[group.group_type]


def group_counts(groups: Iterable[Group]) -> dict[str, int]:
    """How many of ``groups`` each row has, by metrics label (every label, zeros too)."""
    counts = dict.fromkeys((row.metrics_label for row in GROUP_TYPES), 0)
    for group in groups:
        counts[BY_NAME[group.group_type].metrics_label] += 1
    return counts
