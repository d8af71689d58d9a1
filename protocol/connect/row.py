"""The Connect group type (seed 004) as one row of the group-type table: what the shard, the
offsets rules, the runtime and the tools ask of a Connect worker group, answered here.

Its export rows among them: the group and worker rows of the shared ``groups`` and ``members``
tables, and the ``connect_assignment`` table of its own. A Connect group's units are
connectors and tasks, not partitions, so they get one table with a row per (worker, connector
or task) the worker runs, is stopping, or is meant to run: ``task`` is -1 for the connector
instance itself (Kafka Connect's convention), and three flags say which of the three the row
is (a unit a worker runs and keeps has ``assigned`` and ``targeted``). Double ownership would
show as two ``assigned or pending_revocation`` rows for one unit; a worker waiting for work
another still runs as ``targeted`` alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from protocol import messages as m
from protocol.admin_view import AdminDescribe, GroupView, MemberView
from protocol.connect import group as connect_group
from protocol.connect import records
from protocol.connect.group import ConnectGroup
from protocol.connect.member import WorkerState
from protocol.connect.rules import ConnectGroupRules
from protocol.connect.sessions import ConnectTimer
from protocol.connect.workers_view import workers_detail
from protocol.errors import CoordinatorError, Errors
from protocol.group_row import GroupType
from protocol.migration.connect_classic_members import ClassicWorkersOfConnectGroup
from protocol.migration.connect_conversion import ConnectMigration


def _refuse_commit(group: ConnectGroup, req: m.OffsetCommitRequest) -> None:
    """A Connect group keeps no offsets: source offsets live in Connect's own topic and sink
    connectors commit under their own consumer groups (connect-<name>)."""
    raise CoordinatorError(
        Errors.GROUP_ID_NOT_FOUND, f"Group {group.group_id} is a connect group: it has no offsets."
    )


ASSIGNMENT_TABLE = "connect_assignment"
ASSIGNMENT_COLUMNS = (
    ("group_id", "string", False),
    ("member_id", "string", False),
    ("connector", "string", False),
    ("task", "int32", False),  # -1: the connector instance
    ("assigned", "bool", False),  # the worker may run it now
    ("pending_revocation", "bool", False),  # the worker must stop it
    ("targeted", "bool", False),  # in the worker's target assignment
)
_STATES = {int(s): s.label for s in WorkerState}


def _export(groups: list[ConnectGroup], shard: Any, tables: Mapping[str, Any]) -> None:
    for group in groups:
        tables["groups"].add(
            group_id=group.group_id, group_type=group.group_type,
            protocol_type=group.protocol_type, state=group.state,
            group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
            assignor=group.assignor(shard.config.default_connect_assignor).name,
            member_count=len(group.members),
        )
        for mid, mem in sorted(group.members.items()):
            # No rack, no subscription: Connect has none; protocol ``classic`` for a classic
            # worker mid-migration, as consumers show it.
            tables["members"].add(
                group_id=group.group_id, member_id=mid, instance_id=mem.instance_id,
                rack_id=None, client_id=mem.client_id or "", client_host=mem.client_host or "",
                member_epoch=mem.member_epoch,
                state=_STATES.get(mem.current.state, WorkerState.UNKNOWN.label),
                subscribed_topics=[], subscribed_topic_regex=None,
                protocol="connect" if mem.metadata.classic_member_metadata is None else "classic",
            )
        _export_assignment(group, tables[ASSIGNMENT_TABLE])


def _export_assignment(group: ConnectGroup, table: Any) -> None:
    """Every worker's connectors and tasks, assigned, pending revocation or targeted."""
    for mid in sorted(set(group.members) | set(group.target)):
        mem = group.members.get(mid)
        assigned = mem.assigned if mem is not None else frozenset()
        pending = mem.pending_revocation if mem is not None else frozenset()
        targeted = group.target_of(mid)
        for connector, task in sorted(assigned | pending | targeted):
            unit = (connector, task)
            table.add(group_id=group.group_id, member_id=mid, connector=connector, task=task,
                      assigned=unit in assigned, pending_revocation=unit in pending,
                      targeted=unit in targeted)


def _units(work: m.ConnectorsAndTasks) -> list[tuple[str, int]]:
    """A worker's connectors (task -1, Connect's sentinel for the connector itself) and tasks."""
    return sorted([(c, -1) for c in work.connectors] + [(t.connector, t.task) for t in work.tasks])


def _admin_view(d: m.ConnectDescribedGroup) -> GroupView:
    """A ConnectGroupDescribe entry as ``cohort groups --describe --state`` shows it (the
    offsets and members views show its workers: ``workers_view``)."""
    return GroupView(
        d.group_state, d.assignor_name, d.group_epoch, d.assignment_epoch,
        [MemberView(w.member_id, w.instance_id, w.client_host, w.client_id, w.member_epoch,
                    _units(w.assignment), _units(w.target_assignment)) for w in d.members],
    )


ROW = GroupType(
    name="connect",
    metrics_label="connect",
    group_class=ConnectGroup,
    states=tuple(connect_group.STATES),
    record_schemas=records.SCHEMAS,
    timer_key=ConnectTimer,
    rules=ConnectGroupRules,
    helpers=(
        ("connect_classic_members", ClassicWorkersOfConnectGroup),
        ("connect_migration", ConnectMigration),
    ),
    replayer=lambda shard: shard.connect.replay,
    validate_offset_commit=_refuse_commit,
    is_empty=lambda g: not g.members,
    tombstones=connect_group.group_tombstones,
    subscribed_topics=lambda g, image, strict: set(),  # workers subscribe to no topics
    describe_classic=lambda shard, g, history: shard.connect.describe_classic(g, history),
    list_protocol_type=lambda g: g.protocol_type or "",
    classic_host=lambda shard: shard.connect_classic_members,
    admin=AdminDescribe(lambda gid: m.ConnectGroupDescribeRequest(group_ids=[gid]), _admin_view,
                        {"offsets": workers_detail, "members": workers_detail}),
    keeps_offsets=False,  # source offsets live in Connect's own topic
    export=_export,
    export_tables={ASSIGNMENT_TABLE: ASSIGNMENT_COLUMNS},
)
