"""The classic group type (JoinGroup/SyncGroup, seed 003) as one row of the group-type table,
and a classic group's answers to the lifecycle questions every group type answers.

May an offset commit land, is the group empty, which records delete it, which topics its
offsets may not expire for, how DescribeGroups shows it: the offsets rules, DeleteGroups and
DescribeGroups ask the row instead of asking "is this group classic?".

A classic group's subscriptions live in its members' protocol bytes, readable only for the
"consumer" embedded protocol (``consumer_protocol``); the rules below say what happens when
they cannot be read.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic import records
from protocol.classic.consumer_protocol import PROTOCOL_TYPE
from protocol.classic.group import ClassicGroup
from protocol.classic.records import GroupMetadataKey
from protocol.classic.rules import ClassicGroupRules
from protocol.classic.states import ClassicGroupState
from protocol.classic.subscriptions import subscribed_topic_names
from protocol.classic.timers import ClassicTimer
from protocol.group_row import GroupType
from protocol.offsets.commit_checks import validate_classic_commit
from protocol.records import Record


def validate_offset_commit(group: ClassicGroup, req: m.OffsetCommitRequest) -> None:
    """Kafka's ``ClassicGroup.validateOffsetCommit``: refuse, or let every partition land."""
    validate_classic_commit(group.state, group, req)


def is_empty(group: ClassicGroup) -> bool:
    """DeleteGroups deletes only an EMPTY classic group (Kafka's ``validateDeleteGroup``)."""
    return group.state == cg.EMPTY


def is_dead(group: ClassicGroup) -> bool:
    """A DEAD group is as good as gone: no offsets fetched, no group to delete."""
    return group.state == cg.DEAD


def tombstones(group: ClassicGroup) -> list[Record]:
    """Its one record, deleted (offsets and rebalance history are deleted apart)."""
    return [Record(GroupMetadataKey(group.group_id), None)]


def offsets_deletable(group: ClassicGroup) -> bool:
    """OffsetDelete acts on an EMPTY group, or on one whose subscriptions can be read."""
    return group.state == cg.EMPTY or group.protocol_type == PROTOCOL_TYPE


def subscribed_topics(group: ClassicGroup, strict: bool) -> set[str] | None:
    """Offsets of these topics never expire, nor may OffsetDelete delete them."""
    return subscribed_topic_names(group, strict)


def may_expire_offsets(group: ClassicGroup) -> bool:
    """Kafka's ``offsetExpirationCondition`` is present: an EMPTY group, or a STABLE
    "consumer" group whose subscriptions all decode."""
    if group.state == cg.EMPTY:
        return True
    return (
        group.state == cg.STABLE
        and group.protocol_type == PROTOCOL_TYPE
        and subscribed_topics(group, strict=True) is not None
    )


def offsets_empty_since_ms(group: ClassicGroup) -> int | None:
    """An EMPTY group's offsets age from when it became empty (if later than the commit)."""
    return group.state_timestamp_ms if group.state == cg.EMPTY else None


def describe_classic_group(
    group: ClassicGroup, history: list[m.RebalanceCause]
) -> m.DescribeGroupsResponseGroup:
    """The DescribeGroups entry of ``group``, with why it rebalanced (``history``)."""
    return m.DescribeGroupsResponseGroup(
        group_id=group.group_id,
        group_state=group.state,
        protocol_type=group.protocol_type or "",
        protocol_data=group.protocol_name or "",
        members=[
            m.DescribedGroupMember(
                member_id=mem.member_id,
                group_instance_id=mem.group_instance_id,
                client_id=mem.client_id,
                client_host=mem.client_host,
                member_metadata=mem.metadata_for(group.protocol_name),
                member_assignment=mem.assignment,
            )
            for mem in group.members.values()
        ],
        generation_id=group.generation_id,
        leader=group.leader_id or "",
        rebalance_history=history,
    )


def summarize(group: ClassicGroup) -> dict:
    """State, generation and member count (``GroupType.summarize``)."""
    return {
        "state": group.state,
        "group_type": "classic",
        "generation": group.generation_id,
        "members": len(group.members),
    }


ROW = GroupType(
    name="classic",
    metrics_label="generic",  # seed 000's tag (Kafka 4 renamed it classic)
    group_class=ClassicGroup,
    states=tuple(s.value for s in ClassicGroupState),
    record_schemas=records.SCHEMAS,
    timer_key=ClassicTimer,
    rules=ClassicGroupRules,
    replayer=lambda shard: shard.classic.replay,
    validate_offset_commit=validate_offset_commit,
    is_empty=is_empty,
    is_dead=is_dead,
    tombstones=tombstones,
    offsets_deletable=offsets_deletable,
    subscribed_topics=lambda g, image, strict: subscribed_topics(g, strict),
    may_expire_offsets=may_expire_offsets,
    offsets_empty_since_ms=offsets_empty_since_ms,
    describe_classic=lambda shard, g, history: describe_classic_group(g, history),
    list_protocol_type=lambda g: g.protocol_type or "",
    classic_host=lambda shard: None,
    summarize=summarize,
)
