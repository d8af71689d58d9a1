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

from collections.abc import Mapping
from typing import Any

from protocol import messages as m
from protocol.admin_view import AdminDescribe, GroupView, MemberView
from protocol.classic import group as cg
from protocol.classic import records
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
)
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.classic.records import GroupMetadataKey
from protocol.classic.rules import ClassicGroupRules
from protocol.classic.states import ClassicGroupState
from protocol.classic.subscriptions import subscribed_topic_names
from protocol.classic.timers import ClassicTimer
from protocol.connect.workers_view import workers_detail
from protocol.errors import CoordinatorError, Errors
from protocol.group_row import GroupType
from protocol.metadata import MetadataImage
from protocol.records import Record


def validate_offset_commit(group: ClassicGroup | None, req: m.OffsetCommitRequest) -> None:
    """Kafka's ``ClassicGroup.validateOffsetCommit``: refuse, or let every partition land.
    ``group`` None: the simple group (offsets, no group object), an EMPTY group with no
    members. DEAD: COORDINATOR_NOT_AVAILABLE; generation < 0 and EMPTY: simple commit; a member
    id, instance id or generation >= 0: the member must exist (UNKNOWN_MEMBER_ID,
    FENCED_INSTANCE_ID) at the group's generation (ILLEGAL_GENERATION); anonymous to a
    non-empty group: UNKNOWN_MEMBER_ID; COMPLETING_REBALANCE: REBALANCE_IN_PROGRESS."""
    validate_classic_commit(cg.EMPTY if group is None else group.state, group, req)


def validate_classic_commit(
    state: str, group: ClassicGroup | None, req: m.OffsetCommitRequest
) -> None:
    """Kafka's ``ClassicGroup.validateOffsetCommit``; ``group`` None is the simple group."""
    generation = req.generation_id_or_member_epoch
    if state == cg.DEAD:
        raise CoordinatorError(Errors.COORDINATOR_NOT_AVAILABLE, f"Group {req.group_id} is dead.")
    if generation < 0 and state == cg.EMPTY:
        return
    members = group.members if group is not None else {}
    if generation >= 0 or req.member_id or req.group_instance_id is not None:
        if req.group_instance_id is not None:
            holder = group.static_members.get(req.group_instance_id) if group else None
            if holder is None:
                raise CoordinatorError(
                    Errors.UNKNOWN_MEMBER_ID, f"Instance id {req.group_instance_id} is unknown."
                )
            if holder != req.member_id:
                raise CoordinatorError(
                    Errors.FENCED_INSTANCE_ID,
                    f"Instance id {req.group_instance_id} belongs to member {holder}, "
                    f"not {req.member_id}.",
                )
        elif req.member_id not in members:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        current = group.generation_id if group is not None else 0
        if generation != current:
            raise CoordinatorError(
                Errors.ILLEGAL_GENERATION,
                f"Generation {generation} is not the group's generation {current}.",
            )
    else:
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID,
            f"Group {req.group_id} is not empty: a commit must name a member and generation.",
        )
    if state == cg.COMPLETING_REBALANCE:
        raise CoordinatorError(
            Errors.REBALANCE_IN_PROGRESS, f"Group {req.group_id} is completing a rebalance."
        )


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


def summarize(group: ClassicGroup) -> dict:
    """State, generation and member count (``GroupType.summarize``)."""
    return {
        "state": group.state,
        "group_type": "classic",
        "generation": group.generation_id,
        "members": len(group.members),
    }


def export(groups: list[ClassicGroup], shard: Any, tables: Mapping[str, Any]) -> None:
    """Each group's export rows (``GroupType.export``). Its members' subscriptions and
    assignments are opaque bytes, read only when the group speaks the consumer protocol; bytes
    that do not decode give no subscribed topics and no assignment rows, never an error. The
    leader's assignment is both the member's target and (as far as the coordinator knows)
    what it owns."""
    for group in groups:
        _export_group(group, shard.image, tables)


def _export_group(group: ClassicGroup, image: MetadataImage, tables: Mapping[str, Any]) -> None:
    gid = group.group_id
    tables["groups"].add(
        group_id=gid, group_type="classic", protocol_type=group.protocol_type or "",
        state=group.state, group_epoch=group.generation_id, assignment_epoch=-1,
        assignor=group.protocol_name or "", member_count=len(group.members),
    )
    consumer = group.protocol_type == PROTOCOL_TYPE
    for mid in sorted(group.members):
        mem = group.members[mid]
        topics, rack = _subscription(mem, group.protocol_name) if consumer else ([], None)
        tables["members"].add(
            group_id=gid, member_id=mid, instance_id=mem.group_instance_id, rack_id=rack,
            client_id=mem.client_id or "", client_host=mem.client_host or "",
            member_epoch=group.generation_id, state=_member_state(mem),
            subscribed_topics=topics, subscribed_topic_regex=None, protocol="classic",
        )
        for topic, ps in _assignment(mem) if consumer else ():
            t = image.topic_by_name(topic)
            row = {"group_id": gid, "member_id": mid, "topic_id": t.topic_id if t else "",
                   "topic_name": topic}
            tables["target_assignment"].extend_partitions(ps, **row)
            tables["current_assignment"].extend_partitions(ps, **row, pending_revocation=False)


def _member_state(mem: ClassicMember) -> str:
    if mem.awaiting_join is not None:
        return "awaiting_join"
    if mem.awaiting_sync is not None:
        return "awaiting_sync"
    return "stable"


def _subscription(mem: ClassicMember, protocol: str | None) -> tuple[list[str], str | None]:
    try:
        s = decode_subscription(mem.metadata_for(protocol))
    except ConsumerProtocolError:
        return [], None
    return sorted(s.topics), s.rack_id


def _assignment(mem: ClassicMember) -> list[tuple[str, list[int]]]:
    try:
        return sorted(decode_assignment(mem.assignment).assigned_partitions)
    except ConsumerProtocolError:
        return []


def _admin_view(d: m.DescribeGroupsResponseGroup) -> GroupView | None:
    """A DescribeGroups entry as ``cohort groups --describe`` shows it (None: a dead group is
    gone); a member's partitions are decoded when its group speaks the consumer protocol (a
    classic group of Connect workers shows its workers instead: ``workers_view``)."""
    if d.group_state == cg.DEAD:
        return None
    return GroupView(
        d.group_state, d.protocol_data, d.generation_id, None,
        [MemberView(mem.member_id, mem.group_instance_id, mem.client_host, mem.client_id,
                    d.generation_id, _assigned(d.protocol_type, mem.member_assignment), None)
         for mem in d.members],
    )


def _assigned(protocol_type: str, data: bytes) -> list[tuple[str, int]]:
    """A classic member's partitions, when its group speaks the consumer protocol."""
    if protocol_type != PROTOCOL_TYPE or not data:
        return []
    try:
        assignment = decode_assignment(data)
    except ConsumerProtocolError:
        return []
    return sorted((t, p) for t, ps in assignment.assigned_partitions for p in ps)


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
    admin=AdminDescribe(lambda gid: m.DescribeGroupsRequest(groups=[gid]), _admin_view,
                        {"offsets": workers_detail, "members": workers_detail}),
    summarize=summarize,
    export=export,
)
