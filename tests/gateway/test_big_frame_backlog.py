"""Big frames waiting for their turn hold a bounded number of bytes, whatever their number.

A process serves one big request at a time (``actors.runtime.offload``). The wire fuzzer's
clients gave up on a 1 MiB frame after a second and sent another on a new connection, faster
than a partition served them; every frame was read whole and waited for the turn, so a
partition held a queue of frames nobody waited for that grew with the frames sent (1.3 GB RSS
after 15 minutes of ``bench/fuzz.py --frames 1000000``). Now a connection reads a big frame's
body only once the process's budget (``BIG_PENDING_BYTES``, Kafka's
``queued.max.request.bytes``) has room for it, and a frame whose client left while it waited is
not served. No Ray: a partition's listener over ``MemoryStorage``, real sockets, the process's
big-request turn held by the test as a long request would hold it.
"""

from __future__ import annotations

import asyncio
import tracemalloc

from actors.runtime import offload
from actors.tools.wire_tokens import framed, request_tokens
from tests.gateway.partition_listener import Served, partition_listener

WAIT_S = 60
CLIENTS = 40
MIB = 1 << 20
# DescribeGroups v0 naming one group 350,000 times: ~1 MiB, a big frame.
BIG_FRAME = framed(b"".join(t.data for t in request_tokens(15, 0, {"groups": ["g"] * 350_000})))
DESCRIBE_GROUPS = 15


def _read_bytes_held() -> int:
    """Bytes the listeners' frame readers allocated and still hold (frames and buffers)."""
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(True, "*/protocol/wire/framing.py")])
    return sum(stat.size for stat in snapshot.statistics("filename"))


async def _until(condition, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + WAIT_S
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def test_big_frames_queued_behind_a_busy_turn_hold_at_most_the_budget_and_go_when_clients_leave():
    async def scenario() -> None:
        async with partition_listener() as served:
            await backlog(served)

    async def backlog(served: Served) -> None:
        host, port, listener = served.host, served.port, served.listener
        turn = offload.big_turn()
        await turn.acquire()  # a big request being served: every other one waits
        tracemalloc.start()
        writers = []
        try:
            for _ in range(CLIENTS):
                _, writer = await asyncio.open_connection(host, port)
                writer.write(BIG_FRAME)
                writers.append(writer)
            budget = getattr(offload, "BIG_PENDING_BYTES", 16 * MIB)
            fits = budget // len(BIG_FRAME)
            bound = budget + CLIENTS * MIB // 4  # each waiting one: a read or two, no more

            def settled() -> bool:  # each client's frame read whole, or waiting for room
                held = _read_bytes_held()
                if held > bound:
                    return True  # read past the budget: the assertion below says so
                waiting = offload.big_bytes().waiting if hasattr(offload, "big_bytes") else 0
                return (listener.admission.open == CLIENTS and waiting == CLIENTS - fits
                        and held >= fits * len(BIG_FRAME))

            await _until(settled, "every frame read or waiting for room")
            held = _read_bytes_held()
            assert held <= bound, (
                f"{CLIENTS} big frames waiting for one turn hold {held / MIB:.1f} MiB of read "
                f"bytes (budget {budget / MIB:.0f} MiB)")
        finally:
            tracemalloc.stop()
            for writer in writers:
                writer.close()  # the clients give up on their frames
            turn.release()
        await _until(lambda: listener.admission.open == 0, "every connection to end")
        assert offload.big_bytes().held == 0
        assert listener.core.served.get((DESCRIBE_GROUPS, 0), 0) <= 1, (
            "frames of clients that left were served")

    asyncio.run(scenario())


def test_the_big_frame_budget_grants_in_arrival_order_and_a_cancelled_waiter_holds_nothing():
    async def ordered() -> None:
        budget = offload.ByteBudget(10)
        first = await budget.reserve(6)
        big = asyncio.ensure_future(budget.reserve(50))  # more than the limit: all of it
        small = asyncio.ensure_future(budget.reserve(1))  # fits, but waits its turn
        await asyncio.sleep(0)
        assert (budget.waiting, big.done(), small.done()) == (2, False, False)
        budget.release(first)
        assert await big == 10 and budget.held == 10 and not small.done()
        cancelled = asyncio.ensure_future(budget.reserve(3))
        await asyncio.sleep(0)
        cancelled.cancel()
        budget.release(10)
        assert await small == 1
        await asyncio.gather(cancelled, return_exceptions=True)
        assert (budget.held, budget.waiting) == (1, 0)
        budget.release(1)
        assert budget.held == 0

    asyncio.run(ordered())
