"""Bumping a share group's epoch, once per turn, and computing its target with the simple
share assignor (``modern.epochs``; ``assignors.share``).

A share group's target is a pure function of its members' subscriptions and the topics'
partition counts, so a metadata change is noticed by recomputing it (``changed_target``):
no record of the partition counts is needed, and a reloaded shard decides the same.
"""

from __future__ import annotations

from assignors.share import assign_simple
from protocol.modern.epochs import EpochTurn
from protocol.modern.target import Targets
from protocol.records import ShareGroupMetadataValue, ShareGroupTargetAssignmentMemberValue
from protocol.share.group import GROUP_TYPE, ShareGroup


class ShareEpochs(EpochTurn):
    """The share groups an event changed, and what settling them writes."""

    group_type = GROUP_TYPE
    first_epoch = 1  # Kafka 4.3's KAFKA-20268: a new share group's first member gets epoch 2

    def group_value(self, group: ShareGroup, epoch: int) -> ShareGroupMetadataValue:
        return ShareGroupMetadataValue(epoch)

    def client_side(self, group: ShareGroup) -> bool:
        return False

    def compute_targets(self, group: ShareGroup) -> Targets:
        image = self.ctx.image
        subscriptions: dict[str, frozenset[str]] = {}
        counts: dict[str, int] = {}
        for mid, member in group.members.items():
            ids = []
            for name in member.subscribed_topic_names:
                topic = image.topic_by_name(name)
                if topic is not None:
                    ids.append(topic.topic_id)
                    counts[topic.topic_id] = topic.num_partitions
            subscriptions[mid] = frozenset(ids)
        assigned = assign_simple(subscriptions, counts)
        target = ShareGroupTargetAssignmentMemberValue
        return {mid: target(parts) for mid, parts in assigned.items()}

    def changed_target(self, group: ShareGroup) -> bool:
        """Whether the metadata image now gives ``group`` another target than it has."""
        targets = self.compute_targets(group)
        return any(group.target.get(mid) != value for mid, value in targets.items())
