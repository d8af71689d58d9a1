"""Shared steps of the share-group tests: a shard with topics, members joining, fetches."""

from __future__ import annotations

from protocol import messages as m
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard
from protocol.share.records import (
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
)

GROUP = "sg"
TOPICS = {"orders": ("T-orders", 3), "audit": ("T-audit", 1)}


def image(**partitions: int) -> MetadataImage:
    counts = {name: n for name, (_, n) in TOPICS.items()} | partitions
    return MetadataImage([TopicMetadata(TOPICS[n][0], n, c) for n, c in counts.items()])


def tid(name: str) -> str:
    return TOPICS[name][0]


def new_shard(config: CoordinatorConfig | None = None, earliest: bool = True,
              initialized: bool = True, **group_config) -> GroupCoordinatorShard:
    """A shard with ``TOPICS``; ``initialized``: the group's share-partitions of them are
    initialised already (the group has existed: ``protocol.share.initialization``), so a
    join is assigned at once; else a first join asks for them and waits a tick."""
    shard = GroupCoordinatorShard(config=config, metadata=image())
    reset = "earliest" if earliest else "latest"
    shard.set_group_config(GROUP, GroupConfig(share_auto_offset_reset=reset, **group_config))
    if initialized:
        initialize(shard)
    return shard


def initialize(shard: GroupCoordinatorShard, group: str = GROUP, logged: bool = False) -> None:
    """The group's share-partitions of ``TOPICS`` initialised, as a group that has existed
    before has them (``ShareGroupStatePartitionMetadata``); ``logged``: emitted (written to
    the shard's log), else only replayed."""
    ready = {tid(name): tuple(range(n)) for name, (_, n) in TOPICS.items()}
    record = Record(ShareGroupStatePartitionMetadataKey(group),
                    ShareGroupStatePartitionMetadataValue({}, ready))
    (shard.emit if logged else shard.replay)(record)


def heartbeat(shard: GroupCoordinatorShard, member: str, epoch: int, topics=None,
              group: str = GROUP, **extra) -> m.ShareGroupHeartbeatResponse:
    req = m.ShareGroupHeartbeatRequest(group, member, epoch, subscribed_topic_names=topics,
                                       **extra)
    return shard.handle(req).response


def join(shard: GroupCoordinatorShard, member: str, topics=("orders",),
         group: str = GROUP) -> m.ShareGroupHeartbeatResponse:
    resp = heartbeat(shard, member, 0, list(topics), group)
    assert resp.error_code == 0, resp
    return resp


def assigned(resp: m.ShareGroupHeartbeatResponse) -> set[tuple[str, int]]:
    assert resp.assignment is not None
    return {(tp.topic_id, p) for tp in resp.assignment.topic_partitions for p in tp.partitions}


def fetch_request(member: str, *parts: tuple[str, int], end: int = 100, max_records: int = 500,
                  acks: dict | None = None, close: bool = False, group: str = GROUP,
                  batch_records: int = 0, acquire_mode: int = 0) -> m.ShareFetchRequest:
    acks = acks or {}
    by_topic: dict[str, list[m.ShareFetchPartition]] = {}
    for topic, p in parts:
        by_topic.setdefault(tid(topic), []).append(
            m.ShareFetchPartition(p, acks.get((topic, p), []), log_end_offset=end,
                                  batch_records=batch_records))
    topics = [m.ShareFetchTopic(t, ps) for t, ps in by_topic.items()]
    return m.ShareFetchRequest(group, member, topics, max_records=max_records,
                               close_session=close, acquire_mode=acquire_mode)


def fetch(shard: GroupCoordinatorShard, member: str, *parts: tuple[str, int],
          **kw) -> m.ShareFetchResponse:
    return shard.handle(fetch_request(member, *parts, **kw)).response


def acquired(resp: m.ShareFetchResponse) -> list[tuple[int, int, int]]:
    return [(a.first_offset, a.last_offset, a.delivery_count)
            for t in resp.topics for p in t.partitions for a in p.acquired]


def acknowledge(shard: GroupCoordinatorShard, member: str, topic: str, partition: int,
                *batches: m.AcknowledgementBatch, close: bool = False,
                group: str = GROUP) -> m.ShareAcknowledgeResponse:
    req = m.ShareAcknowledgeRequest(group, member, [
        m.ShareAcknowledgeTopic(tid(topic), [m.ShareAcknowledgePartition(partition,
                                                                          list(batches))])
    ], close_session=close)
    return shard.handle(req).response


def ack_error(resp: m.ShareAcknowledgeResponse) -> int:
    return resp.topics[0].partitions[0].error_code
