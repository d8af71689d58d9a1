"""What an event loop's thread was running while it kept the loop from its timers.

``LoopWatch`` measures how long a loop went without coming back to its timers; it cannot say
what held it, since the loop only sees the stall once it is over. A ``StallSampler`` is a
thread beside the loop's: every ``PERIOD_S`` it looks at how long ago the loop last beat
(``beat()``, called by ``LoopWatch`` on every wake-up) and, once that is over
``SAMPLE_AFTER_S`` and the loop's thread ran since the last look and is not back in its
selector (it is working), it takes that thread's stack. Each stall's samples are tallied by
stack; the stall with the most samples is kept with its commonest stacks, which is the
profile issue 30 asks for when the stall goal is not met. The sampler needs the GIL to look,
which the loop's thread hands over every switch interval (5 ms) while it runs Python; a pass
of the cyclic collector hands over nothing, so it shows as ``gc_ms`` and not here.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections import Counter

PERIOD_S = 0.005
SAMPLE_AFTER_S = 0.03
# A look counts when the thread ran this long since the last (work, not a wake-up) and a
# stall when it got this many looks (one look can catch the moment a sleep or a wait ends).
MIN_CPU_S = 0.0002
MIN_SAMPLES = 2
FRAMES = 14  # innermost frames kept of each stack (a Ray call alone is eight deep)
TOP = 3  # stacks kept of the longest stall


def _stack(frame) -> str:
    """The innermost ``FRAMES`` frames, innermost first: ``file function`` for the innermost
    (the line it is at varies from look to look), ``file:line function`` for its callers."""
    *callers, inner = traceback.extract_stack(frame)[-FRAMES:]
    return " < ".join([f"{inner.filename.rsplit('/', 1)[-1]} {inner.name}"] + [
        f"{e.filename.rsplit('/', 1)[-1]}:{e.lineno} {e.name}" for e in reversed(callers)])


class StallSampler:
    """Samples ``thread_id``'s stack while it stalls; ``read`` gives the longest stall's."""

    def __init__(self, thread_id: int) -> None:
        self._thread_id = thread_id
        self._clock = time.pthread_getcpuclockid(thread_id)
        self._beat = time.perf_counter()
        self._stall: Counter[str] = Counter()  # this stall's samples by stack
        self._worst: Counter[str] = Counter()
        self._stop = threading.Event()
        threading.Thread(target=self._run, name="stall-sampler", daemon=True).start()

    def beat(self) -> None:
        """The loop came back to its timers: the stall being sampled, if any, is over."""
        self._beat = time.perf_counter()

    def _run(self) -> None:
        beat, cpu = self._beat, time.clock_gettime(self._clock)
        while not self._stop.wait(PERIOD_S):
            now_cpu = time.clock_gettime(self._clock)
            worked, cpu = now_cpu - cpu >= MIN_CPU_S, now_cpu
            if self._beat != beat:  # the loop beat: the last stall ended
                self._close()
                beat = self._beat
            if time.perf_counter() - beat < SAMPLE_AFTER_S or not worked:
                continue
            frame = sys._current_frames().get(self._thread_id)
            if frame is not None and frame.f_code.co_name != "select":  # not back waiting
                self._stall[_stack(frame)] += 1

    def _close(self) -> None:
        samples = sum(self._stall.values())
        if samples >= MIN_SAMPLES and samples > sum(self._worst.values()):
            self._worst = self._stall
        if self._stall:
            self._stall = Counter()

    def read(self, reset: bool = True) -> list[tuple[int, str]]:
        """The longest stall since the last reading: its commonest stacks with their sample
        counts (each sample is ``PERIOD_S`` of its CPU), most first."""
        out = [(samples, stack) for stack, samples in self._worst.most_common(TOP)]
        if reset:
            self._worst = Counter()
        return out

    def stop(self) -> None:
        self._stop.set()
