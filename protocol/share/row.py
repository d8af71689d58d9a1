"""The share group type (KIP-932) as one row of the group-type table, and what a share group
answers to the requests of other group types, as Kafka 4.2 does.

A group id belongs to the type of its first member. To a share group: OffsetCommit,
OffsetFetch and OffsetDelete are GROUP_ID_NOT_FOUND (``ShareGroup.validateOffset*``: "not a
consumer group"; a share group's progress is its share-partitions' start offsets); a classic
JoinGroup is INCONSISTENT_GROUP_PROTOCOL, SyncGroup / Heartbeat / LeaveGroup are
UNKNOWN_MEMBER_ID (Kafka's ``testClassicGroup*OnShareGroup``); a consumer or Connect heartbeat
is GROUP_ID_NOT_FOUND (their rules refuse any other type's id).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from protocol.errors import CoordinatorError, Errors
from protocol.group_row import GroupType
from protocol.share import group as share_group
from protocol.share import records
from protocol.share.describe import describe_as_classic
from protocol.share.group import ShareGroup
from protocol.share.member import ShareMemberState
from protocol.share.rules import ShareGroupRules
from protocol.share.timers import ShareTimer


def refuse_offsets(group: Any, _req: Any = None) -> NoReturn:
    raise CoordinatorError(
        Errors.GROUP_ID_NOT_FOUND, f"Group {group.group_id} is not a consumer group."
    )


class ClassicRequestsRefused:
    """The classic host of a share group: every classic request refused, changing nothing."""

    def join(self, group: Any, req: Any) -> NoReturn:
        raise CoordinatorError(
            Errors.INCONSISTENT_GROUP_PROTOCOL,
            f"Group {group.group_id} is a share group: it takes no classic members.",
        )

    def _unknown(self, group: Any, req: Any) -> NoReturn:
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID,
            f"Member {getattr(req, 'member_id', '')} is not a classic member of share group "
            f"{group.group_id}.",
        )

    sync = heartbeat = leave = _unknown


_CLASSIC_HOST = ClassicRequestsRefused()


def _never(_group: Any) -> bool:
    return False


_STATES = {int(s): s.label for s in ShareMemberState}


def _export(groups: list[ShareGroup], shard: Any, tables: Mapping[str, Any]) -> None:
    """The groups', members', target and current assignment rows in the shared tables (a share
    member's current assignment is its target at its epoch; members may share a partition, so
    two members may show the same partition)."""
    def name_of(topic_id: str) -> str:
        topic = shard.image.topic(topic_id)
        return topic.name if topic is not None else ""

    for group in groups:
        gid = group.group_id
        tables["groups"].add(
            group_id=gid, group_type=group.group_type, protocol_type=group.protocol_type,
            state=group.state, group_epoch=group.group_epoch,
            assignment_epoch=group.assignment_epoch,
            assignor=shard.config.default_share_assignor, member_count=len(group.members),
        )
        for mid, mem in sorted(group.members.items()):
            tables["members"].add(
                group_id=gid, member_id=mid, instance_id=None, rack_id=mem.rack_id,
                client_id=mem.client_id or "", client_host=mem.client_host or "",
                member_epoch=mem.member_epoch,
                state=_STATES.get(mem.current.state, ShareMemberState.UNKNOWN.label),
                subscribed_topics=list(mem.subscribed_topic_names),
                subscribed_topic_regex=None, protocol="share",
            )
            for tid, ps in sorted(mem.current.assigned_partitions.items()):
                tables["current_assignment"].extend_partitions(
                    ps, group_id=gid, member_id=mid, topic_id=tid, topic_name=name_of(tid),
                    pending_revocation=False)
        for mid, target in sorted(group.target.items()):
            for tid, ps in sorted(target.partitions.items()):
                tables["target_assignment"].extend_partitions(
                    ps, group_id=gid, member_id=mid, topic_id=tid, topic_name=name_of(tid))


ROW = GroupType(
    name="share",
    metrics_label="share",
    group_class=ShareGroup,
    states=share_group.STATES,
    record_schemas=records.SCHEMAS,
    timer_key=ShareTimer,
    rules=ShareGroupRules,
    replayer=lambda shard: shard.share.replay,
    validate_offset_commit=refuse_offsets,
    check_offset_fetch=refuse_offsets,
    offsets_deletable=refuse_offsets,  # OffsetDelete: GROUP_ID_NOT_FOUND, as Kafka
    may_expire_offsets=_never,  # share groups have no offset expiry
    is_empty=lambda g: not g.members,
    tombstones=share_group.group_tombstones,
    subscribed_topics=lambda g, image, strict: g.subscribed_topic_names(),
    describe_classic=lambda shard, g, history: describe_as_classic(g, history),
    list_protocol_type=lambda g: "share",
    classic_host=lambda shard: _CLASSIC_HOST,
    export=_export,
)
