"""The consumer group type (KIP-848) as one row of the group-type table: what the shard, the
offsets rules, the runtime and the tools ask of a consumer group, answered here (its export
rows among them: the ``groups``, ``members``, ``target_assignment`` and ``current_assignment``
tables of ``actors/tools/state_tables.py``)."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

from protocol import messages as m
from protocol.classic.consumer_protocol import PROTOCOL_TYPE
from protocol.config import CoordinatorConfig
from protocol.consumer import group as consumer_group
from protocol.consumer import records
from protocol.consumer.bulk_load import bulk_loader
from protocol.consumer.describe import topic_name
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import MemberState
from protocol.consumer.records import ConsumerGroupMemberMetadataKey, ConsumerGroupMetadataKey
from protocol.consumer.rules import ConsumerGroupRules
from protocol.consumer.timers import ConsumerTimer
from protocol.group_row import GroupType, Shard, WakeUps
from protocol.metadata import MetadataImage
from protocol.migration.classic_members import ClassicMembersOfConsumerGroup
from protocol.migration.conversion import Migration
from protocol.offsets.commit_checks import check_member_epoch, validate_consumer_commit
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
    validate_offset_commit=validate_consumer_commit,
    check_offset_fetch=_check_fetch,
    is_empty=lambda g: not g.members,
    tombstones=consumer_group.group_tombstones,
    subscribed_topics=lambda g, image, strict: g.subscribed_topic_names(image),
    describe_classic=lambda shard, g, history: shard.classic_members.describe(g, history),
    list_protocol_type=lambda g: "consumer",
    classic_host=lambda shard: shard.classic_members,
    heartbeat=m.ConsumerGroupHeartbeatRequest,
    wake_ups=WakeUps(m.ConsumerGroupHeartbeatRequest, ConsumerGroupMemberMetadataKey),
    bulk_load=bulk_loader,
    state_gauge="consumer_group_count",  # seed 000's names
    rebalance_metric="consumer_group_rebalance",
    export=_export,
)
