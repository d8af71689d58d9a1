"""One controller change at a time, with its write off the event loop.

A controller change checks the current state, writes its records and applies them (durable
first, then applied: a partition never sees an unsaved topic). The write runs in a worker
thread, so the actor's event loop keeps answering reads (a loading partition's ``image()``)
while the disk syncs; but then a second change could check the state between the first's check
and its apply, and both would pass (two ``create_topic`` of one name). So every change runs
under one ``asyncio.Lock`` from its first check to its apply; the push to the partitions (and,
for security changes, to the gateway), which may wait on slow actors, runs after it, outside
the lock, and the change returns only once it is pushed, as before.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from typing import Any


class ChangeLock:
    """Mixed into ``Controller``: the lock its changes take (``one_change_at_a_time``)."""

    _changing: asyncio.Lock | None = None

    def _change_lock(self) -> asyncio.Lock:
        if self._changing is None:
            self._changing = asyncio.Lock()
        return self._changing


def one_change_at_a_time(
    gateway: bool = False,
) -> Callable[[Callable[..., Awaitable[Any]]], Callable[..., Awaitable[Any]]]:
    """Decorate a controller change: it runs alone; if it wrote (the version moved), the new
    image is pushed to the partitions afterwards, and to the gateway too if ``gateway``."""

    def decorate(change: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        @functools.wraps(change)
        async def alone(self: Any, *args: Any, **kwargs: Any) -> Any:
            async with self._change_lock():
                before = self._version
                result = await change(self, *args, **kwargs)
                changed = self._version != before
            if changed:
                await self._push()
                if gateway:
                    await self._push_gateway()
            return result

        return alone

    return decorate
