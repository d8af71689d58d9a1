"""Which share-partitions a share group may assign: only those whose state is initialised.

Kafka 4.x assigns a share-partition only once its share coordinator holds its state: a
heartbeat naming a subscribed topic whose partitions are not initialised writes them as
*initializing* (``ShareGroupStatePartitionMetadata``, record 15), the group coordinator asks
the share coordinator to initialise them in the background (``InitializeShareGroupState``),
and when that succeeds writes them as *initialized* and bumps the group epoch, so the next
target covers them. Until then they are in no member's assignment. Members that join together
therefore see nothing on their first heartbeat and a balanced assignment on the next, rather
than the first to join taking every partition while the others wait for the assignment
interval and their next heartbeat (bench/groups.py's share run, docs/decisions.md).

Cohort keeps both coordinators in one shard, and a share-partition's state starts on its first
fetch (at ``share.auto.offset.reset``, as Kafka's share-partition leader resolves an
initialised start offset of -1), so initialising has nothing to write but the record: it
completes on the shard's next timer tick (``ShareInitialization``), a turn after the heartbeat
that asked for it, as Kafka's completes after its round trip to the share coordinator. A load
that finds partitions still initialising arms that timer again.

A topic's partitions are initialised as a prefix (0..n-1): a topic only grows, and its new
partitions are asked for by the next heartbeat that names it.
"""

from __future__ import annotations

from protocol.context import ShardContext
from protocol.records import Record
from protocol.share.group import ShareGroup
from protocol.share.records import (
    PartitionMap,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
)
from protocol.share.sessions import ShareInitialization

INITIALIZED = "share-partitions initialized"


class ShareInitializations:
    """A shard's share-partition initialisations: asked for, completed, replayed."""

    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx

    def assignable(self, group: ShareGroup, topic_id: str, num_partitions: int) -> int:
        """How many of the topic's partitions (0..n-1) the group may assign now."""
        return min(num_partitions, len(group.initialized.get(topic_id, ())))

    def ask(self, group: ShareGroup, topic_names: tuple[str, ...]) -> None:
        """Initialise the partitions of ``topic_names`` the group has not initialised and is
        not initialising (a heartbeat naming them: Kafka's
        ``maybeCreateInitializeShareGroupStateRequest``)."""
        image = self.ctx.image
        wanted: PartitionMap = {}
        for name in topic_names:
            topic = image.topic_by_name(name)
            if topic is None:
                continue
            known = len(group.initialized.get(topic.topic_id, ())) + len(
                group.initializing.get(topic.topic_id, ()))
            if known < topic.num_partitions:
                wanted[topic.topic_id] = tuple(range(known, topic.num_partitions))
        if not wanted:
            return
        initializing = dict(group.initializing)
        for topic_id, partitions in wanted.items():
            initializing[topic_id] = initializing.get(topic_id, ()) + partitions
        self._write(group, initializing, group.initialized)  # its replay arms the timer

    def on_timer(self, group: ShareGroup) -> bool:
        """Complete the group's initialisation: every partition initialising becomes
        assignable. True if anything did (the group's epoch is then bumped)."""
        if not group.initializing:
            return False
        initialized = dict(group.initialized)
        for topic_id, partitions in group.initializing.items():
            initialized[topic_id] = tuple(sorted({*initialized.get(topic_id, ()), *partitions}))
        self._write(group, {}, initialized)
        return True

    def forget_deleted_topics(self, group: ShareGroup) -> None:
        """Drop the topics the image no longer has (a topic made again under the same name
        has a new id, and is initialised anew)."""
        image = self.ctx.image

        def kept(parts: PartitionMap) -> PartitionMap:
            return {t: p for t, p in parts.items() if image.topic(t) is not None}

        initialized, initializing = kept(group.initialized), kept(group.initializing)
        if initialized != group.initialized or initializing != group.initializing:
            self._write(group, initializing, initialized)

    def after_replay(self, group: ShareGroup, record: Record) -> None:
        """Partitions initialising (asked for in this turn, or found by a load) complete on
        the shard's next tick."""
        if type(record.key) is ShareGroupStatePartitionMetadataKey and group.initializing:
            self.ctx.timers.schedule(ShareInitialization(group.group_id), self.ctx.now_ms)

    def _write(self, group: ShareGroup, initializing: PartitionMap,
               initialized: PartitionMap) -> None:
        self.ctx.emit(Record(ShareGroupStatePartitionMetadataKey(group.group_id),
                             ShareGroupStatePartitionMetadataValue(initializing, initialized)))
