"""The Connect group type (seed 004) as one row of the group-type table: what the shard, the
offsets rules, the runtime and the tools ask of a Connect worker group, answered here."""

from __future__ import annotations

from protocol import messages as m
from protocol.connect import group as connect_group
from protocol.connect import records
from protocol.connect.group import ConnectGroup
from protocol.connect.rules import ConnectGroupRules
from protocol.connect.timers import ConnectTimer
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
)
