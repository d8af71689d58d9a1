"""A big request's memory goes back to the system once it is answered (issue 30).

A partition or gateway serving a megabyte request holds tens of MiB of objects until it is
answered; freed then, they stay in the C allocator's free lists unless asked back, and the
wire fuzzer's partitions grew to 3x their idle resident size that way while Python's live
objects grew a few MiB. Here a "big request" allocates 64 MiB in C-allocator-sized pieces
(bytes over pymalloc's 512-byte bound), keeps one piece in 16 (so the freed memory lies
between live pieces, where freeing alone never returns it), and frees the rest: the resident
size must come back down once ``big_request`` is left."""

from __future__ import annotations

import asyncio
import os
import time

from actors.runtime.offload import big_request

PIECE = 1000
PIECES = 64 * 1024
KEPT_EVERY = 16
WAIT_S = 10.0


def _resident() -> int:
    with open(f"/proc/{os.getpid()}/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def _served_and_given_back() -> tuple[int, int]:
    """(resident bytes the request left held at its peak, resident bytes held after)."""
    before = _resident()
    async with big_request():
        pieces = [bytes(PIECE) for _ in range(PIECES)]
        kept = pieces[::KEPT_EVERY]
        del pieces
        peak = _resident() - before
    deadline = time.monotonic() + WAIT_S
    while True:  # given back on the big-requests thread, soon after
        await asyncio.sleep(0.01)
        held = _resident() - before
        if held < peak // 2 or time.monotonic() > deadline:
            break
    assert len(kept) == PIECES // KEPT_EVERY
    return peak, held


def test_a_big_requests_freed_memory_leaves_the_process_once_it_is_answered():
    peak, held = asyncio.run(_served_and_given_back())
    freed = PIECES * PIECE * (KEPT_EVERY - 1) // KEPT_EVERY
    assert peak > freed // 2  # the pieces were resident
    assert held < peak // 2, (peak, held)
