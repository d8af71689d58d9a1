"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups and retention.

The offsets half of Kafka's ``OffsetMetadataManager`` (plus ``deleteGroups`` of its shard).
State is ``offsets[group_id][(topic_name, partition)] -> OffsetCommitValue`` and changes only by
``replay`` of ``OffsetCommitKey`` records (a ``None`` value is a tombstone), so replaying a
shard's log rebuilds exactly what the live shard holds. Offsets are kept by topic *name*, as
Kafka keeps them; a group with offsets but no group object is Kafka's "simple" group (a
consumer that commits without group management), which needs no object of its own here.

Every request is type-checked first (``check_types``): a malformed one gets INVALID_REQUEST and
writes nothing. A request-level refusal of an OffsetCommit also sets every partition's error,
as Kafka's ``OffsetCommitRequest.getErrorResponse`` does.

Who may commit is the group's row's rule (``protocol/group_types.py``; Kafka's
``validateOffsetCommit``): it refuses the request, or bounds the partitions that may land. A
commit to a group id with no group object but offsets is the simple group's (the row
``SIMPLE_GROUPS``: an EMPTY classic group with no members); with neither, generation < 0 is a
simple commit and anything else GROUP_ID_NOT_FOUND (ILLEGAL_GENERATION below OffsetCommit
v9: Kafka answers by the version the client spoke). Every question that depends on the
group's type (may it commit, is it empty, which topics it subscribes to, which records delete
it) is asked of its row, never by testing its class.

Then each partition on its own: a topic or partition the metadata image does not know is
UNKNOWN_TOPIC_OR_PARTITION (Kafka checks this in ``KafkaApis``), metadata longer than
``offset_metadata_max_bytes`` is OFFSET_METADATA_TOO_LARGE, a negative offset is
INVALID_COMMIT_OFFSET_SIZE. The valid partitions of a request are written even when others fail.

Retention: one periodic timer, ``RetentionCheck``, armed when the first offset is replayed
or a turn ends with groups (``keep_watch``) and re-armed while any offset or group remains.
After a check's expired offsets, a group left with no offsets that is empty is deleted (its
row's tombstones), unless its row keeps empty groups (``GroupRow.expires_when_empty``: share
groups), as Kafka's ``GroupCoordinatorShard.cleanupGroupMetadata`` and
``Group.shouldExpire`` do every ``offsets.retention.check.interval.ms``. A group's offsets of
topics it does not subscribe to expire when their explicit expiry time passes, or else
``offsets_retention_minutes`` after a base time: the commit time, or for an EMPTY classic
group the later of the commit time and the time the group became empty. Offsets of
subscribed topics never expire; a group with members subscribes to its members' topics
(classic: only a STABLE "consumer" group whose subscriptions all decode may expire anything,
as Kafka's ``offsetExpirationCondition``).

Where Cohort differs from Kafka, on purpose:

- Metadata size is counted in UTF-8 bytes (Kafka counts Java ``String.length()`` chars).
- A negative offset is refused (INVALID_COMMIT_OFFSET_SIZE); Kafka's broker stores it and only
  its client refuses it, but a stored -1 would read back as "no offset".
- ``retention_time_ms`` <= 0 means the broker's retention (Kafka: only -1 does; 0 or below
  would expire at once). An explicit expiry is capped at int64's maximum.
- Offsets of a deleted topic are not dropped when the topic goes (Kafka drops them); they
  expire by retention. OffsetDelete answers a topic the image does not know
  UNKNOWN_TOPIC_OR_PARTITION, as Kafka does.
- OffsetDelete on a non-empty classic group counts the subscriptions that decode; Kafka
  treats a group with any undecodable one as subscribed to nothing.
- An OffsetFetch's member check runs when a non-empty member id or an epoch >= 0 is given
  (Kafka: a non-null member id); ``""`` counts as no member, as it does in OffsetCommit.
- Expiry does not delete a group whose offsets are all gone (Kafka deletes empty groups on
  its cleanup pass); an offset-only group vanishes with its last offset anyway.
- Commits do not extend a classic member's session (Kafka reschedules its heartbeat).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from protocol import messages as m
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.group_types import SIMPLE_GROUPS, type_of
from protocol.offsets.timers import OffsetsTimer, RetentionCheck
from protocol.records import OffsetCommitKey, OffsetCommitValue, Record
from protocol.types import INT_BOUNDS
from protocol.validation import check_types

EXPIRE_TIMER = RetentionCheck()
# Bound on the tombstones one expiry pass writes; the rest wait for the next tick.
MAX_EXPIRED_PER_CHECK = 100_000
INT64_MAX = INT_BOUNDS["int64"][1]
NO_OFFSET = -1

TopicPartition = tuple[str, int]


class OffsetRules:
    """Every group's committed offsets, of any type (and of simple groups, which have no
    object): they change only by replay of ``OffsetCommitKey`` records, and what a group's type
    decides (who may commit, whether it may be deleted, which offsets expire) is its row's
    answer in the group-type table."""

    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx
        self.offsets: dict[str, dict[TopicPartition, OffsetCommitValue]] = {}

    # ------------------------------------------------------------------ OffsetCommit

    def commit(self, req: m.OffsetCommitRequest) -> m.OffsetCommitResponse:
        check_types(req)
        try:
            if not req.group_id:
                raise CoordinatorError(Errors.INVALID_GROUP_ID, "The group id is empty.")
            may_write = self._validate_commit(req)
        except CoordinatorError as e:
            return refused_commit(req, e)
        expire_ms = (
            min(self.ctx.now_ms + req.retention_time_ms, INT64_MAX)
            if req.retention_time_ms > 0
            else -1
        )
        topics = []
        # Kafka writes a record per accepted entry and the last one per partition wins on
        # replay; only that last one is written here, for the same state: a request naming one
        # partition 460,000 times is one record, not 460,000 (every entry is still answered).
        latest: dict[tuple[str, int], m.OffsetCommitRequestPartition] = {}
        stale = may_write is not None and self._any_stale(req, may_write)
        for topic in req.topics:
            answers = []
            for p in topic.partitions:
                error = self._partition_error(topic.name, p, stale)
                if error == Errors.NONE:
                    latest[topic.name, p.partition_index] = p
                answers.append(m.OffsetCommitResponsePartition(p.partition_index, error))
            topics.append(m.OffsetCommitResponseTopic(topic.name, answers))
        for (topic_name, partition), p in latest.items():
            value = OffsetCommitValue(
                offset=p.committed_offset,
                leader_epoch=p.committed_leader_epoch,
                metadata=p.committed_metadata or "",
                commit_timestamp=self.ctx.now_ms,
                expire_timestamp=expire_ms,
            )
            self.ctx.emit(Record(OffsetCommitKey(req.group_id, topic_name, partition), value))
        return m.OffsetCommitResponse(topics=topics)

    def _validate_commit(self, req: m.OffsetCommitRequest) -> Callable[[str, int], bool] | None:
        """Refuse the request, or return which of its partitions it may write (None: all)."""
        gid, generation = req.group_id, req.generation_id_or_member_epoch
        group = self.ctx.groups.get(gid)
        if group is not None:
            return type_of(group).validate_offset_commit(group, req)
        if gid in self.offsets:
            SIMPLE_GROUPS.validate_offset_commit(None, req)  # the simple group
        elif generation >= 0:
            # Kafka's answer, by the version the client spoke.
            new = req.api_version >= m.OFFSET_COMMIT_MEMBER_EPOCH_VERSION
            raise CoordinatorError(
                Errors.GROUP_ID_NOT_FOUND if new else Errors.ILLEGAL_GENERATION,
                f"Group {gid} does not exist (generation {generation}).",
            )
        return None

    def _any_stale(self, req: m.OffsetCommitRequest,
                   may_write: Callable[[str, int], bool]) -> bool:
        """Whether a known partition of the commit fails its member's epoch check: Kafka then
        refuses every known partition of it (STALE_MEMBER_EPOCH), writing none."""
        image = self.ctx.image
        for topic in req.topics:
            meta = image.topic_by_name(topic.name)
            if meta is None:
                continue
            for p in topic.partitions:
                if (0 <= p.partition_index < meta.num_partitions
                        and not may_write(meta.topic_id, p.partition_index)):
                    return True
        return False

    def _partition_error(self, topic: str, p: m.OffsetCommitRequestPartition,
                         stale: bool) -> Errors:
        meta = self.ctx.image.topic_by_name(topic)
        if meta is None or not 0 <= p.partition_index < meta.num_partitions:
            return Errors.UNKNOWN_TOPIC_OR_PARTITION
        if stale:
            return Errors.STALE_MEMBER_EPOCH
        metadata = p.committed_metadata or ""
        if len(metadata.encode("utf-8")) > self.ctx.config.offset_metadata_max_bytes:
            return Errors.OFFSET_METADATA_TOO_LARGE
        if p.committed_offset < 0:
            return Errors.INVALID_COMMIT_OFFSET_SIZE
        return Errors.NONE

    # ------------------------------------------------------------------ OffsetFetch

    def fetch(self, req: m.OffsetFetchRequest) -> m.OffsetFetchResponse:
        check_types(req)
        if not req.group_id:
            raise CoordinatorError(Errors.INVALID_GROUP_ID, "The group id is empty.")
        group = self.ctx.groups.get(req.group_id)
        dead = False
        if group is not None:
            row = type_of(group)
            row.check_offset_fetch(group, req)
            dead = row.is_dead(group)
        committed = {} if dead else self.offsets.get(req.group_id, {})
        if req.topics is None:
            by_topic: dict[str, list[m.OffsetFetchResponsePartition]] = {}
            for (topic, partition), value in sorted(committed.items()):
                by_topic.setdefault(topic, []).append(_fetched(partition, value))
            return m.OffsetFetchResponse(
                topics=[m.OffsetFetchResponseTopic(t, ps) for t, ps in by_topic.items()]
            )
        return m.OffsetFetchResponse(
            topics=[
                m.OffsetFetchResponseTopic(
                    t.name, [_fetched(p, committed.get((t.name, p))) for p in t.partition_indexes]
                )
                for t in req.topics
            ]
        )

    # ------------------------------------------------------------------ OffsetDelete

    def delete(self, req: m.OffsetDeleteRequest) -> m.OffsetDeleteResponse:
        check_types(req)
        gid = req.group_id
        group = self._existing_group(gid)
        if group is not None and not type_of(group).offsets_deletable(group):
            raise CoordinatorError(Errors.NON_EMPTY_GROUP, f"Group {gid} is not empty.")
        subscribed = self._subscribed_topics(group, strict=False) or set()
        committed = self.offsets.get(gid, {})
        deleted: set[tuple[str, int]] = set()  # one tombstone per partition, however often named
        topics = []
        for topic in req.topics:
            answers = []
            known = self.ctx.image.topic_by_name(topic.name) is not None
            for p in topic.partitions:
                error = Errors.NONE
                tp = (topic.name, p.partition_index)
                if not known:
                    error = Errors.UNKNOWN_TOPIC_OR_PARTITION
                elif topic.name in subscribed:
                    error = Errors.GROUP_SUBSCRIBED_TO_TOPIC
                elif tp in committed and tp not in deleted:
                    deleted.add(tp)
                    self.ctx.emit(Record(OffsetCommitKey(gid, *tp), None))
                answers.append(m.OffsetDeleteResponsePartition(p.partition_index, error))
            topics.append(m.OffsetDeleteResponseTopic(topic.name, answers))
        return m.OffsetDeleteResponse(topics=topics)

    # ------------------------------------------------------------------ DeleteGroups

    def delete_groups(self, req: m.DeleteGroupsRequest) -> m.DeleteGroupsResponse:
        check_types(req)
        results = []
        for gid in req.groups_names:
            try:
                self._delete_group(gid)
                results.append(m.DeletableGroupResult(gid))
            except CoordinatorError as e:
                results.append(m.DeletableGroupResult(gid, e.error, e.message))
        return m.DeleteGroupsResponse(results=results)

    def _existing_group(self, gid: str) -> object | None:
        """The group an OffsetDelete or DeleteGroups acts on (``None``: known only by its
        offsets); INVALID_GROUP_ID or GROUP_ID_NOT_FOUND otherwise."""
        if not gid:
            raise CoordinatorError(Errors.INVALID_GROUP_ID, "The group id is empty.")
        group = self.ctx.groups.get(gid)
        if (group is None and gid not in self.offsets) or (
            group is not None and type_of(group).is_dead(group)
        ):
            raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND, f"Group {gid} not found.")
        return group

    def _delete_group(self, gid: str) -> None:
        group = self._existing_group(gid)
        row = type_of(group) if group is not None else None
        if row is not None and not row.is_empty(group):
            raise CoordinatorError(Errors.NON_EMPTY_GROUP, f"Group {gid} is not empty.")
        for topic, partition in sorted(self.offsets.get(gid, {})):
            self.ctx.emit(Record(OffsetCommitKey(gid, topic, partition), None))
        if self._has_rebalance_history(gid):
            self.ctx.history.forget(gid)
        if row is not None:
            for record in row.tombstones(group):
                self.ctx.emit(record)

    def _has_rebalance_history(self, gid: str) -> bool:
        """Whether ``gid``'s rebalances are remembered (kept per group id, apart from the
        group object, so a converted group has it too)."""
        return gid in self.ctx.history

    # ------------------------------------------------------------------ replay & timers

    def replay(self, record: Record) -> None:
        key = record.key
        assert isinstance(key, OffsetCommitKey), key
        tp = (key.topic, key.partition)
        if record.value is None:
            committed = self.offsets.get(key.group_id)
            if committed is not None:
                committed.pop(tp, None)
                if not committed:
                    del self.offsets[key.group_id]
                    self._disarm_if_idle()
            return
        assert isinstance(record.value, OffsetCommitValue), record.value
        self.offsets.setdefault(key.group_id, {})[tp] = record.value
        if EXPIRE_TIMER not in self.ctx.timers:
            self._arm(self.ctx.now_ms + self.ctx.config.offsets_retention_check_interval_ms)

    def replay_many(
        self, commits: Iterable[tuple[str, str, int, OffsetCommitValue | None]]
    ) -> None:
        """``replay`` of each (group id, topic, partition, value or None) in order, without a
        ``Record`` per commit: the load path, where offset commits are most of the log."""
        offsets = self.offsets
        armed = EXPIRE_TIMER in self.ctx.timers
        for gid, topic, partition, value in commits:
            committed = offsets.get(gid)
            if value is None:
                if committed is not None:
                    committed.pop((topic, partition), None)
                    if not committed:
                        del offsets[gid]
                        if armed and not offsets:
                            self._disarm_if_idle()
                            armed = EXPIRE_TIMER in self.ctx.timers
                continue
            if committed is None:
                committed = offsets[gid] = {}
            committed[(topic, partition)] = value
            if not armed:
                self._arm(self.ctx.now_ms + self.ctx.config.offsets_retention_check_interval_ms)
                armed = True

    def on_timer(self, key: OffsetsTimer) -> None:
        if key != EXPIRE_TIMER:
            return
        expired = list(self._expired(MAX_EXPIRED_PER_CHECK))
        for gid, topic, partition in expired:
            self.ctx.emit(Record(OffsetCommitKey(gid, topic, partition), None))
        if len(expired) >= MAX_EXPIRED_PER_CHECK or \
                self._delete_expired_groups(MAX_EXPIRED_PER_CHECK) >= MAX_EXPIRED_PER_CHECK:
            self._arm(self.ctx.now_ms)  # more to do: the next tick carries on
        elif self.offsets or self.ctx.groups:
            self._arm(self.ctx.now_ms + self.ctx.config.offsets_retention_check_interval_ms)

    def keep_watch(self) -> None:
        """At a turn's end: the check is armed while there are groups (a group that never
        committed is deleted by it once empty) or offsets, and only then (a shard with
        neither has no timer left)."""
        if EXPIRE_TIMER not in self.ctx.timers and (self.ctx.groups or self.offsets):
            self._arm(self.ctx.now_ms + self.ctx.config.offsets_retention_check_interval_ms)
        self._disarm_if_idle()

    def _disarm_if_idle(self) -> None:
        """No offsets and no groups: nothing for the check to do, so no timer."""
        if not (self.ctx.groups or self.offsets):
            self.ctx.timers.cancel(EXPIRE_TIMER)

    def _delete_expired_groups(self, limit: int) -> int:
        """Delete up to ``limit`` empty groups without offsets whose row lets them expire;
        how many were."""
        doomed = [gid for gid, group in self.ctx.groups.items()
                  if gid not in self.offsets and (row := type_of(group)).expires_when_empty
                  and row.is_empty(group) and not row.is_dead(group)][:limit]
        for gid in doomed:
            self._delete_group(gid)
        return len(doomed)

    def _arm(self, deadline_ms: int) -> None:
        self.ctx.timers.schedule(EXPIRE_TIMER, deadline_ms)

    def _expired(self, limit: int) -> Iterator[tuple[str, str, int]]:
        """The (group, topic, partition) offsets due to expire now, at most ``limit``."""
        now = self.ctx.now_ms
        retention_ms = self.ctx.config.offsets_retention_minutes * 60_000
        count = 0
        for gid in sorted(self.offsets):
            group = self.ctx.groups.get(gid)
            if not self._may_expire(group):
                continue
            subscribed = self._subscribed_topics(group, strict=True)
            assert subscribed is not None  # _may_expire said the subscriptions are known
            empty_since = (
                type_of(group).offsets_empty_since_ms(group) if group is not None else None
            )
            for (topic, partition), value in sorted(self.offsets[gid].items()):
                if topic in subscribed:
                    continue
                if value.expire_timestamp != -1:
                    due = now >= value.expire_timestamp
                else:
                    base = max(value.commit_timestamp, empty_since or value.commit_timestamp)
                    due = now - base >= retention_ms
                if due:
                    yield gid, topic, partition
                    count += 1
                    if count >= limit:
                        return

    def _may_expire(self, group: object | None) -> bool:
        """Kafka's ``offsetExpirationCondition`` is present: some offsets of the group may go
        (always for a simple group: it subscribes to nothing)."""
        return group is None or type_of(group).may_expire_offsets(group)

    def _subscribed_topics(self, group: object | None, strict: bool) -> set[str] | None:
        """The topic names the group's members subscribe to (none for a simple group).
        ``strict``: ``None`` unless every member's subscription is known (expiry must not
        guess); otherwise the union of those that are."""
        if group is None:
            return set()
        return type_of(group).subscribed_topics(group, self.ctx.image, strict)


# ------------------------------------------------------------------------------ helpers


def _fetched(partition: int, value: OffsetCommitValue | None) -> m.OffsetFetchResponsePartition:
    if value is None:
        return m.OffsetFetchResponsePartition(partition, NO_OFFSET, -1, "")
    return m.OffsetFetchResponsePartition(
        partition, value.offset, value.leader_epoch, value.metadata
    )


def refused_commit(req: m.OffsetCommitRequest, e: CoordinatorError) -> m.OffsetCommitResponse:
    return m.OffsetCommitResponse(
        error_code=e.error,
        error_message=e.message,
        topics=[
            m.OffsetCommitResponseTopic(
                t.name,
                [m.OffsetCommitResponsePartition(p.partition_index, e.error) for p in t.partitions],
            )
            for t in req.topics
        ],
    )
