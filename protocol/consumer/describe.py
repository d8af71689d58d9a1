"""ConsumerGroupDescribe: a group as Kafka's describe shows it, plus the reconciler's view."""

from __future__ import annotations

from protocol import messages as m
from protocol import partitions as pm
from protocol.config import CoordinatorConfig
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import ConsumerGroupMember
from protocol.context import ShardContext
from protocol.metadata import MetadataImage
from protocol.modern.describe import describe_each


def describe_groups(
    ctx: ShardContext, req: m.ConsumerGroupDescribeRequest
) -> m.ConsumerGroupDescribeResponse:
    """ConsumerGroupDescribe: every named group, or an entry saying why it is not one."""
    def describe(group: ConsumerGroup) -> m.DescribedGroup:
        return describe_group(group, ctx.image, ctx.config)

    out = describe_each(ctx, req, ConsumerGroup.group_type, describe, m.DescribedGroup)
    return m.ConsumerGroupDescribeResponse(groups=out)


def describe_group(
    group: ConsumerGroup, image: MetadataImage, config: CoordinatorConfig
) -> m.DescribedGroup:
    return m.DescribedGroup(
        group_id=group.group_id,
        group_state=group.state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.assignor(config).name,
        members=[_member(group, group.members[mid], image) for mid in sorted(group.members)],
    )


def _member(
    group: ConsumerGroup, member: ConsumerGroupMember, image: MetadataImage
) -> m.DescribedMember:
    def described(parts: pm.PartitionMap) -> list[m.DescribedTopicPartitions]:
        return [
            m.DescribedTopicPartitions(tid, topic_name(image, group, tid), list(ps))
            for tid, ps in sorted(parts.items())
        ]

    return m.DescribedMember(
        member_id=member.member_id,
        instance_id=member.instance_id,
        rack_id=member.rack_id,
        member_epoch=member.member_epoch,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=list(member.subscribed_topic_names),
        subscribed_topic_regex=member.subscribed_topic_regex,
        # What the member holds now, partitions it is still revoking included (Kafka's
        # describe shows both; the target shows where it is going).
        assignment=m.DescribedAssignment(described(
            pm.union(member.assigned_partitions, member.partitions_pending_revocation))),
        target_assignment=m.DescribedAssignment(described(group.target_of(member.member_id))),
        member_state=member.state.label,
        pending_topic_partitions=described(group.pending_of(member)),
        classic=member.is_classic,
    )


def topic_name(image: MetadataImage, group: ConsumerGroup, topic_id: str) -> str:
    """The topic's name now, or as the group last recorded it (a deleted topic keeps its name)."""
    t = image.topic(topic_id)
    if t is not None:
        return t.name
    entry = group.subscription_metadata.get(topic_id)
    return entry.topic_name if entry is not None else ""

