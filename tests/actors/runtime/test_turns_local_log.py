"""A partition's turns over the local log, without Ray: where an append runs, and that running
it on the event loop keeps every guarantee the worker thread gave.

A small turn's append (a write and an fsync) runs on the loop itself, a large one in a worker
thread, and a slow one sends the next appends to a thread until one is quick again; either way
a reply leaves only once its record is on disk, a failed write is answered
COORDINATOR_NOT_AVAILABLE and recovered to what was acknowledged, and a zombie's write is
refused before it lands.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from actors.runtime import turn_log
from actors.runtime.fileops import FileOps
from actors.runtime.log import QUICK_APPEND_BYTES, PartitionLog
from actors.runtime.log_frames import scan_frames
from actors.runtime.metrics import NoMetrics
from actors.runtime.turns import PartitionTurns
from protocol import messages as m
from protocol.codec import decode_record
from protocol.errors import Errors
from protocol.records import OffsetCommitKey
from tests.actors.runtime.faults import FlagFileFaults
from tests.actors.runtime.test_turns import (
    CONFIG,
    commit,
    commit_error,
    committed,
    eventually,
    fetch_image,
    join,
    run,
)


class WatchedDisk(FileOps):
    """The real disk, noting which thread each fsync ran in; ``delay_s`` makes it slow."""

    def __init__(self) -> None:
        self.fsync_threads: list[int] = []
        self.delay_s = 0.0

    def fsync(self, fd: int) -> None:
        self.fsync_threads.append(threading.get_ident())
        time.sleep(self.delay_s)
        os.fsync(fd)


class Threads:
    """``in_thread`` that counts what it was handed."""

    def __init__(self) -> None:
        self.names: list[str] = []

    async def __call__(self, fn: Callable, *args: object) -> object:
        self.names.append(fn.__name__)
        return await asyncio.to_thread(fn, *args)


async def started(directory: Path, ops: FileOps | None = None,
                  threads: Threads | None = None) -> PartitionTurns:
    turns = PartitionTurns("offsets-0", PartitionLog(directory, file_ops=ops), CONFIG,
                           fetch_image, in_thread=threads or Threads())
    turns.task = asyncio.get_running_loop().create_task(turns.run())  # type: ignore[attr-defined]
    await eventually(lambda: turns.state == "active")
    return turns


def on_disk(directory: Path) -> list[tuple[str, int]]:
    """(group, offset) of every commit in the log's segments, read without opening the log
    (which would take the epoch and fence the partition under test)."""
    found = []
    for segment in sorted(directory.glob("*.log")):
        batches, _, _ = scan_frames(segment)
        for batch in batches:
            for data in batch:
                record = decode_record(data)
                if type(record.key) is OffsetCommitKey and record.value is not None:
                    found.append((record.key.group_id, record.value.offset))
    return found


def big_commit(group_id: str, offset: int) -> m.OffsetCommitRequest:
    """A commit with 1,000 bytes of metadata: a hundred of them outgrow a quick append."""
    return m.OffsetCommitRequest(group_id=group_id, topics=[m.OffsetCommitRequestTopic(
        "foo", [m.OffsetCommitRequestPartition(0, offset, committed_metadata="x" * 1000)]
    )])


def test_a_small_turn_is_made_durable_on_the_loop_and_a_large_one_in_a_thread(tmp_path):
    async def scenario() -> None:
        disk, threads = WatchedDisk(), Threads()
        turns = await started(tmp_path, disk, threads)
        loop_thread = threading.get_ident()
        disk.fsync_threads.clear()
        assert commit_error((await turns.handle_batch([commit("g", 1)]))[0]) == Errors.NONE
        assert disk.fsync_threads == [loop_thread], "one fsync, on the loop"
        assert "_timed_append" not in threads.names
        assert on_disk(tmp_path) == [("g", 1)], "on disk before the reply came back"

        disk.fsync_threads.clear()
        batch = [big_commit(f"big-{i}", i) for i in range(100)]
        assert QUICK_APPEND_BYTES < 100 * 1000, "a hundred of them outgrow a quick append"
        replies = await turns.handle_batch(batch)
        assert all(commit_error(r) == Errors.NONE for r in replies)
        assert threads.names.count("_timed_append") == 1
        assert len(disk.fsync_threads) == 1 and disk.fsync_threads[0] != loop_thread
        assert len(on_disk(tmp_path)) == 101

    run(scenario)


def test_a_slow_append_sends_the_next_ones_to_a_thread_until_one_is_quick(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(turn_log, "LOOP_APPEND_MAX_S", 0.2)

    async def scenario() -> None:
        disk, threads = WatchedDisk(), Threads()
        turns = await started(tmp_path, disk, threads)
        loop_thread = threading.get_ident()

        def fsynced_on_loop() -> bool:
            return disk.fsync_threads[-1] == loop_thread

        disk.delay_s = 0.3  # the disk turns slow: this append still ran on the loop
        await turns.handle_batch([commit("g", 1)])
        assert fsynced_on_loop()
        await turns.handle_batch([commit("g", 2)])
        assert not fsynced_on_loop(), "after a slow append, the next runs in a thread"
        disk.delay_s = 0.0  # quick again: the one that finds out still ran in the thread
        await turns.handle_batch([commit("g", 3)])
        assert not fsynced_on_loop()
        await turns.handle_batch([commit("g", 4)])
        assert fsynced_on_loop(), "after a quick append, back on the loop"
        assert [o for _, o in on_disk(tmp_path)] == [1, 2, 3, 4]

    run(scenario)


def test_a_failed_append_on_the_loop_is_answered_retriably_and_recovers_the_acknowledged(
    tmp_path
):
    flag = tmp_path / "disk-full"
    directory = tmp_path / "log"

    async def scenario() -> None:
        turns = await started(directory, FlagFileFaults(flag, partial=True))
        assert commit_error((await turns.handle_batch([commit("g", 1)]))[0]) == Errors.NONE
        flag.touch()
        [reply] = await turns.handle_batch([commit("g", 2)])
        assert commit_error(reply) == Errors.COORDINATOR_NOT_AVAILABLE
        flag.unlink()
        await eventually(lambda: turns.state == "active")
        assert turns.recoveries == 1
        assert list(committed(turns.shard)["g"].values()) == [1]
        assert on_disk(directory) == [("g", 1)], "the torn write was cut"
        assert commit_error((await turns.handle_batch([commit("g", 3)]))[0]) == Errors.NONE
        assert on_disk(directory) == [("g", 1), ("g", 3)]

    run(scenario)


def test_a_zombie_appending_on_the_loop_is_fenced_and_its_record_never_lands(tmp_path):
    async def scenario() -> None:
        old = await started(tmp_path)
        assert commit_error((await old.handle_batch([commit("g", 1)]))[0]) == Errors.NONE
        new = await started(tmp_path)  # a newer incarnation opens the log: the next epoch
        [reply] = await old.handle_batch([commit("g", 2)])
        assert commit_error(reply) == Errors.NOT_COORDINATOR
        assert old.state == "fenced"
        assert on_disk(tmp_path) == [("g", 1)]
        assert commit_error((await new.handle_batch([commit("g", 3)]))[0]) == Errors.NONE
        assert on_disk(tmp_path) == [("g", 1), ("g", 3)]

    run(scenario)


class CountingMetrics(NoMetrics):
    """What the partition reported per turn, summed."""

    def __init__(self) -> None:
        self.busy_s = 0.0
        self.rebalances = 0

    def turn(self, busy_s: float, queue_size: int, rebalances: dict[str, int]) -> None:
        self.busy_s += busy_s
        self.rebalances += rebalances.get("consumer_group_rebalance", 0)


def test_every_turns_epoch_bumps_reach_the_metrics_though_they_are_sent_summed(tmp_path):
    async def scenario() -> None:
        metrics = CountingMetrics()
        turns = PartitionTurns("offsets-0", PartitionLog(tmp_path), CONFIG, fetch_image,
                               metrics=metrics)
        task = asyncio.get_running_loop().create_task(turns.run())
        await eventually(lambda: turns.state == "active")
        for member in ("m1", "m2", "m3"):  # three turns, each bumps the group epoch
            [reply] = await turns.handle_batch([join(member)])
            assert reply.error_code == Errors.NONE
        assert turns.shard.groups["g"].group_epoch == 3
        await eventually(lambda: metrics.rebalances == 3)  # an idle turn sends the rest
        assert metrics.busy_s > 0
        task.cancel()

    run(scenario)


def test_a_partition_whose_log_is_damaged_before_its_tail_reports_failed_and_serves_nothing(
    tmp_path,
):
    async def scenario() -> None:
        turns = PartitionTurns("offsets-0", PartitionLog(tmp_path, segment_max_bytes=200),
                               CONFIG, fetch_image)
        task = asyncio.get_running_loop().create_task(turns.run())
        await eventually(lambda: turns.state == "active")
        for offset in range(1, 12):  # a few commits per 200-byte segment
            assert commit_error((await turns.handle_batch([commit("g", offset)]))[0]) == 0
        task.cancel()
        turns.storage.close()
        assert len(list(tmp_path.glob("*.log"))) > 2
        first = sorted(tmp_path.glob("*.log"))[0]
        data = bytearray(first.read_bytes())
        data[20] ^= 0x01  # a payload byte of the first (acknowledged) commit
        first.write_bytes(bytes(data))

        again = PartitionTurns("offsets-0", PartitionLog(tmp_path), CONFIG, fetch_image)
        task = asyncio.get_running_loop().create_task(again.run())
        await eventually(lambda: again.state == "failed")
        assert first.name in again.failure and "byte offset 0" in again.failure
        [reply] = await again.handle_batch([commit("g", 99)])
        assert commit_error(reply) == Errors.COORDINATOR_NOT_AVAILABLE
        assert first.read_bytes() == bytes(data), "every byte kept"
        task.cancel()

    run(scenario)


def test_a_turn_whose_records_outgrow_one_frame_is_written_split_not_failed_as_a_bug(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    from actors.runtime import log as log_module
    from actors.runtime import log_frames

    monkeypatch.setattr(log_frames, "MAX_BATCH_BYTES", 4096)  # a frame's bound, made small
    monkeypatch.setattr(log_module, "MAX_BATCH_BYTES", 4096, raising=False)  # where 3c2b7f1 read it

    async def scenario() -> None:
        turns = await started(tmp_path)
        parts = [m.OffsetCommitRequestPartition(p, 100 + p, committed_metadata="x" * 2000)
                 for p in range(4)]  # ~8 KB of records: two frames' worth
        [reply] = await turns.handle_batch([m.OffsetCommitRequest(
            group_id="g", topics=[m.OffsetCommitRequestTopic("foo", parts)])])
        assert [p.error_code for p in reply.topics[0].partitions] == [Errors.NONE] * 4
        assert turns.turn_failures == 0 and turns.state == "active"
        assert sorted(on_disk(tmp_path)) == [("g", 100 + p) for p in range(4)]

        again = await started(tmp_path)
        assert committed(again.shard) == {"g": {("foo", p): 100 + p for p in range(4)}}

    run(scenario)
