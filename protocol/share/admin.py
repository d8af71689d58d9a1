"""The share-offset admin APIs: DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets (Kafka 4.2's ``kafka-share-groups.sh --describe / --reset-offsets /
--delete-offsets``).

A share group's "offset" on a partition is its share-partition's start offset: every record
below it is done. Describe shows it with the lag (records from it to the stream's end not yet
acknowledged, rejected or archived). Alter and delete rewrite or drop that state, and only
while the group has no members (NON_EMPTY_GROUP otherwise), as Kafka requires. Topics are
named by name, as on Kafka's wire.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors, invalid_request
from protocol.records import Record
from protocol.share.group import GROUP_TYPE, ShareGroup
from protocol.share.partition_state import SharePartition
from protocol.share.records import SharePartitionStateKey
from protocol.validation import check_types


def _share_group(ctx: ShardContext, group_id: str, empty: bool = False) -> ShareGroup:
    if not group_id:
        raise CoordinatorError(Errors.INVALID_GROUP_ID, "GroupId can't be empty.")
    group = ctx.groups.get(group_id)
    if group is None or group.group_type != GROUP_TYPE:
        kind = f"is a {group.group_type} group" if group is not None else "does not exist"
        raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND, f"Share group {group_id} {kind}.")
    if empty and group.members:
        raise CoordinatorError(
            Errors.NON_EMPTY_GROUP,
            f"Share group {group_id} has members: its offsets change only while it is empty.",
        )
    return group


def describe_offsets(
    ctx: ShardContext, req: m.DescribeShareGroupOffsetsRequest
) -> m.DescribeShareGroupOffsetsResponse:
    check_types(req)
    group = _share_group(ctx, req.group_id)
    wanted: list[tuple[str, list[int]]]
    if req.topics is None:
        by_topic: dict[str, list[int]] = {}
        for topic_id, p in sorted(group.partitions):
            by_topic.setdefault(topic_id, []).append(p)
        wanted = [(t.name, by_topic[t.topic_id]) for t in map(ctx.image.topic, by_topic) if t]
    else:
        wanted = [(t.topic_name, t.partitions) for t in req.topics]
    ends = None if req.log_end_offsets is None else {
        (e.topic_name, e.partition): e.log_end_offset for e in req.log_end_offsets}
    topics = []
    for name, partitions in wanted:
        topic = ctx.image.topic_by_name(name)
        out = m.DescribeShareGroupOffsetsTopic(name, topic.topic_id if topic else None)
        for p in partitions:
            entry = m.DescribeShareGroupOffsetsPartition(p)
            sp = group.partitions.get((topic.topic_id, p)) if topic else None
            if topic is None or not 0 <= p < topic.num_partitions:
                entry.error_code = Errors.UNKNOWN_TOPIC_OR_PARTITION
                entry.error_message = f"Unknown topic partition {name}-{p}."
            elif sp is not None:
                entry.start_offset = sp.start_offset
                entry.lag = sp.lag(req.log_end_offset if ends is None
                                   else ends.get((name, p), -1))
            out.partitions.append(entry)
        topics.append(out)
    return m.DescribeShareGroupOffsetsResponse(group_id=req.group_id, topics=topics)


def alter_offsets(
    ctx: ShardContext, req: m.AlterShareGroupOffsetsRequest
) -> m.AlterShareGroupOffsetsResponse:
    check_types(req)
    group = _share_group(ctx, req.group_id, empty=True)
    writes: dict[tuple[str, int], int] = {}
    topics = []
    for t in req.topics:
        topic = ctx.image.topic_by_name(t.topic_name)
        out = m.AlterShareGroupOffsetsResponseTopic(t.topic_name, topic.topic_id if topic else None)
        for p in t.partitions:
            entry = m.ShareOffsetsResponsePartition(p.partition)
            if topic is None or not 0 <= p.partition < topic.num_partitions:
                entry.error_code = Errors.UNKNOWN_TOPIC_OR_PARTITION
                entry.error_message = f"Unknown topic partition {t.topic_name}-{p.partition}."
            elif p.start_offset < 0:
                entry.error_code = Errors.INVALID_REQUEST
                entry.error_message = f"StartOffset {p.start_offset} can't be negative."
            elif (topic.topic_id, p.partition) in writes:
                raise invalid_request(f"Partition {t.topic_name}-{p.partition} named twice.")
            else:
                writes[(topic.topic_id, p.partition)] = p.start_offset
            out.partitions.append(entry)
        topics.append(out)
    for (topic_id, partition), start in sorted(writes.items()):
        sp = SharePartition(start)
        key = SharePartitionStateKey(group.group_id, topic_id, partition)
        ctx.emit(Record(key, sp.to_value()))
    return m.AlterShareGroupOffsetsResponse(topics=topics)


def delete_offsets(
    ctx: ShardContext, req: m.DeleteShareGroupOffsetsRequest
) -> m.DeleteShareGroupOffsetsResponse:
    check_types(req)
    group = _share_group(ctx, req.group_id, empty=True)
    deletes: list[tuple[str, int]] = []
    topics = []
    for name in req.topic_names:
        topic = ctx.image.topic_by_name(name)
        out = m.DeleteShareGroupOffsetsResponseTopic(name, topic.topic_id if topic else None)
        if topic is None:
            out.error_code = Errors.UNKNOWN_TOPIC_OR_PARTITION
            out.error_message = f"Unknown topic {name}."
        else:
            deletes.extend(tp for tp in sorted(group.partitions) if tp[0] == topic.topic_id)
        topics.append(out)
    for topic_id, partition in sorted(set(deletes)):
        ctx.emit(Record(SharePartitionStateKey(group.group_id, topic_id, partition), None))
    return m.DeleteShareGroupOffsetsResponse(topics=topics)
