"""The share groups of a shard as export rows: their group, member, target and current
assignment rows in the shared tables (a share member's current assignment is its target at
its epoch; members may share a partition, so two members may show the same partition)."""

from __future__ import annotations

from typing import Any

from protocol.share.group import ShareGroup
from protocol.share.member import ShareMemberState

_STATES = {int(s): s.label for s in ShareMemberState}


def share_groups(groups: list[ShareGroup], shard: Any, cols: dict[str, Any]) -> None:
    """Write ``groups``' rows into ``cols`` (``state_tables``' column builders by table)."""
    for group in groups:
        gid = group.group_id
        cols["groups"].add(
            group_id=gid, group_type=group.group_type, protocol_type=group.protocol_type,
            state=group.state, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor=shard.config.default_share_assignor, member_count=len(group.members),
        )

        def name_of(topic_id: str) -> str:
            topic = shard.image.topic(topic_id)
            return topic.name if topic is not None else ""

        for mid, mem in sorted(group.members.items()):
            cols["members"].add(
                group_id=gid, member_id=mid, instance_id=None, rack_id=mem.rack_id,
                client_id=mem.client_id or "", client_host=mem.client_host or "",
                member_epoch=mem.member_epoch,
                state=_STATES.get(mem.current.state, ShareMemberState.UNKNOWN.label),
                subscribed_topics=list(mem.subscribed_topic_names),
                subscribed_topic_regex=None, protocol="share",
            )
            for tid, ps in sorted(mem.current.assigned_partitions.items()):
                cols["current_assignment"].extend_partitions(
                    ps, group_id=gid, member_id=mid, topic_id=tid, topic_name=name_of(tid),
                    pending_revocation=False)
        for mid, target in sorted(group.target.items()):
            for tid, ps in sorted(target.partitions.items()):
                cols["target_assignment"].extend_partitions(
                    ps, group_id=gid, member_id=mid, topic_id=tid, topic_name=name_of(tid))
