"""A big request's pure work runs on a worker thread, not on the event loop.

A process's event loop serves every connection of its listeners and, in a partition actor,
the partition's turns. A request of a megabyte holds some 100,000 entries, which Python
decodes, applies and encodes at microseconds each: seconds in which no other client is
answered and no heartbeat applied (issue 30's wire fuzzer measured 4.2 s for one DescribeGroups
naming a group 100,000 times). So the pure steps of a big request (a frame above
``BIG_REQUEST_BYTES``, or holding ``BIG_REQUEST_ENTRIES`` array entries) run on ``off_loop``'s
thread instead: decoding its body, translating it, the shard's part of its turn, translating
and encoding its reply. The GIL still runs one thread at a time, but it hands the
loop its turn every switch interval (5 ms), so the loop keeps answering everyone else while the
big request is worked on. One thread per process, and one big request served at a time
(``big_turn``): big requests queue behind each other, at most one competes with the loop, and
at most one's decoded entries are in memory.

Honest requests are far below the bounds (a heartbeat, a commit of a few partitions: a few
hundred bytes), and pay nothing: a thread hand-off costs ~50 µs, which is why small requests stay
on the loop. Whether the request being served is big is carried by ``BIG`` (a context
variable: the connection sets it for the tasks that serve a big request, and a partition's
Ray methods set it for a big pickled batch), so the steps need not be told.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import functools
import gc
import weakref
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from protocol.wire.codec import holds_entries

# A frame above this is a big request, decoded off the loop too (Kafka's clients send
# heartbeats and commits of a few hundred bytes; 16 KiB is an OffsetCommit of some 1,000
# partitions).
BIG_REQUEST_BYTES = 16 << 10
# So is a request holding this many array entries: a short frame may ask for a long reply
# (FindCoordinator naming the empty key 10,000 times is 10 KB; its reply took 170 ms to write).
# Every entry takes a byte at least, so only frames of this many bytes are counted.
BIG_REQUEST_ENTRIES = 512
BIG: contextvars.ContextVar[bool] = contextvars.ContextVar("big_request", default=False)

_executor: ThreadPoolExecutor | None = None
# Big requests a process serves at once (the others wait, holding only their frames): their
# decoded entries, not their bytes, are what takes memory (a 1 MiB frame decodes into ~40 MiB
# of Python objects), so the process's peak stays near its idle size plus one of them.
BIG_AT_ONCE = 1
_turns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
# Bytes of big frames a process reads and holds while they wait for their turn, at most
# (Kafka's ``queued.max.request.bytes``): a connection whose next frame is big reads its body
# only once the budget has room for it. Without it, a frame read whole waited for the one
# turn however many were queued: the wire fuzzer's clients gave up on their 1 MiB frames
# after a second and sent more on new connections, faster than a partition served them,
# so the queue of frames nobody waited for grew with the frames sent (1.3 GB RSS per
# partition after 15 minutes). 16 MiB: 16 frames of the fuzzer's largest, or a hundred
# slow sockets' 64 KiB frames, at once.
BIG_PENDING_BYTES = 16 << 20
_budgets: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
T = TypeVar("T")


class ByteBudget:
    """Bytes reserved before a big frame is read and released once it is answered; a
    reservation waits, first come first served, until the others leave room (one of more
    than ``limit`` bytes reserves all of it, so it is never refused)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self._waiters: collections.deque[tuple[int, asyncio.Future]] = collections.deque()

    @property
    def waiting(self) -> int:
        return len(self._waiters)

    async def reserve(self, size: int) -> int:
        """Wait until ``size`` bytes (at most ``limit``) fit, and hold them: the bytes held,
        to give back to ``release``."""
        size = min(size, self.limit)
        if not self._waiters and self.held + size <= self.limit:
            self.held += size
            return size
        granted = asyncio.get_running_loop().create_future()
        self._waiters.append((size, granted))
        try:
            await granted
        except asyncio.CancelledError:
            if granted.done() and not granted.cancelled():
                self.release(size)  # granted as it was cancelled: give it back
            else:
                with contextlib.suppress(ValueError):  # not granted, maybe passed over
                    self._waiters.remove((size, granted))
                self._grant()  # a waiter behind it may fit now
            raise
        return size

    def release(self, size: int) -> None:
        self.held -= size
        assert self.held >= 0
        self._grant()

    def _grant(self) -> None:
        while self._waiters and self.held + self._waiters[0][0] <= self.limit:
            size, granted = self._waiters.popleft()
            if granted.cancelled():  # its waiter is being cancelled: holds nothing
                continue
            self.held += size
            granted.set_result(None)


def big_bytes() -> ByteBudget:
    """The running loop's budget of ``BIG_PENDING_BYTES``."""
    loop = asyncio.get_running_loop()
    budget = _budgets.get(loop)
    if budget is None:
        budget = _budgets[loop] = ByteBudget(BIG_PENDING_BYTES)
    return budget


def big_turn() -> asyncio.Semaphore:
    """The running loop's semaphore of ``BIG_AT_ONCE`` places."""
    loop = asyncio.get_running_loop()
    gate = _turns.get(loop)
    if gate is None:
        gate = _turns[loop] = asyncio.Semaphore(BIG_AT_ONCE)
    return gate


@contextlib.asynccontextmanager
async def big_request() -> AsyncIterator[None]:
    """Serve a big request: in the process's turn for one (``big_turn``), with the cyclic
    collector paused meanwhile. A big request allocates hundreds of thousands of objects that
    live until it is answered; collections it set off would scan them all, promote them, and
    hold the GIL (and so the loop) for up to a second (the fuzzer measured 1 s young passes
    and 150 ms full ones); freed by reference counting once it is answered, they leave the
    collector's counts where they were. Only one runs at a time, so the pause is one
    request's, and cycles other requests make meanwhile wait for the next collection."""
    async with big_turn():
        paused = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if paused:
                gc.enable()


async def off_loop(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on the process's big-request thread."""
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(1, thread_name_prefix="big-requests")
    return await asyncio.get_running_loop().run_in_executor(
        _executor, functools.partial(fn, *args, **kwargs))


def serving_bytes(size: int) -> bool:
    """Mark the current task as serving a big request if ``size`` bytes make one, and say
    whether they do (a Ray method calls this, not ``BIG.set``: Ray pickles an actor's methods,
    and a context variable does not pickle)."""
    big = size > BIG_REQUEST_BYTES
    BIG.set(big)
    return big


def serving_body(body: dict) -> bool:
    """``serving_bytes`` for a body decoded already (by a partition's listener that forwarded
    it): big if it holds ``BIG_REQUEST_ENTRIES`` array entries."""
    big = holds_entries(body, BIG_REQUEST_ENTRIES)
    BIG.set(big)
    return big


async def pure(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)``: off the loop while serving a big request (``BIG``), else
    right here."""
    if BIG.get():
        return await off_loop(fn, *args, **kwargs)
    return fn(*args, **kwargs)
