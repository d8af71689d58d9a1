"""Step 2 of a heartbeat turn: bump the epoch of every group that changed, once, and
recompute its target assignment, once (seed 000: "Group Epoch - Trigger a rebalance").

Changes are *marked* while a turn's requests are admitted and settled at the turn's end, so
a thousand joins in one turn cost one epoch bump and one assignor run, not a thousand.
"""

from __future__ import annotations

import logging

from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import ConsumerGroupMember
from protocol.consumer.target_assignment import compute_target, target_records
from protocol.context import ShardContext
from protocol.records import (
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    Record,
)

log = logging.getLogger(__name__)


class EpochTurn:
    """The groups a turn changed, and what settling them writes."""

    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx
        self._bump: set[str] = set()  # groups whose epoch this turn must bump
        self._causes: dict[str, tuple[str, ConsumerGroupMember | None]] = {}
        self._touched: set[str] = set()  # groups whose target may need computing

    def mark(
        self,
        group_id: str,
        bump: bool,
        reason: str = "",
        member: ConsumerGroupMember | None = None,
    ) -> None:
        self._touched.add(group_id)
        if bump:
            self._bump.add(group_id)
            # The first cause of the turn's bump is what the rebalance history keeps.
            self._causes.setdefault(group_id, (reason, member))

    def finish(self) -> None:
        bump, touched, causes = self._bump, self._touched, self._causes
        self._bump, self._touched, self._causes = set(), set(), {}
        for group_id in sorted(bump):
            group = self.ctx.consumer_group(group_id)
            if group is not None:
                reason, member = causes.get(group_id, ("", None))
                self.ctx.history.remember(
                    group_id,
                    group.group_epoch,
                    reason or "group changed",
                    self.ctx.now_ms,
                    member.member_id if member is not None else None,
                    member.instance_id if member is not None else None,
                )
                self._bump_epoch(group)
        for group_id in sorted(touched):
            group = self.ctx.consumer_group(group_id)
            if (
                group is not None
                and group.group_epoch > group.assignment_epoch
                and not group.assignor(self.ctx.config).client_side
            ):
                self._compute_target(group)

    def _bump_epoch(self, group: ConsumerGroup) -> None:
        epoch = group.group_epoch + 1
        entries = group.subscription_entries(self.ctx.image)
        if entries != group.subscription_metadata:
            value = ConsumerGroupPartitionMetadataValue(epoch, tuple(entries.values()))
            self.ctx.emit(Record(ConsumerGroupPartitionMetadataKey(group.group_id), value))
        self.ctx.emit(
            Record(ConsumerGroupMetadataKey(group.group_id), ConsumerGroupMetadataValue(epoch))
        )

    def _compute_target(self, group: ConsumerGroup) -> None:
        name = group.assignor(self.ctx.config).name
        try:
            targets = compute_target(group, self.ctx.image, name)
        except Exception:
            # Kafka fails the heartbeat; here the turn is shared, so the group keeps its old
            # target and stays "assigning" until a later turn computes one.
            log.exception("assignor %s failed for group %s", name, group.group_id)
            return
        for record in target_records(group, targets, group.group_epoch):
            self.ctx.emit(record)
