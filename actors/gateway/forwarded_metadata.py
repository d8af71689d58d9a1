"""A partition listener's Metadata replies in front of an upstream, asked of the gateway once
per question and kept for a moment.

In front of an upstream a partition's listener cannot answer Metadata itself (the leaders are
the upstream's, known to the gateway), so it forwards each one to the gateway, a Ray call. A
client asks Metadata on every connection it opens, and every member of a group keeps one to its
coordinator: 1,000 KIP-848 consumers joining one group queued more than 5,000 such calls on
the gateway (Ray's "tasks pending submission" warning) and the group never settled
(bench/upstream.py --stable). So the same question, asked while its answer is on its way or
was given less than ``KEPT_S`` ago under the same image, shares that answer: one call, its
framed reply re-addressed to each asker's correlation id. Only without an authorizer, where
the answer depends on the question alone (``broker.metadata_question``), as the listener's own
Metadata replies are kept.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Awaitable, Callable

# How long an answer is kept: a client that learns of a new leader a second late retries on
# NOT_LEADER_OR_FOLLOWER, as after any leader change; a new image drops every answer at once.
KEPT_S = 1.0
MOST_KEPT = 64
_CORRELATION = struct.Struct(">i")


def addressed(framed: bytes, correlation_id: int) -> bytes:
    """``framed`` (a reply with its size prefix) under another correlation id: the first field
    of every response header, right after the size."""
    return framed[:4] + _CORRELATION.pack(correlation_id) + framed[8:]


class ForwardedMetadata:
    """The answers kept (see the module docstring), for one listener."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._answers: dict[tuple, tuple[float, asyncio.Future]] = {}
        self._image: object = None

    async def answer(self, key: tuple, image: object, correlation_id: int,
                     ask: Callable[[], Awaitable[bytes | None]]) -> bytes | None:
        """The reply to the question ``key`` under ``image``: shared if asked or answered
        within ``KEPT_S``, else ``ask()``ed (a failed ask is shared by those waiting on it and
        forgotten)."""
        if image is not self._image:
            self._answers, self._image = {}, image
        now = self._clock()
        kept = self._answers.get(key)
        if kept is None or now - kept[0] > KEPT_S:
            if len(self._answers) >= MOST_KEPT:
                self._answers.clear()
            future = asyncio.get_running_loop().create_task(ask())
            kept = self._answers[key] = (now, future)
        try:
            framed = await asyncio.shield(kept[1])
        except Exception:
            if self._answers.get(key) is kept:
                del self._answers[key]
            raise
        return None if framed is None else addressed(framed, correlation_id)
