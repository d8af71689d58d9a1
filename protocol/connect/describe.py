"""ConnectGroupDescribe, and a Connect group in DescribeGroups' classic shape.

ConnectGroupDescribe has the shape of Kafka's ConsumerGroupDescribe with connectors and tasks
for partitions: group state, group and assignment epochs, the assignor, each worker's epoch,
what it runs and what it is meant to run, plus Cohort's view of the reconciler (worker state,
work still held by another worker) and the group's configured connectors.
"""

from __future__ import annotations

from functools import partial

from protocol import messages as m
from protocol.connect import units as u
from protocol.connect.group import ConnectGroup
from protocol.context import ShardContext
from protocol.modern.describe import describe_each


def describe_groups(
    ctx: ShardContext, req: m.ConnectGroupDescribeRequest
) -> m.ConnectGroupDescribeResponse:
    """Every named group, or an entry saying why it is not a Connect group."""
    groups = describe_each(
        ctx, req, ConnectGroup.group_type, partial(describe_group, ctx), m.ConnectDescribedGroup
    )
    return m.ConnectGroupDescribeResponse(groups=groups)


def describe_group(ctx: ShardContext, group: ConnectGroup) -> m.ConnectDescribedGroup:
    members = []
    for mid in sorted(group.members):
        mem = group.members[mid]
        members.append(
            m.ConnectDescribedMember(
                member_id=mid,
                instance_id=mem.instance_id,
                member_epoch=mem.member_epoch,
                assignment=u.to_wire(mem.assigned),
                target_assignment=u.to_wire(group.target_of(mid)),
                client_id=mem.client_id,
                client_host=mem.client_host,
                member_state=mem.state.label,
                pending_connectors_and_tasks=u.to_wire(group.pending_of(mem)),
            )
        )
    connectors = ctx.image.connectors_of(group.group_id)
    return m.ConnectDescribedGroup(
        group_id=group.group_id,
        group_state=group.state,
        group_epoch=group.group_epoch,
        assignment_epoch=group.assignment_epoch,
        assignor_name=group.assignor(ctx.config.default_connect_assignor).name,
        members=members,
        connectors=[m.ConnectorTasks(c, n) for c, n in sorted(connectors.items())],
    )


def describe_as_classic(
    group: ConnectGroup, assignor_name: str, history: list
) -> m.DescribeGroupsResponseGroup:
    """A Connect group in DescribeGroups' shape, as Kafka answers old tools for a group of
    the new protocol: protocol type ``connect``, its assignor, its workers (no classic
    metadata or assignment bytes: they have none)."""
    return m.DescribeGroupsResponseGroup(
        group_id=group.group_id,
        group_state=group.state,
        protocol_type=group.protocol_type,
        protocol_data=assignor_name,
        members=[
            m.DescribedGroupMember(
                member_id=mem.member_id,
                group_instance_id=mem.instance_id,
                client_id=mem.client_id,
                client_host=mem.client_host,
            )
            for _, mem in sorted(group.members.items())
        ],
        generation_id=group.group_epoch,
        rebalance_history=history,
    )
