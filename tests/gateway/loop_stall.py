"""The longest stall of the running loop while a block runs: the CPU time the loop's own
thread spends between two wake-ups of a 2 ms timer, which a busy machine does not inflate
(waiting for a core, or for the GIL held by a worker thread, is not the loop's CPU)."""

from __future__ import annotations

import asyncio
import time


class LoopStall:
    """``async with LoopStall() as stall: ...``, then ``stall.longest_s``."""

    def __init__(self) -> None:
        self.longest_s = 0.0
        self._task: asyncio.Task | None = None

    async def _watch(self) -> None:
        while True:
            cpu = time.thread_time()
            await asyncio.sleep(0.002)
            self.longest_s = max(self.longest_s, time.thread_time() - cpu)

    async def __aenter__(self) -> LoopStall:
        self._task = asyncio.get_running_loop().create_task(self._watch())
        await asyncio.sleep(0.01)  # watching before the block starts
        return self

    async def __aexit__(self, *exc) -> None:
        await asyncio.sleep(0.01)  # one more wake-up: a stall that just ended counts
        assert self._task is not None
        self._task.cancel()
