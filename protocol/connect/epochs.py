"""Bumping a Connect group's epoch, once per event, and computing its target when the
coordinator's own assignor is in charge (seed 004's list of triggers).

Changes are *marked* while an event is handled (a worker joined, its assignor asked for a
rebalance, connectors changed...) and *settled* before the event's replies are built: each
marked group's epoch goes up by one, whatever the number of causes, and the first cause is
what the rebalance history keeps. The bump records the group's connectors as the metadata
image has them, so a later image that differs is noticed (``ConnectGroupRules.on_metadata``).
"""

from __future__ import annotations

import logging

from protocol.connect.group import ConnectGroup
from protocol.connect.member import ConnectWorkerMember
from protocol.connect.target import compute_server_targets, target_records
from protocol.context import ShardContext
from protocol.records import (
    ConnectGroupMetadataKey,
    ConnectGroupMetadataValue,
    ConnectorEntry,
    Record,
)

log = logging.getLogger(__name__)


class ConnectEpochs:
    """The Connect groups an event changed, and what settling them writes."""

    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx
        self._causes: dict[str, tuple[str, ConnectWorkerMember | None]] = {}
        self._touched: set[str] = set()

    def mark(
        self, group_id: str, reason: str | None, member: ConnectWorkerMember | None = None
    ) -> None:
        """Note a change; ``reason`` None: no bump, but retry a target not computed yet."""
        self._touched.add(group_id)
        if reason is not None:
            self._causes.setdefault(group_id, (reason, member))

    def settle(self) -> None:
        causes, touched = self._causes, self._touched
        self._causes, self._touched = {}, set()
        for group_id in sorted(causes):
            group = self._group(group_id)
            if group is None:
                continue
            reason, member = causes[group_id]
            self.ctx.history.remember(
                group_id,
                group.group_epoch,
                reason,
                self.ctx.now_ms,
                member.member_id if member is not None else None,
                member.instance_id if member is not None else None,
            )
            self._bump(group)
        for group_id in sorted(touched | set(causes)):
            group = self._group(group_id)
            if group is not None and group.group_epoch > group.assignment_epoch:
                choice = group.assignor(self.ctx.config.default_connect_assignor)
                if not choice.client_side:
                    self.compute(group)

    def compute(self, group: ConnectGroup) -> None:
        """Run the coordinator's connect assignor and install its target at the group epoch."""
        delay_ms = self.ctx.group_config(group.group_id).effective_scheduled_rebalance_max_delay_ms(
            self.ctx.config
        )
        try:
            targets = compute_server_targets(group, self.ctx.now_ms, delay_ms)
        except Exception:
            # The group keeps its old target and stays "assigning"; the next heartbeat retries.
            log.exception("connect assignor failed for group %s", group.group_id)
            return
        for record in target_records(group, targets, group.group_epoch):
            self.ctx.emit(record)

    def _group(self, group_id: str) -> ConnectGroup | None:
        group = self.ctx.groups.get(group_id)
        return group if isinstance(group, ConnectGroup) else None

    def _bump(self, group: ConnectGroup) -> None:
        connectors = self.ctx.image.connectors_of(group.group_id)
        value = ConnectGroupMetadataValue(
            group.group_epoch + 1,
            tuple(ConnectorEntry(name, n) for name, n in sorted(connectors.items())),
        )
        self.ctx.emit(Record(ConnectGroupMetadataKey(group.group_id), value))
