"""The consumer group type (KIP-848) as one row of the group-type table: what the shard, the
offsets rules, the runtime and the tools ask of a consumer group, answered here (its export
rows among them: the ``groups``, ``members``, ``target_assignment`` and ``current_assignment``
tables of ``actors/tools/state_tables.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from protocol import messages as m
from protocol.admin_view import AdminDescribe, GroupView, MemberView, topic_partitions
from protocol.classic.consumer_protocol import PROTOCOL_TYPE
from protocol.config import CoordinatorConfig
from protocol.consumer import group as consumer_group
from protocol.consumer import records
from protocol.consumer.bulk_load import bulk_loader
from protocol.consumer.describe import topic_name
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import ConsumerGroupMember, MemberState
from protocol.consumer.records import ConsumerGroupMemberMetadataKey, ConsumerGroupMetadataKey
from protocol.consumer.rules import ConsumerGroupRules
from protocol.consumer.sessions import ConsumerTimer
from protocol.errors import CoordinatorError, Errors
from protocol.group_row import GroupType, Shard, WakeUps
from protocol.metadata import MetadataImage
from protocol.migration.classic_members import ClassicMembersOfConsumerGroup
from protocol.migration.conversion import Migration
from protocol.records import Record


def _replay(shard: Shard, record: Record) -> None:
    """A consumer group record: its metadata tombstone drops the group; any other record
    creates the group when needed, then the rules see what changed (sessions, wake-ups)."""
    key = record.key
    gid = key.group_id  # type: ignore[attr-defined]
    group = shard.group_of(gid, "consumer")
    if type(key) is ConsumerGroupMetadataKey and record.value is None:
        if group is not None:
            del shard.groups[gid]
        return
    if group is None:
        group = shard.groups[gid] = ConsumerGroup(gid)
    before = group.members.get(getattr(key, "member_id", None) or "")
    group.replay(record)
    shard.consumer.after_replay(group, record, before)


# ---------------------------------------------------------------- who may commit, fetch


def validate_commit(
    group: ConsumerGroup, req: m.OffsetCommitRequest
) -> Callable[[str, int], bool] | None:
    """Kafka's ``ConsumerGroup.validateOffsetCommit`` with KIP-1251's assignment epochs (Kafka
    4.3): epoch < 0 and no members, a simple commit (every partition may land); else the member
    must exist (UNKNOWN_MEMBER_ID); a classic member inside the group commits at its epoch
    (ILLEGAL_GENERATION); a consumer member needs OffsetCommit v9 (UNSUPPORTED_VERSION below)
    and commits at its epoch or, per partition, at an older epoch no lower than the partition's
    assignment epoch (``assignmentEpoch(partition) <= clientEpoch <= memberEpoch``): a partition
    it does not hold, or got later, refuses every known partition of the commit with
    STALE_MEMBER_EPOCH, as Kafka (the offsets rules ask the returned check of each); so does an
    epoch above its own."""
    epoch = req.generation_id_or_member_epoch
    if epoch < 0 and not group.members:
        return None  # a simple (admin) commit to an empty group
    member = group.members.get(req.member_id)
    if (member is not None and not member.is_classic
            and req.api_version < m.OFFSET_COMMIT_MEMBER_EPOCH_VERSION):
        raise CoordinatorError(
            Errors.UNSUPPORTED_VERSION,
            "OffsetCommit version 9 or above must be used by members using the consumer "
            "group protocol.",
        )
    if member is None or member.is_classic or epoch >= member.member_epoch:
        check_member_epoch(group, req.member_id, epoch)
        return None
    return lambda topic_id, partition: (
        owns(member, topic_id, partition)
        and member.assignment_epoch(topic_id, partition) <= epoch
    )


def check_member_epoch(group: ConsumerGroup, member_id: str, epoch: int) -> ConsumerGroupMember:
    member = group.members.get(member_id)
    if member is None:
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID,
            f"Member {member_id} is not a member of group {group.group_id}.",
        )
    if epoch != member.member_epoch:
        if member.metadata.classic_member_metadata is not None:
            raise CoordinatorError(
                Errors.ILLEGAL_GENERATION,
                f"The received generation id {epoch} does not match the expected member epoch "
                f"{member.member_epoch}.",
            )
        raise CoordinatorError(
            Errors.STALE_MEMBER_EPOCH,
            f"The received member epoch {epoch} does not match the expected member epoch "
            f"{member.member_epoch}.",
        )
    return member


def owns(member: ConsumerGroupMember, topic_id: str, partition: int) -> bool:
    """Assigned, or still held while being revoked (a member commits before it lets go)."""
    return partition in member.assigned_partitions.get(topic_id, ()) or (
        partition in member.partitions_pending_revocation.get(topic_id, ())
    )


def _check_fetch(group: ConsumerGroup, req: m.OffsetFetchRequest) -> None:
    """A fetch naming a member (or an epoch) must come from that member at its epoch."""
    if req.member_id or req.member_epoch >= 0:
        check_member_epoch(group, req.member_id or "", req.member_epoch)


def _export(groups: list[ConsumerGroup], shard: Shard, tables: Mapping[str, Any]) -> None:
    """The groups' rows, and their members' in one pass over every group (column by column)."""
    for group in groups:
        _export_group(group, shard.image, shard.config, tables)
    _export_members(groups, tables["members"])


def _export_group(group: ConsumerGroup, image: MetadataImage, config: CoordinatorConfig,
                  tables: Mapping[str, Any]) -> None:
    """The group's row and its assignments' rows."""
    gid = group.group_id
    tables["groups"].add(
        group_id=gid, group_type="consumer", protocol_type=PROTOCOL_TYPE, state=group.state,
        group_epoch=group.group_epoch, assignment_epoch=group.assignment_epoch,
        assignor=group.assignor(config).name, member_count=len(group.members),
    )
    names: dict[str, str] = {}

    def name_of(topic_id: str) -> str:
        if topic_id not in names:
            names[topic_id] = topic_name(image, group, topic_id)
        return names[topic_id]

    current = tables["current_assignment"]
    for mid in sorted(group.members):
        held = group.members[mid].current  # the member's current-assignment record
        for pending, parts in ((False, held.assigned_partitions),
                               (True, held.partitions_pending_revocation)):
            for tid, ps in sorted(parts.items()) if parts else ():
                current.extend_partitions(ps, group_id=gid, member_id=mid, topic_id=tid,
                                          topic_name=name_of(tid), pending_revocation=pending)
    target = tables["target_assignment"]
    for mid in sorted(group.target):
        for tid, ps in sorted(group.target[mid].partitions.items()):
            target.extend_partitions(ps, group_id=gid, member_id=mid, topic_id=tid,
                                     topic_name=name_of(tid))


def _export_members(groups: list[ConsumerGroup], members_table: Any) -> None:
    """Every member of ``groups``, a column at a time, from the member's two records."""
    members = [(g.group_id, g.members[mid]) for g in groups for mid in sorted(g.members)]
    metas = [mem.metadata for _, mem in members]
    currents = [mem.current for _, mem in members]
    unknown = MemberState.UNKNOWN.label
    members_table.extend(
        group_id=[gid for gid, _ in members],
        member_id=[mem.member_id for _, mem in members],
        instance_id=[md.instance_id for md in metas],
        rack_id=[md.rack_id for md in metas],
        client_id=[md.client_id or "" for md in metas],
        client_host=[md.client_host or "" for md in metas],
        member_epoch=[c.member_epoch for c in currents],
        state=[_MEMBER_STATES.get(c.state, unknown) for c in currents],
        subscribed_topics=[md.subscribed_topic_names for md in metas],  # tuples: Arrow takes them
        subscribed_topic_regex=[md.subscribed_topic_regex for md in metas],
        protocol=["consumer" if md.classic_member_metadata is None else "classic" for md in metas],
    )


_MEMBER_STATES = {int(s): s.label for s in MemberState}


def _admin_view(d: m.DescribedGroup) -> GroupView:
    """A ConsumerGroupDescribe entry as ``cohort groups --describe`` shows it."""
    return GroupView(
        d.group_state, d.assignor_name, d.group_epoch, d.assignment_epoch,
        [
            MemberView(mem.member_id, mem.instance_id, mem.client_host, mem.client_id,
                       mem.member_epoch, topic_partitions(mem.assignment.topic_partitions),
                       topic_partitions(mem.target_assignment.topic_partitions))
            for mem in d.members
        ],
    )


ROW = GroupType(
    name="consumer",
    metrics_label="consumer",
    group_class=ConsumerGroup,
    states=tuple(consumer_group.STATES),
    record_schemas=records.SCHEMAS,
    timer_key=ConsumerTimer,
    rules=ConsumerGroupRules,
    helpers=(("classic_members", ClassicMembersOfConsumerGroup), ("migration", Migration)),
    replayer=lambda shard: partial(_replay, shard),
    validate_offset_commit=validate_commit,
    check_offset_fetch=_check_fetch,
    is_empty=lambda g: not g.members,
    tombstones=consumer_group.group_tombstones,
    subscribed_topics=lambda g, image, strict: g.subscribed_topic_names(image),
    describe_classic=lambda shard, g, history: shard.classic_members.describe(g, history),
    list_protocol_type=lambda g: "consumer",
    classic_host=lambda shard: shard.classic_members,
    admin=AdminDescribe(lambda gid: m.ConsumerGroupDescribeRequest(group_ids=[gid]), _admin_view),
    heartbeat=m.ConsumerGroupHeartbeatRequest,
    wake_ups=WakeUps(m.ConsumerGroupHeartbeatRequest, ConsumerGroupMemberMetadataKey),
    bulk_load=bulk_loader,
    state_gauge="consumer_group_count",  # seed 000's names
    rebalance_metric="consumer_group_rebalance",
    export=_export,
)
