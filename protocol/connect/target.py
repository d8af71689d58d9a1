"""A Connect group's target assignment: computed by the coordinator, or installed by a worker.

With the server-side assignor (``incremental-cooperative``, the default) the coordinator runs
Connect's incremental cooperative assignor itself (``assignors.connect``), feeding it each
worker's current target and the assignor metadata stored with it: the assignor's memory
between rounds (held work, storm guard) lives in those bytes, so it survives a coordinator
restart with the records. Either way the target is written as one record per worker whose
target changed, then the target epoch record, so a reader of the log sees it as a unit.

Bumping a Connect group's epoch, once per turn (``ConnectEpochs``, the kernel's
``modern.epochs``): the bump records the group's connectors as the metadata image has them, so
a later image that differs is noticed (``ConnectGroupRules.on_metadata``).
"""

from __future__ import annotations

from collections.abc import Mapping

from assignors.client.interfaces import ConnectGroup as AssignorGroup
from assignors.client.interfaces import ConnectGroupMember as AssignorMember
from assignors.connect import MAX_VERSION, IncrementalCooperativeAssignor, remaining_delay_ms
from protocol.connect import units as u
from protocol.connect.group import NO_TARGET, ConnectGroup
from protocol.connect.records import (
    ConnectGroupMetadataValue,
    ConnectGroupTargetAssignmentMemberValue,
    ConnectorEntry,
)
from protocol.modern.epochs import EpochTurn
from protocol.modern.epochs import target_records as modern_target_records
from protocol.records import Record

Targets = dict[str, ConnectGroupTargetAssignmentMemberValue]


def assignor_member(
    group: ConnectGroup, member_id: str, reason: int = 0, maximum_version: int | None = None
) -> AssignorMember:
    """A worker as the connect assignor sees it: its current target and that target's
    metadata (what the assignor wrote for it last round)."""
    target = group.target.get(member_id, NO_TARGET)
    member = group.members[member_id]
    return AssignorMember(
        member_id=member_id,
        instance_id=member.instance_id,
        reason=reason,
        version=target.metadata_version,
        metadata=target.metadata_bytes,
        maximum_version=maximum_version,
        owned_connectors=frozenset(target.connectors),
        owned_tasks=frozenset((c, t) for c, ts in target.tasks.items() for t in ts),
    )


def compute_server_targets(group: ConnectGroup, now_ms: int, max_delay_ms: int) -> Targets:
    """One round of the coordinator's connect assignor over ``group`` at ``now_ms``."""
    assignor = IncrementalCooperativeAssignor(max_delay_ms)
    members = tuple(
        assignor_member(group, mid, maximum_version=MAX_VERSION) for mid in sorted(group.members)
    )
    round_ = assignor.plan(
        AssignorGroup(members=members, connectors=group.connectors, now_ms=now_ms)
    )
    targets: Targets = {mid: NO_TARGET for mid in sorted(group.members)}
    for a in round_.members:
        connectors, tasks = u.split(u.of(a.connectors, {}) | frozenset(a.tasks))
        targets[a.member_id] = ConnectGroupTargetAssignmentMemberValue(
            connectors=connectors,
            tasks=tasks,
            error=a.error,
            metadata_version=a.version,
            metadata_bytes=a.metadata,
        )
    return targets


def target_records(group: ConnectGroup, targets: Targets, epoch: int) -> list[Record]:
    """``modern.epochs.target_records``, workers in sorted order."""
    return modern_target_records(group, dict(sorted(targets.items())), epoch)


def next_scheduled_rebalance_ms(
    targets: Mapping[str, ConnectGroupTargetAssignmentMemberValue], now_ms: int
) -> int | None:
    """When the connect assignor asked to run again (held work expiring, a storm backoff
    ending), read from the metadata it wrote with the targets; ``None``: never."""
    delays = [
        d
        for t in targets.values()
        if (d := remaining_delay_ms(t.metadata_bytes, t.metadata_version, now_ms)) is not None
    ]
    return now_ms + min(delays) if delays else None


# ---------------------------------------------------------------- the epoch turn


class ConnectEpochs(EpochTurn):
    """The Connect groups an event changed, and what settling them writes."""

    group_type = "connect"

    def group_value(self, group: ConnectGroup, epoch: int) -> ConnectGroupMetadataValue:
        connectors = self.ctx.image.connectors_of(group.group_id)
        entries = tuple(ConnectorEntry(name, n) for name, n in sorted(connectors.items()))
        return ConnectGroupMetadataValue(epoch, entries)

    def client_side(self, group: ConnectGroup) -> bool:
        return group.assignor(self.ctx.config.default_connect_assignor).client_side

    def compute_targets(self, group: ConnectGroup) -> Targets:
        config = self.ctx.group_config(group.group_id)
        delay_ms = config.effective_scheduled_rebalance_max_delay_ms(self.ctx.config)
        return compute_server_targets(group, self.ctx.now_ms, delay_ms)
