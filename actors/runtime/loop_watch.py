"""How long a process's event loop went without running its timers: its longest stalls.

Invariant 6 says no request stalls a listener or a partition, and issue 30's goal bounds the
stall at 100 ms; a stall is only seen from inside the loop. A ``LoopWatch`` asks the loop to
wake it every ``INTERVAL_S`` and keeps the longest figures since it was last read: how late a
wake-up came (``late_ms``: what a client waiting on this loop felt, a busy machine's
scheduling included) and how much CPU the loop's own thread spent between two wake-ups
(``busy_ms``: the loop's own work, which a busy machine does not inflate; one request's work
done in one go shows here as one long interval), and the longest pass of the cyclic collector
(``gc_ms``, its CPU: it holds the GIL, so it stalls the loop whichever thread ran it).
``bench/fuzz.py`` reads them from every actor. A partition or gateway starts its watch when
first asked (``loop_stalls``): a wake-up every 10 ms costs about 1% of a core on a busy
machine, which an idle Cohort should not pay.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections import Counter

from actors.runtime.stall_sampler import StallSampler

INTERVAL_S = 0.01


class LoopWatch:
    """Started on the running loop; ``read`` gives the longest stalls since the last read."""

    def __init__(self) -> None:
        self.late_ms = 0.0
        self.busy_ms = 0.0
        self.gc_ms = 0.0
        self._gc_started = 0.0
        self._sampler = StallSampler(threading.get_ident())  # made on the loop's thread
        self._task = asyncio.get_running_loop().create_task(self._watch())
        gc.callbacks.append(self._collected)

    def _collected(self, phase: str, info: dict) -> None:
        """The cyclic collector's passes, in CPU time of the thread that ran them (both phases
        run there): it holds the GIL, so a long one stalls the loop whichever thread ran it."""
        if phase == "start":
            self._gc_started = time.thread_time()
        else:
            self.gc_ms = max(self.gc_ms, (time.thread_time() - self._gc_started) * 1000)

    async def _watch(self) -> None:
        while True:
            wall, cpu = time.perf_counter(), time.thread_time()
            await asyncio.sleep(INTERVAL_S)
            self._sampler.beat()
            late_ms = (time.perf_counter() - wall - INTERVAL_S) * 1000
            busy_ms = (time.thread_time() - cpu) * 1000
            self.late_ms = max(self.late_ms, late_ms)
            self.busy_ms = max(self.busy_ms, busy_ms)

    def read(self, reset: bool = True) -> dict:
        """``late_ms``, ``busy_ms``, ``gc_ms``: the longest since the last reading (then
        forgotten if ``reset``); ``stacks``: what the loop's thread ran in its longest stall
        (``StallSampler``)."""
        out = {"late_ms": round(self.late_ms, 1), "busy_ms": round(self.busy_ms, 1),
               "gc_ms": round(self.gc_ms, 1), "stacks": self._sampler.read(reset)}
        if reset:
            self.late_ms = self.busy_ms = self.gc_ms = 0.0
        return out

    def census(self, top: int = 8) -> dict:
        """What the collector walks: the objects it tracks and the ``top`` types among them,
        then what a full pass run now finds unreachable (``garbage``: cycles reference counting
        could not free, and its ``top`` types). A full pass costs time in proportion to the
        first figure plus the freeing of the second, so a long ``gc_ms`` is explained here."""
        counts = Counter(type(obj).__name__ for obj in gc.get_objects())
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            garbage = Counter(type(obj).__name__ for obj in gc.garbage)
        finally:
            gc.set_debug(0)
            gc.garbage.clear()
        return {"objects": sum(counts.values()), "types": counts.most_common(top),
                "garbage": sum(garbage.values()), "garbage_types": garbage.most_common(top)}

    def stop(self) -> None:
        self._task.cancel()
        self._sampler.stop()
        gc.callbacks.remove(self._collected)


_watches: dict[asyncio.AbstractEventLoop, LoopWatch] = {}


def running_watch() -> LoopWatch:
    """The running loop's watch, started by the first caller (an actor's ``loop_stalls`` or
    ``heap_census``): one per loop, however many ask."""
    loop = asyncio.get_running_loop()
    watch = _watches.get(loop)
    if watch is None:
        watch = _watches[loop] = LoopWatch()
    return watch
