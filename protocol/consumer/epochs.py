"""Step 2 of a heartbeat turn for consumer groups (``modern.epochs``): a bump records the
subscribed topics' metadata when it changed, and the target is the server assignor's."""

from __future__ import annotations

from protocol.consumer.group import ConsumerGroup
from protocol.consumer.records import (
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
)
from protocol.consumer.target_assignment import Targets, compute_target
from protocol.modern.epochs import EpochTurn as ModernEpochTurn
from protocol.records import Record


class EpochTurn(ModernEpochTurn):
    """The consumer groups a turn changed, and what settling them writes."""

    group_type = "consumer"

    def records_before_bump(self, group: ConsumerGroup, epoch: int) -> list[Record]:
        """The subscribed topics' metadata, when it changed."""
        entries = group.subscription_entries(self.ctx.image)
        if entries == group.subscription_metadata:
            return []
        value = ConsumerGroupPartitionMetadataValue(epoch, tuple(entries.values()))
        return [Record(ConsumerGroupPartitionMetadataKey(group.group_id), value)]

    def group_value(self, group: ConsumerGroup, epoch: int) -> ConsumerGroupMetadataValue:
        return ConsumerGroupMetadataValue(epoch)

    def client_side(self, group: ConsumerGroup) -> bool:
        return group.assignor(self.ctx.config).client_side

    def compute_targets(self, group: ConsumerGroup) -> Targets:
        return compute_target(group, self.ctx.image, group.assignor(self.ctx.config).name)
