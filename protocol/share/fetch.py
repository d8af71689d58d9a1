"""ShareFetch and ShareAcknowledge: a share group's members acquiring and acknowledging the
records of its share-partitions, and the locks that run out on the shard's timers.

Cohort plays Kafka's share-partition leader and share coordinator in one: the in-flight state
of each (group, topic, partition) lives in the group (``ShareGroup.partitions``) and every
change is one ``SharePartitionStateKey`` record, so a reply is released only once its
acquisitions and acknowledgements are durable, and a reloaded shard holds the same locks.

A request is atomic: every partition's new state is computed on a copy and emitted when the
handler returns. Per partition, acknowledgements apply first (all of a partition's batches, or
none: ``acknowledge_error_code``), then records are acquired up to the stream's end the request
carries (``log_end_offset``), within ``max_records`` for the whole request (a soft limit,
unless the request asks for KIP-1206's record_limit mode: see ``SharePartition.acquire``). A
share-partition read for the first time starts at that end (``share.auto.offset.reset``
latest, Kafka's default) or at the log's start the request carries (earliest: ``log_start_offset``).
``close_session`` releases every record the member still holds (of the ``released``
partitions only, when the entry point names them: the member's session at one broker of several).
"""

from __future__ import annotations

from typing import Any

from protocol import messages as m
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors, invalid_request
from protocol.records import Record
from protocol.share.group import GROUP_TYPE, ShareGroup, TopicPartition
from protocol.share.messages import BATCH_OPTIMIZED, RECORD_LIMIT
from protocol.share.partition_state import Limits, SharePartition
from protocol.share.records import SharePartitionStateKey
from protocol.share.sessions import ShareLockExpiry
from protocol.validation import check_types


class SharePartitions:
    """The share-partitions of every share group a shard hosts: requests, timers, replay."""

    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx

    # ------------------------------------------------------------------ requests

    def fetch(self, req: m.ShareFetchRequest) -> m.ShareFetchResponse:
        group = self._member_group(req)
        if req.max_records < 0:
            raise invalid_request("MaxRecords can't be negative.")
        if req.acquire_mode not in (BATCH_OPTIMIZED, RECORD_LIMIT):
            raise invalid_request(f"Unknown share acquire mode id: {req.acquire_mode}")
        _check_unique(req.topics)
        limits = self.limits(group.group_id)
        work = _Work(group)
        budget = req.max_records
        topics = []
        for topic in req.topics:
            parts = []
            for p in topic.partitions:
                tp = (topic.topic_id, p.partition)
                if p.log_end_offset < 0 or not 0 <= p.log_start_offset <= p.log_end_offset:
                    raise invalid_request(f"LogStartOffset and LogEndOffset of {tp} must be "
                                          "0 <= start <= end.")
                out = m.ShareFetchResponsePartition(p.partition)
                parts.append(out)
                error = self._partition_error(tp)
                if error is not None:
                    out.error_code, out.error_message = error
                    continue
                if p.acknowledgements:
                    ack_error = self._acknowledge(work, tp, req.member_id, p.acknowledgements,
                                                  limits)
                    if ack_error is not None:
                        out.acknowledge_error_code, out.acknowledge_error_message = ack_error
                if p.fetch and not req.close_session and budget > 0:
                    sp = work.get(tp) or work.create(tp, self._start_offset(group, p))
                    out.acquired = sp.acquire(
                        req.member_id, budget, p.log_end_offset, self.ctx.now_ms, limits,
                        0 if req.acquire_mode == RECORD_LIMIT else p.batch_records)
                    budget -= sum(a.last_offset - a.first_offset + 1 for a in out.acquired)
            topics.append(m.ShareFetchResponseTopic(topic.topic_id, parts))
        if req.close_session:
            self._release_into(work, req.member_id, limits, req.released)
        self._emit(work)
        return m.ShareFetchResponse(acquisition_lock_timeout_ms=limits.record_lock_duration_ms,
                                    topics=topics)

    def acknowledge(self, req: m.ShareAcknowledgeRequest) -> m.ShareAcknowledgeResponse:
        group = self._member_group(req)
        _check_unique(req.topics)
        limits = self.limits(group.group_id)
        work = _Work(group)
        topics = []
        for topic in req.topics:
            parts = []
            for p in topic.partitions:
                tp = (topic.topic_id, p.partition)
                out = m.ShareAcknowledgeResponsePartition(p.partition)
                parts.append(out)
                error = self._partition_error(tp) or self._acknowledge(
                    work, tp, req.member_id, p.acknowledgements, limits
                )
                if error is not None:
                    out.error_code, out.error_message = error
            topics.append(m.ShareAcknowledgeResponseTopic(topic.topic_id, parts))
        if req.close_session:
            self._release_into(work, req.member_id, limits, req.released)
        self._emit(work)
        return m.ShareAcknowledgeResponse(
            acquisition_lock_timeout_ms=limits.record_lock_duration_ms, topics=topics
        )

    # ------------------------------------------------------------------ for the rules

    def limits(self, group_id: str) -> Limits:
        config, broker = self.ctx.group_config(group_id), self.ctx.config
        return Limits(
            record_lock_duration_ms=config.share_setting(broker, "record_lock_duration_ms"),
            delivery_count_limit=config.share_setting(broker, "delivery_count_limit"),
            max_record_locks=broker.group_share_partition_max_record_locks,
        )

    def release_member(self, group: ShareGroup, member_id: str) -> None:
        """Give back every record ``member_id`` holds (it left, timed out, closed its session)."""
        work = _Work(group)
        self._release_into(work, member_id, self.limits(group.group_id))
        self._emit(work)

    def on_lock_expiry(self, key: ShareLockExpiry) -> None:
        group = self.ctx.groups.get(key.group_id)
        if group is None or group.group_type != GROUP_TYPE:
            return
        tp = (key.topic_id, key.partition)
        work = _Work(group)
        sp = work.get(tp)
        if sp is not None and sp.expire_locks(self.ctx.now_ms, self.limits(key.group_id)):
            self._emit(work)
        elif sp is not None:
            self._arm(group.group_id, tp, group.partitions[tp])

    def after_replay(self, group: ShareGroup, record: Record) -> None:
        """A share-partition's lock timer follows its earliest lock (live and on load)."""
        key = record.key
        if type(key) is SharePartitionStateKey:
            tp = (key.topic_id, key.partition)
            self._arm(group.group_id, tp, group.partitions.get(tp))

    def forget_deleted_topics(self, group: ShareGroup) -> None:
        """Tombstone the state of every share-partition whose topic or partition is gone."""
        for topic_id, partition in sorted(group.partitions):
            if self._partition_error((topic_id, partition)) is not None:
                key = SharePartitionStateKey(group.group_id, topic_id, partition)
                self.ctx.emit(Record(key, None))

    def forget_group(self, group: ShareGroup) -> None:
        for topic_id, partition in group.partitions:
            self.ctx.timers.cancel(ShareLockExpiry(group.group_id, topic_id, partition))

    # ------------------------------------------------------------------ internals

    def _member_group(self, req: Any) -> ShareGroup:
        """The share group a fetch or acknowledgement comes from, its member checked."""
        check_types(req)
        if not req.group_id:
            raise invalid_request("GroupId can't be empty.")
        if not req.member_id:
            raise invalid_request("MemberId can't be empty.")
        group = self.ctx.groups.get(req.group_id)
        if group is None or group.group_type != GROUP_TYPE:
            kind = f"is a {group.group_type} group" if group is not None else "does not exist"
            raise CoordinatorError(
                Errors.GROUP_ID_NOT_FOUND, f"Share group {req.group_id} {kind}."
            )
        if req.member_id not in group.members:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of share group {req.group_id}.",
            )
        return group

    def _partition_error(self, tp: TopicPartition) -> tuple[int, str] | None:
        topic = self.ctx.image.topic(tp[0])
        if topic is None:
            return Errors.UNKNOWN_TOPIC_ID, f"Topic {tp[0]} does not exist."
        if not 0 <= tp[1] < topic.num_partitions:
            return (Errors.UNKNOWN_TOPIC_OR_PARTITION,
                    f"Topic {topic.name} has no partition {tp[1]}.")
        return None

    def _start_offset(self, group: ShareGroup, p: m.ShareFetchPartition) -> int:
        config = self.ctx.group_config(group.group_id)
        earliest = config.share_starts_at_earliest(self.ctx.config)
        return p.log_start_offset if earliest else p.log_end_offset

    @staticmethod
    def _acknowledge(work: _Work, tp: TopicPartition, member_id: str,
                     batches: list[m.AcknowledgementBatch],
                     limits: Limits) -> tuple[int, str] | None:
        sp = work.get(tp)
        try:
            if sp is None:
                if batches:
                    raise CoordinatorError(Errors.INVALID_RECORD_STATE,
                                           f"No record of {tp} was ever acquired.")
                return None
            sp.acknowledge(member_id, batches, limits)
        except CoordinatorError as e:
            return e.error, e.message
        return None

    @staticmethod
    def _release_into(work: _Work, member_id: str, limits: Limits,
                      only: list[m.TopicPartitions] | None = None) -> None:
        wanted = None if only is None else {(t.topic_id, p) for t in only for p in t.partitions}
        for tp, sp in list(work.group.partitions.items()):
            if sp.holds(member_id) and (wanted is None or tp in wanted):
                held = work.get(tp)
                assert held is not None
                held.release_member(member_id, limits)

    def _emit(self, work: _Work) -> None:
        gid = work.group.group_id
        for (topic_id, partition), sp in sorted(work.changed.items()):
            current = work.group.partitions.get((topic_id, partition))
            if current is None or current != sp:
                key = SharePartitionStateKey(gid, topic_id, partition)
                self.ctx.emit(Record(key, sp.to_value()))

    def _arm(self, group_id: str, tp: TopicPartition, sp: SharePartition | None) -> None:
        key = ShareLockExpiry(group_id, *tp)
        deadline = sp.next_lock_deadline_ms() if sp is not None else None
        if deadline is None:
            self.ctx.timers.cancel(key)
        else:
            self.ctx.timers.schedule(key, deadline)


class _Work:
    """A request's share-partitions as it changes them: copies, emitted when it returns."""

    def __init__(self, group: ShareGroup) -> None:
        self.group = group
        self.changed: dict[TopicPartition, SharePartition] = {}

    def get(self, tp: TopicPartition) -> SharePartition | None:
        sp = self.changed.get(tp)
        if sp is None:
            current = self.group.partitions.get(tp)
            if current is None:
                return None
            sp = self.changed[tp] = current.copy()
        return sp

    def create(self, tp: TopicPartition, start_offset: int) -> SharePartition:
        sp = self.changed[tp] = SharePartition(start_offset)
        return sp


def _check_unique(topics: list) -> None:
    seen: set[TopicPartition] = set()
    for topic in topics:
        for p in topic.partitions:
            tp = (topic.topic_id, p.partition)
            if tp in seen:
                raise invalid_request(f"Partition {tp} appears twice in the request.")
            seen.add(tp)
