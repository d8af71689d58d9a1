"""A partition's load path: journal -> log batches (+ a snapshot) -> ``load_shard``.

The events of ``test_stateful`` write their records the way ``OffsetsPartition`` does (one
batch per event, the compacted state as the snapshot at some point), then the partition's
own loader rebuilds a shard that must equal the one that wrote them, with or without the
snapshot, and whatever batch the snapshot was taken after.

The bulk loader must also equal the reference load (every record of the log decoded and
replayed one by one) on random logs that mix those group records with offset commits, their
tombstones and whole-group deletions, cut into batches of any size (a key may repeat within
one) and snapshotted anywhere.
"""

from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule, run_state_machine_as_test

from actors.runtime.compaction import CompactedState
from actors.runtime.loading import load_shard
from actors.runtime.log import PartitionLog
from protocol import messages as m
from protocol.codec import encode_record
from protocol.offsets.timers import RetentionCheck
from protocol.records import OffsetCommitKey, OffsetCommitValue, Record
from protocol.shard import GroupCoordinatorShard
from tests.actors.runtime.reference import load_shard_by_record
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
    from protocol.consumer.records import (
        ConsumerGroupMetadataKey,
        ConsumerGroupMetadataValue,
        ConsumerGroupTargetAssignmentMetadataKey,
        ConsumerGroupTargetAssignmentMetadataValue,
    )
    from protocol.records import Record

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


def assert_same_shard(reference: GroupCoordinatorShard, bulk: GroupCoordinatorShard) -> None:
    assert_same_groups(reference, bulk)
    assert bulk.offsets.offsets == reference.offsets.offsets  # (a snapshot reorders keys)
    # Member timers alike; the retention check armed while offsets exist (replaying every
    # record also arms it for an offset a later tombstone deletes, which compaction skips).
    retention = RetentionCheck()
    assert set(bulk.timers._deadline) - {retention} == set(reference.timers._deadline) - {
        retention
    }
    assert (retention in bulk.timers) == bool(bulk.offsets.offsets) or retention in (
        reference.timers
    )
    fetch = m.OffsetFetchRequest(group_id="g", topics=None)
    assert bulk.handle(fetch).response == reference.handle(fetch).response


class BulkLoadedLog(ReplayedEvents):
    """Group events, plus offset commits, their tombstones and group deletions."""

    @rule(
        group=st.sampled_from(["g", "h", "simple"]),
        topic=st.sampled_from(["foo", "bar"]),
        partitions=st.lists(st.integers(0, 3), min_size=1, max_size=4),
        offset=st.integers(0, 1000),
    )
    def commit_offsets(self, group: str, topic: str, partitions: list[int], offset: int) -> None:
        batch = [
            Record(OffsetCommitKey(group, topic, p), OffsetCommitValue(offset + p, 1, "", 0, -1))
            for p in partitions
        ]
        for record in batch:
            self.shard.replay(record)
        self.journal.append(batch)

    @rule(
        group=st.sampled_from(["g", "h", "simple"]),
        topic=st.sampled_from(["foo", "bar"]),
        partition=st.integers(0, 3),
    )
    def delete_offset(self, group: str, topic: str, partition: int) -> None:
        record = Record(OffsetCommitKey(group, topic, partition), None)
        self.shard.replay(record)
        self.journal.append([record])

    @rule()
    def delete_groups(self) -> None:
        """DeleteGroups of every group: the empty ones go, with their offsets."""
        self._record(self.shard.handle(m.DeleteGroupsRequest(["g", "h", "simple"])))

    def teardown(self) -> None:
        records = [r for batch in self.journal for r in batch]
        for cut in (1, 3, 1000):  # records per batch: a key may repeat within one
            batches = [records[i : i + cut] for i in range(0, len(records), cut)]
            for snapshot_after in {None, 0, len(batches) // 2, len(batches) - 1}:
                with tempfile.TemporaryDirectory() as d:
                    write(d, batches, snapshot_after)
                    reference, _ = load_shard_by_record(
                        PartitionLog(d), self.shard.config, self.shard.image
                    )
                    bulk, _, _ = load_shard(PartitionLog(d), self.shard.config, self.shard.image)
                    bulk.now_ms = reference.now_ms
                    try:
                        assert_same_shard(reference, bulk)
                    except AssertionError as e:
                        raise AssertionError(
                            f"{cut} records per batch, snapshot after {snapshot_after}: {e}"
                        ) from e


def test_the_bulk_load_builds_what_replaying_every_record_builds():
    run_state_machine_as_test(BulkLoadedLog, settings=SETTINGS)


def test_a_reloaded_member_s_session_runs_for_its_group_s_configured_timeout():
    # A streams group whose session timeout is a group config (4 s, not the broker's 45 s):
    # after a reload every session restarts from load time, for the group's own timeout.
    # (Found by `cohort chaos --streams-groups`: loaded before the configs were applied, a
    # killed member kept its tasks for 45 s after a partition restart.)
    from protocol.config import CoordinatorConfig, GroupConfig
    from protocol.metadata import MetadataImage, TopicMetadata
    from protocol.streams.sessions import StreamsMemberSession
    from tests.protocol.streams.driver import StreamsMember, topology

    config = CoordinatorConfig(group_streams_min_session_timeout_ms=1_000)
    image = MetadataImage([TopicMetadata("input-id", "input", 2)])
    configs = {"app": GroupConfig(streams_session_timeout_ms=4_000)}
    shard = GroupCoordinatorShard(config, image)
    shard.set_group_configs(configs)
    written: list[Record] = []
    shard.emit = lambda r, emit=shard.emit: (written.append(r), emit(r))  # type: ignore
    assert StreamsMember(shard, "m", topology=topology()).join().error_code == 0
    with tempfile.TemporaryDirectory() as d:
        write(d, [written], None)
        loaded, _, _ = load_shard(PartitionLog(d), config, image, group_configs=configs,
                                  clock_ms=lambda: 100_000)
    assert loaded.timers.deadline(StreamsMemberSession("app", "m")) == 104_000
