"""A classic group as DescribeGroups shows it: its generation, protocol and members' bytes.

The classic row of the group-type table (``protocol/group_types.py``) answers DescribeGroups
with this shape; other group types give their own (a consumer or Connect group shows its
members the way a classic client expects to see them).
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic.group import ClassicGroup


def describe_classic_group(
    group: ClassicGroup, history: list[m.RebalanceCause]
) -> m.DescribeGroupsResponseGroup:
    """The DescribeGroups entry of ``group``, with why it rebalanced (``history``). As Kafka's,
    only a STABLE group shows its protocol and its members' metadata (in any other state they
    are a generation's work in progress); assignments are what the members hold."""
    stable = group.state == cg.STABLE
    return m.DescribeGroupsResponseGroup(
        group_id=group.group_id,
        group_state=group.state,
        protocol_type=group.protocol_type or "",
        protocol_data=(group.protocol_name or "") if stable else "",
        members=[
            m.DescribedGroupMember(
                member_id=mem.member_id,
                group_instance_id=mem.group_instance_id,
                client_id=mem.client_id,
                client_host=mem.client_host,
                member_metadata=mem.metadata_for(group.protocol_name) if stable else b"",
                member_assignment=mem.assignment,
            )
            for mem in group.members.values()
        ],
        generation_id=group.generation_id,
        leader=group.leader_id or "",
        rebalance_history=history,
    )
