"""The consumer group type (KIP-848) as one row of the group-type table: what the shard, the
offsets rules, the runtime and the tools ask of a consumer group, answered here."""

from __future__ import annotations

from functools import partial

from protocol import messages as m
from protocol.consumer import group as consumer_group
from protocol.consumer import records
from protocol.consumer.bulk_load import bulk_loader
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.records import ConsumerGroupMemberMetadataKey, ConsumerGroupMetadataKey
from protocol.consumer.rules import ConsumerGroupRules
from protocol.consumer.timers import ConsumerTimer
from protocol.group_row import GroupType, Shard, WakeUps
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
)
