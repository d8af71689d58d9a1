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

from protocol import messages as m
from protocol.admin_view import (
    AdminDescribe,
    AdminPort,
    Columns,
    DetailTable,
    GroupView,
    MemberView,
    missing_group,
    refuse_for,
    topic_partitions,
)
from protocol.errors import CoordinatorError, Errors
from protocol.group_row import GroupType
from protocol.share import group as share_group
from protocol.share import records
from protocol.share.describe import describe_as_classic
from protocol.share.group import ShareGroup
from protocol.share.member import ShareMemberState
from protocol.share.rules import ShareGroupRules
from protocol.share.sessions import ShareTimer
from protocol.wire.stream import SyntheticStream


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


def _admin_view(d: m.ShareDescribedGroup) -> GroupView:
    """A ShareGroupDescribe entry as ``cohort groups --describe`` shows it (members may share
    partitions)."""
    return GroupView(
        d.group_state, d.assignor_name, d.group_epoch, d.assignment_epoch,
        [MemberView(x.member_id, None, x.client_host, x.client_id, x.member_epoch,
                    topic_partitions(x.assignment.topic_partitions), None) for x in d.members],
    )


# Kafka's kafka-share-groups.sh --describe --offsets, and the stream's end beside the start.
SHARE_OFFSETS_COLUMNS: Columns = [
    ("GROUP", "group"), ("TOPIC", "topic"), ("PARTITION", "partition"),
    ("START-OFFSET", "start_offset"), ("IN-FLIGHT", "in_flight"),
    ("LOG-END-OFFSET", "log_end_offset"), ("LAG", "lag"),
]


def offsets_detail(port: AdminPort, listed: m.ListedGroup, now_ms: int,
                   log_end_offset: int | None = None) -> DetailTable:
    """A share group's share-partitions in place of its offsets: start offset (every record
    below it acknowledged, rejected or archived), in-flight records and lag (records from the
    start to ``log_end_offset`` not yet done, by default the end of the gateway's default
    stream now), as DescribeShareGroupOffsets gives them."""
    gid = listed.group_id
    if log_end_offset is None:
        log_end_offset = SyntheticStream(0).end_offset(now_ms)
    d = port.call(m.ShareGroupDescribeRequest(group_ids=[gid])).groups[0]
    if d.error_code == Errors.GROUP_ID_NOT_FOUND:
        raise missing_group(gid)
    refuse_for(d.error_code, d.error_message, f"Describe of group '{gid}' failed")
    resp = port.call(m.DescribeShareGroupOffsetsRequest(group_id=gid,
                                                        log_end_offset=log_end_offset))
    refuse_for(resp.error_code, resp.error_message,
               f"Describing the share offsets of group '{gid}' failed")
    in_flight = port.query(gid, _InFlight(gid))
    rows = [{"group": gid, "topic": t.topic_name, "partition": p.partition,
             "start_offset": None if p.start_offset < 0 else p.start_offset,
             "in_flight": in_flight.get((t.topic_id, p.partition), 0),
             "log_end_offset": log_end_offset, "lag": None if p.lag < 0 else p.lag}
            for t in resp.topics for p in t.partitions if p.error_code == Errors.NONE]
    notes = [] if d.members else [f"Share group '{gid}' has no active members."]
    rows.sort(key=lambda r: (r["topic"], r["partition"]))
    return DetailTable(SHARE_OFFSETS_COLUMNS, rows, notes)


class _InFlight:
    """``shard -> ShareGroup.in_flight`` of one group, in its partition (picklable: a query)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id

    def __call__(self, shard: Any) -> dict[tuple[str, int], int]:
        group = shard.groups.get(self.group_id)
        return group.in_flight() if isinstance(group, ShareGroup) else {}


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
    expires_when_empty=False,  # Kafka's ShareGroup.shouldExpire: its share-partitions stay
    tombstones=share_group.group_tombstones,
    subscribed_topics=lambda g, image, strict: g.subscribed_topic_names(),
    describe_classic=lambda shard, g, history: describe_as_classic(g, history),
    list_protocol_type=lambda g: "share",
    classic_host=lambda shard: _CLASSIC_HOST,
    admin=AdminDescribe(lambda gid: m.ShareGroupDescribeRequest(group_ids=[gid]), _admin_view,
                        {"offsets": offsets_detail}),
    keeps_offsets=False,  # OffsetFetch to one is GROUP_ID_NOT_FOUND, as in Kafka
    heartbeat=m.ShareGroupHeartbeatRequest,
    export=_export,
)
