"""A consumer actor's handling of real records (``actors/clients/real_records.py``), with a
stand-in for the upstream reader: records go to the user's function in batches and count as
processed only once it returned; a function that raises gets the same records again, none is
skipped; a position the log no longer holds starts over at the log's start; a share consumer
acknowledges ACCEPT after its function returned and RELEASE otherwise."""

from __future__ import annotations

import asyncio

from kafka.record.default_records import DefaultRecordBatchBuilder

from actors.clients import real_records
from actors.clients.real_records import RealRecords, ShareRecords
from actors.upstream.reader import OFFSET_OUT_OF_RANGE, PartitionRead, UpstreamReader
from actors.upstream.settings import UpstreamSettings
from actors.upstream.view import UpstreamView
from protocol import messages as m
from protocol.client.stream_progress import StreamProgress
from protocol.share.messages import ACK_ACCEPT, ACK_RELEASE

TP = ("orders", 0)
SETTINGS = UpstreamSettings.parse("127.0.0.1:9")  # never dialled: the reader is a stand-in


def _batch(base: int, n: int) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    for i in range(n):
        b.append(i, timestamp=1_000 + i, key=None, value=f"v{base + i}".encode(), headers=[])
    data = bytearray(b.build())
    data[0:8] = base.to_bytes(8, "big")
    return bytes(data)


LOG = _batch(0, 4) + _batch(4, 3)  # offsets 0..6


class _Reader:
    def __init__(self, log: bytes = LOG, error: int = 0, start: int = 0) -> None:
        self.log, self.error, self.start = log, error, start

    async def fetch(self, offsets):
        return {tp: PartitionRead(self.error, 7, self.start, self.log) for tp in offsets}

    async def earliest(self, tps):
        return {tp: self.start for tp in tps}

    async def batches(self, tp, ranges):
        return None if self.error else self.log


def _owning(position: int) -> StreamProgress:
    p = StreamProgress("g")
    p.assigned([TP])
    (fetch,) = p.requests("m", 1, 0.0)
    p.on_reply(fetch, m.OffsetFetchResponse(topics=[m.OffsetFetchResponseTopic(
        "orders", [m.OffsetFetchResponsePartition(0, committed_offset=position)])]), 0.0)
    return p


def _reading(process, reader: _Reader, **kw) -> RealRecords:
    rr = RealRecords(SETTINGS, process, **kw)
    rr.reader = reader
    return rr


def test_records_go_to_the_function_in_batches_from_the_position_and_then_count_as_processed():
    seen = []
    rr = _reading(lambda records: seen.append([r.offset for r in records]), _Reader(),
                  max_poll_records=2)
    progress = _owning(3)
    assert asyncio.run(rr.step([progress])) == 4
    assert seen == [[3, 4], [5, 6]]
    assert progress.positions() == {TP: 7}


def test_a_function_that_raises_gets_the_same_records_again_and_none_is_skipped(monkeypatch):
    monkeypatch.setattr(real_records, "RETRY_S", 0.0)
    calls = []

    def flaky(records):
        calls.append([r.offset for r in records])
        if len(calls) == 1:
            raise RuntimeError("the database is away")

    rr = _reading(flaky, _Reader())
    progress = _owning(5)
    assert asyncio.run(rr.step([progress])) == 0
    assert progress.positions() == {TP: 5} and "database is away" in rr.errors[0]
    assert asyncio.run(rr.step([progress])) == 2
    assert calls == [[5, 6], [5, 6]] and progress.positions() == {TP: 7}


def test_a_position_the_log_no_longer_holds_starts_over_at_the_logs_start():
    rr = _reading(None, _Reader(error=OFFSET_OUT_OF_RANGE, start=40))
    progress = _owning(3)
    asyncio.run(rr.step([progress]))
    assert progress.positions() == {TP: 40}


def test_a_share_range_is_accepted_after_the_function_returned_and_released_otherwise():
    got = []
    share = ShareRecords(SETTINGS, lambda records: got.append([r.offset for r in records]))
    share.reader = _Reader()
    assert asyncio.run(share.handle("orders", 0, 2, 5)) == ACK_ACCEPT
    assert got == [[2, 3, 4, 5]]

    def failing(records):
        raise ValueError("bad record")

    share.process = failing
    assert asyncio.run(share.handle("orders", 0, 2, 5)) == ACK_RELEASE
    share.reader = _Reader(error=OFFSET_OUT_OF_RANGE)  # the records cannot be read now
    share.process = lambda records: got.append(records)
    assert asyncio.run(share.handle("orders", 0, 2, 5)) == ACK_RELEASE
    assert len(got) == 1


class _Upstream(UpstreamReader):
    """The reader's own logic over reads given here (no upstream dialled)."""

    def __init__(self, reads: list[PartitionRead]) -> None:
        super().__init__(UpstreamView(SETTINGS))
        self.reads = reads

    async def fetch(self, offsets, partition_max_bytes=0):
        return {tp: self.reads.pop(0) for tp in offsets}


def test_a_read_that_brings_nothing_below_the_high_watermark_is_not_read_not_a_gap():
    # Tansu, loaded, answered a share consumer's read of 50..59 with no records: accepting
    # the range would have lost ten records never processed. Released, they come again.
    empty = PartitionRead(0, 100, 0, b"")
    assert asyncio.run(_Upstream([empty]).batches(TP, [(50, 59)])) is None
    full = PartitionRead(0, 7, 0, LOG)
    assert asyncio.run(_Upstream([full]).batches(TP, [(2, 5)])) == LOG


def test_offsets_at_or_past_the_high_watermark_that_no_batch_holds_are_gaps():
    # A log truncated below what was acquired: nothing to read there, ever.
    past = PartitionRead(0, 50, 0, b"")
    assert asyncio.run(_Upstream([past]).batches(TP, [(50, 59)])) == b""
    # Read up to its end, then nothing more: what the batches held, the rest gaps.
    assert asyncio.run(_Upstream([PartitionRead(0, 7, 0, LOG), PartitionRead(0, 7, 0, b"")])
                       .batches(TP, [(2, 9)])) == LOG
