"""A partition's load path: journal -> log batches (+ a snapshot) -> ``load_shard``.

The events of ``test_stateful`` write their records the way ``OffsetsPartition`` does (one
batch per event, the compacted state as the snapshot at some point), then the partition's
own loader rebuilds a shard that must equal the one that wrote them, with or without the
snapshot, and whatever batch the snapshot was taken after.
"""

from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from actors.runtime.compaction import CompactedState
from actors.runtime.log import PartitionLog
from actors.runtime.partition import load_shard
from protocol.codec import encode_record
from tests.protocol.test_replay import ReplayedEvents, assert_same_groups

SETTINGS = settings(
    max_examples=40,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def write(directory: str, journal: list[list], snapshot_after: int | None) -> int:
    """Write the journal as a partition would; return how many records a load reads back."""
    log = PartitionLog(directory)
    log.load()
    compacted = CompactedState()
    to_read = 0
    for i, batch in enumerate(journal):
        encoded = [encode_record(r) for r in batch]
        log.append(encoded)
        for r, data in zip(batch, encoded, strict=True):
            compacted.add(r, data)
        to_read += len(batch)
        if i == snapshot_after:
            log.write_snapshot(compacted.records())
            to_read = len(compacted)
    log.close()
    return to_read


class LoadedFromDisk(ReplayedEvents):
    def teardown(self) -> None:
        journal = [b for b in self.journal if b]
        for snapshot_after in {None, 0, len(journal) // 2, len(journal) - 1}:
            with tempfile.TemporaryDirectory() as d:
                expected_records = write(d, journal, snapshot_after)
                shard, _, stats = load_shard(
                    PartitionLog(d), self.shard.config, self.shard.image
                )
                shard.now_ms = self.shard.now_ms
                assert stats["records"] == expected_records
                try:
                    assert_same_groups(self.shard, shard)
                except AssertionError as e:
                    raise AssertionError(f"snapshot after batch {snapshot_after}: {e}") from e


def test_snapshot_plus_tail_loads_the_same_state_as_the_full_log():
    run_state_machine_as_test(LoadedFromDisk, settings=SETTINGS)


def test_a_snapshot_holds_only_the_latest_record_of_each_key(tmp_path):
    from protocol.records import (
        ConsumerGroupMetadataKey,
        ConsumerGroupMetadataValue,
        ConsumerGroupTargetAssignmentMetadataKey,
        ConsumerGroupTargetAssignmentMetadataValue,
        Record,
    )

    compacted = CompactedState()
    records = [
        Record(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(1)),
        Record(ConsumerGroupTargetAssignmentMetadataKey("g"),
               ConsumerGroupTargetAssignmentMetadataValue(1)),
        Record(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(2)),
        Record(ConsumerGroupMetadataKey("h"), ConsumerGroupMetadataValue(1)),
        Record(ConsumerGroupMetadataKey("h"), None),
    ]
    for r in records:
        compacted.add(r, encode_record(r))
    assert compacted.records() == [encode_record(records[1]), encode_record(records[2])]
    assert compacted.size_bytes == sum(len(b) for b in compacted.records())
