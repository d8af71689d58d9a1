"""ShareGroupDescribe, and a share group in DescribeGroups' classic shape.

ShareGroupDescribe has Kafka's shape: group state, group and assignment epochs, the assignor
(``simple``), and each member's rack, epoch, client, subscription and assignment (with topic
names). DescribeGroups shows a share group as Kafka does: protocol type ``share``.
"""

from __future__ import annotations

from functools import partial

from protocol import messages as m
from protocol.context import ShardContext
from protocol.modern.describe import describe_each
from protocol.share.group import GROUP_TYPE, ShareGroup


def describe_groups(
    ctx: ShardContext, req: m.ShareGroupDescribeRequest
) -> m.ShareGroupDescribeResponse:
    """Every named group, or an entry saying why it is not a share group."""
    groups = describe_each(ctx, req, GROUP_TYPE, partial(describe_group, ctx),
                           m.ShareDescribedGroup)
    return m.ShareGroupDescribeResponse(groups=groups)


def _named(ctx: ShardContext, parts: dict[str, tuple[int, ...]]) -> m.DescribedAssignment:
    out = []
    for topic_id, partitions in sorted(parts.items()):
        topic = ctx.image.topic(topic_id)
        out.append(m.DescribedTopicPartitions(topic_id, topic.name if topic else "",
                                              list(partitions)))
    return m.DescribedAssignment(out)


def describe_group(ctx: ShardContext, group: ShareGroup) -> m.ShareDescribedGroup:
    members = [
        m.ShareDescribedMember(
            member_id=mid,
            rack_id=mem.rack_id,
            member_epoch=mem.member_epoch,
            client_id=mem.client_id,
            client_host=mem.client_host,
            subscribed_topic_names=list(mem.subscribed_topic_names),
            assignment=_named(ctx, mem.current.assigned_partitions),
        )
        for mid, mem in sorted(group.members.items())
    ]
    return m.ShareDescribedGroup(
        group_id=group.group_id,
        group_state=group.state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=ctx.config.default_share_assignor,
        members=members,
    )


def describe_as_classic(group: ShareGroup, history: list) -> m.DescribeGroupsResponseGroup:
    """A share group in DescribeGroups' shape: protocol type ``share``, its members."""
    return m.DescribeGroupsResponseGroup(
        group_id=group.group_id,
        group_state=group.state,
        protocol_type=group.protocol_type,
        protocol_data="simple",
        members=[
            m.DescribedGroupMember(member_id=mem.member_id, group_instance_id=None,
                                   client_id=mem.client_id, client_host=mem.client_host)
            for _, mem in sorted(group.members.items())
        ],
        generation_id=group.group_epoch,
        rebalance_history=history,
    )
