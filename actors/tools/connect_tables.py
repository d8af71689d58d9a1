"""The Connect groups of a shard as export rows: their group and worker rows for the shared
``groups`` and ``members`` tables, and the ``connect_assignment`` table of their own.

A Connect group's units are connectors and tasks, not partitions, so they get one table with
a row per (worker, connector or task) the worker runs, is stopping, or is meant to run:
``task`` is -1 for the connector instance itself (Kafka Connect's convention), and three
flags say which of the three the row is (a unit a worker runs and keeps has ``assigned`` and
``targeted``). Double ownership would show as two ``assigned or pending_revocation`` rows for
one unit; a worker waiting for work another still runs as ``targeted`` alone.
"""

from __future__ import annotations

import pyarrow as pa

from protocol.connect.group import ConnectGroup
from protocol.connect.member import WorkerState

CONNECT_ASSIGNMENT_SCHEMA = pa.schema([
    pa.field("group_id", pa.string(), nullable=False),
    pa.field("member_id", pa.string(), nullable=False),
    pa.field("connector", pa.string(), nullable=False),
    pa.field("task", pa.int32(), nullable=False),  # -1: the connector instance
    pa.field("assigned", pa.bool_(), nullable=False),  # the worker may run it now
    pa.field("pending_revocation", pa.bool_(), nullable=False),  # the worker must stop it
    pa.field("targeted", pa.bool_(), nullable=False),  # in the worker's target assignment
])

_STATES = {int(s): s.label for s in WorkerState}


def group_row(group: ConnectGroup, default_assignor: str) -> dict:
    """The group's row of the ``groups`` table."""
    return dict(
        group_id=group.group_id, group_type=group.group_type, protocol_type=group.protocol_type,
        state=group.state, group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor=group.assignor(default_assignor).name, member_count=len(group.members),
    )


def member_rows(group: ConnectGroup) -> list[dict]:
    """The workers' rows of the ``members`` table (no rack, no subscription: Connect has none;
    protocol ``classic`` for a classic worker mid-migration, as consumers show it)."""
    return [
        dict(
            group_id=group.group_id, member_id=mid, instance_id=mem.instance_id, rack_id=None,
            client_id=mem.client_id or "", client_host=mem.client_host or "",
            member_epoch=mem.member_epoch,
            state=_STATES.get(mem.current.state, WorkerState.UNKNOWN.label),
            subscribed_topics=[], subscribed_topic_regex=None,
            protocol="connect" if mem.metadata.classic_member_metadata is None else "classic",
        )
        for mid, mem in sorted(group.members.items())
    ]


def assignment_table(groups: list[ConnectGroup]) -> pa.Table:
    """Every worker's connectors and tasks, assigned, pending revocation or targeted."""
    cols: dict[str, list] = {name: [] for name in CONNECT_ASSIGNMENT_SCHEMA.names}
    for group in groups:
        for mid in sorted(set(group.members) | set(group.target)):
            mem = group.members.get(mid)
            assigned = mem.assigned if mem is not None else frozenset()
            pending = mem.pending_revocation if mem is not None else frozenset()
            targeted = group.target_of(mid)
            for connector, task in sorted(assigned | pending | targeted):
                unit = (connector, task)
                cols["group_id"].append(group.group_id)
                cols["member_id"].append(mid)
                cols["connector"].append(connector)
                cols["task"].append(task)
                cols["assigned"].append(unit in assigned)
                cols["pending_revocation"].append(unit in pending)
                cols["targeted"].append(unit in targeted)
    return pa.Table.from_arrays(
        [pa.array(cols[f.name], type=f.type) for f in CONNECT_ASSIGNMENT_SCHEMA],
        schema=CONNECT_ASSIGNMENT_SCHEMA,
    )
