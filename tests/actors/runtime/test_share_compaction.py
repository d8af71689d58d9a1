"""A share group's log through the runtime's compaction: the share-partitions' state records
are compacted per key, and a deleted share group's metadata tombstone takes every record of
the group with it (its share-partitions included), so the compacted log rebuilds the same
shard."""

from __future__ import annotations

from actors.runtime.compaction import CompactedState
from protocol import messages as m
from protocol.codec import decode_record, encode_record
from protocol.shard import GroupCoordinatorShard
from protocol.share.messages import ACK_ACCEPT, AcknowledgementBatch
from protocol.share.records import SharePartitionStateKey
from tests.protocol.share.helpers import (
    GROUP,
    acknowledge,
    fetch,
    heartbeat,
    initialize,
    join,
    new_shard,
)


def compacted_replay(shard: GroupCoordinatorShard, log: list) -> GroupCoordinatorShard:
    state = CompactedState()
    state.add_batch([encode_record(r) for r in log])
    fresh = GroupCoordinatorShard(config=shard.config, metadata=shard.image, now_ms=shard.now_ms)
    for blob in state.records():
        fresh.replay(decode_record(blob))
    return fresh


def test_a_compacted_share_log_rebuilds_the_share_group_with_its_locks():
    shard, log = new_shard(initialized=False), []
    shard.emit = lambda r, emit=shard.emit: (emit(r), log.append(r))  # type: ignore[method-assign]
    initialize(shard, logged=True)
    join(shard, "a")
    join(shard, "b")
    for _ in range(3):
        fetch(shard, "a", ("orders", 0), end=30, max_records=5)
        acknowledge(shard, "a", "orders", 0, AcknowledgementBatch(0, 2, [ACK_ACCEPT]))
    fetch(shard, "b", ("orders", 1), end=30, max_records=5)
    fresh = compacted_replay(shard, log)
    assert fresh.groups == shard.groups
    states = [r for r in log if type(r.key) is SharePartitionStateKey]
    assert len(states) > 2  # several writes of partition 0 compact to its latest
    assert fresh.next_deadline_ms() == shard.next_deadline_ms()


def test_a_deleted_share_group_leaves_nothing_in_the_compacted_log():
    shard, log = new_shard(), []
    shard.emit = lambda r, emit=shard.emit: (emit(r), log.append(r))  # type: ignore[method-assign]
    join(shard, "a")
    fetch(shard, "a", ("orders", 0), end=10)
    heartbeat(shard, "a", -1)
    assert shard.handle(m.DeleteGroupsRequest([GROUP])).response.results[0].error_code == 0
    state = CompactedState()
    state.add_batch([encode_record(r) for r in log])
    assert state.records() == []
