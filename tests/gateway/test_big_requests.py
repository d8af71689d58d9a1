"""A big request does not stall its listener's event loop: its decoding, translation, the
shard's part of its turn and its reply's encoding run on a worker thread, so the loop keeps
answering other clients (issue 30's wire fuzzer found one DescribeGroups of 1 MB holding a
partition's loop for 4 s, and a 10 KB FindCoordinator for 170 ms). No Ray: a partition's
listener over ``MemoryStorage``, real sockets. The loop's stall: ``LoopStall`` (the CPU time its
own thread spends between two wake-ups of a 2 ms timer, which a busy machine does not inflate)."""

from __future__ import annotations

import asyncio
import gc

import pytest
from kio.serial import entity_reader

from actors.gateway import broker as broker_module
from actors.tools.fuzz_run import read_frame
from actors.tools.wire_tokens import framed, request_tokens
from protocol.wire.codec import holds_entries
from protocol.wire.codec import response_schema as load_response_schema
from tests.gateway.loop_stall import LoopStall
from tests.gateway.partition_listener import partition_listener

STALL_BOUND_S = 0.05
WAIT_S = 120


def _read_reply(api_key: int, version: int, reply: bytes):
    """kio's reading of a response frame's body (after the correlation id and, for flexible
    versions, the header's tagged fields)."""
    schema = load_response_schema(api_key, version)
    offset = 5 if schema.__header_schema__.__flexible__ else 4
    return entity_reader(schema)(reply, offset)[0]


def _frame(api_key: int, version: int, body: dict) -> bytes:
    return framed(b"".join(t.data for t in request_tokens(api_key, version, body)))


async def _longest_stall_serving(frame: bytes) -> tuple[float, bytes]:
    """The loop's longest stall while a partition's listener answers ``frame``, and the
    answer."""

    async with partition_listener() as served:
        reader, writer = await asyncio.open_connection(served.host, served.port)
        writer.write(_frame(18, 0, {}))  # the listener's first answer: it is serving
        await asyncio.wait_for(read_frame(reader), WAIT_S)
        async with LoopStall() as stall:
            writer.write(frame)
            reply = await asyncio.wait_for(read_frame(reader), WAIT_S)
        writer.close()
        return stall.longest_s, reply


def test_a_group_named_100000_times_is_described_without_stalling_the_loop():
    frame = _frame(15, 5, {"groups": ["billing"] * 100_000,
                           "include_authorized_operations": False})
    assert len(frame) > 500_000
    stall_s, reply = asyncio.run(_longest_stall_serving(frame))
    assert stall_s < STALL_BOUND_S
    assert len(_read_reply(15, 5, reply).groups) == 100_000  # an entry per name, as Kafka


def _commit(offset: int, times: int) -> bytes:
    """OffsetCommit v8 of ``offset`` for partition 0, the partition named ``times`` times."""
    partition = {"partition_index": 0, "committed_offset": offset,
                 "committed_leader_epoch": -1, "committed_metadata": ""}
    return _frame(8, 8, {"group_id": "billing", "generation_id_or_member_epoch": -1,
                         "member_id": "", "group_instance_id": None, "topics": [
                             {"name": "orders", "partitions": [partition] * times}]})


def test_a_partition_committed_100000_times_is_applied_without_stalling_the_loop():
    stall_s, _ = asyncio.run(_longest_stall_serving(_commit(7, 100_000)))
    assert stall_s < STALL_BOUND_S


def test_a_commit_read_after_a_big_one_on_its_connection_does_not_overtake_it():
    """Commits are pipelined; a big one waits on the worker thread before its mailbox, so it
    is served alone: the small commit behind it, sent in the same write, lands after it."""
    big = _commit(5, 100_000)
    small, fetch = _commit(9, 1), _frame(9, 8, {"groups": [{"group_id": "billing", "topics": [
        {"name": "orders", "partition_indexes": [0]}]}], "require_stable": False})

    async def scenario() -> int:
        async with partition_listener() as served:
            reader, writer = await asyncio.open_connection(served.host, served.port)
            writer.write(big + small)
            for _ in range(2):
                await asyncio.wait_for(read_frame(reader), WAIT_S)
            writer.write(fetch)
            reply = _read_reply(9, 8, await asyncio.wait_for(read_frame(reader), WAIT_S))
            writer.close()
            return reply.groups[0].topics[0].partitions[0].committed_offset

    assert asyncio.run(scenario()) == 9


def test_a_short_frame_asking_for_a_long_reply_is_answered_off_the_loop():
    frame = _frame(10, 4, {"key_type": 0, "coordinator_keys": [""] * 16_000})
    assert len(frame) < 16 << 10  # short: big by its entries, not its bytes
    stall_s, reply = asyncio.run(_longest_stall_serving(frame))
    assert stall_s < STALL_BOUND_S
    assert len(_read_reply(10, 4, reply).coordinators) == 16_000


def test_big_requests_of_many_clients_are_served_one_at_a_time(monkeypatch):
    """Their decoded entries are what takes memory (a 1 MiB frame decodes into tens of MiB of
    objects), so a process serves one big request at a time and the others wait with only
    their frames: the peak stays near the idle size plus one."""
    active, most = [0], [0]
    describe = broker_module.LOCAL["DescribeGroups"]

    async def counted(core, req):
        active[0] += 1
        most[0] = max(most[0], active[0])
        try:
            await asyncio.sleep(0.2)
            return await describe(core, req)
        finally:
            active[0] -= 1

    monkeypatch.setitem(broker_module.LOCAL, "DescribeGroups", counted)
    frame = _frame(15, 5, {"groups": ["billing"] * 20_000,
                           "include_authorized_operations": False})

    async def three_at_once() -> list[bytes]:
        async with partition_listener() as served:
            async def one() -> bytes:
                reader, writer = await asyncio.open_connection(served.host, served.port)
                writer.write(frame)
                reply = await asyncio.wait_for(read_frame(reader), WAIT_S)
                writer.close()
                return reply

            return await asyncio.gather(one(), one(), one())

    replies = asyncio.run(three_at_once())
    assert [len(_read_reply(15, 5, r).groups) for r in replies] == [20_000] * 3
    assert most[0] == 1


def test_a_big_request_is_served_with_the_cyclic_collector_paused(monkeypatch):
    """The collector holds the GIL: a pass over a big request's hundreds of thousands of live
    objects stalled the loop for up to a second. It is paused while one is served, and
    running again after."""
    seen = []
    describe = broker_module.LOCAL["DescribeGroups"]

    async def watched(core, req):
        seen.append(gc.isenabled())
        return await describe(core, req)

    monkeypatch.setitem(broker_module.LOCAL, "DescribeGroups", watched)
    big = _frame(15, 5, {"groups": ["billing"] * 20_000, "include_authorized_operations": False})
    small = _frame(15, 5, {"groups": ["billing"], "include_authorized_operations": False})
    assert gc.isenabled()
    asyncio.run(_longest_stall_serving(big))
    asyncio.run(_longest_stall_serving(small))
    assert seen == [False, True] and gc.isenabled()


def test_only_frames_with_enough_entries_count_as_big():
    assert holds_entries({"a": [1, 2], "b": [{"c": [3]}]}, 4)
    assert not holds_entries({"a": [1, 2], "b": [{"c": []}]}, 4)


@pytest.mark.parametrize("entries", [511, 512])
def test_the_entry_bound_is_where_a_request_becomes_big(entries):
    from actors.runtime.offload import BIG_REQUEST_ENTRIES

    assert holds_entries({"keys": [""] * entries}, BIG_REQUEST_ENTRIES) == (
        entries >= BIG_REQUEST_ENTRIES)


def test_a_big_requests_objects_are_freed_before_the_collector_is_back(monkeypatch):
    """Alive when the collector resumes, a 100,000-entry commit and its reply were a young
    collection's to scan, on the loop (20 ms alone, 84 ms under CI's load): the partition's
    turn kept its entries until the next turn came. Counted: the young objects the collector
    tracks (``gc.get_count`` also counts untracked ones, such as a decoded body's dicts of
    plain values that a task may still hold, which a collection never scans: ci61)."""
    from actors.runtime import offload

    young_at_resume = []

    class Watched:
        def __getattr__(self, name):
            return getattr(gc, name)

        def enable(self):
            young_at_resume.append(len(gc.get_objects(generation=0)))
            gc.enable()

    monkeypatch.setattr(offload, "gc", Watched())
    asyncio.run(_longest_stall_serving(_commit(7, 100_000)))
    assert young_at_resume and max(young_at_resume) < 10_000
