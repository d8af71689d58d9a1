"""One Ray call for many requests: the gateway's requests for one partition that arrive
together travel as one ``handle_batch_packed`` (pickled by the gateway itself: Ray's own
serializer costs ~150 µs a call more, ``actors/runtime/packed.py``), so they cost one call and
land in one turn (one append, one fsync).

Only requests the partition answers within the turn that applies them are coalesced
(``BATCHED``: commits, offset fetches, heartbeats, and ShareFetch and ShareAcknowledge, whose
wait for records happens in the gateway, never in the shard): ``handle_batch`` replies once
every request of the batch is answered, so a long-poll (a classic JoinGroup or SyncGroup
waiting for its rebalance) would hold every other reply of its batch; those go alone.

What is guaranteed: requests for one partition reach it in the order they were submitted
(one caller's calls to one actor start in submission order, and the partition enqueues a
batch before its first await); each request gets its own reply or the exception its call
raised (a dead actor fails every request of the batch it held, as it would have failed each
of them alone); a batch holds at most ``MAX_BATCH`` requests.
"""

from __future__ import annotations

import asyncio

from actors.runtime.offload import BIG, off_loop
from actors.runtime.packed import pack, unpack
from protocol.classic.messages import HeartbeatRequest
from protocol.consumer.messages import ConsumerGroupHeartbeatRequest
from protocol.offsets.messages import OffsetCommitRequest, OffsetFetchRequest
from protocol.share.messages import ShareAcknowledgeRequest, ShareFetchRequest

# Answered in the turn that applies them: safe to share a batch's single reply.
BATCHED = (OffsetCommitRequest, OffsetFetchRequest, HeartbeatRequest,
           ConsumerGroupHeartbeatRequest, ShareFetchRequest, ShareAcknowledgeRequest)
MAX_BATCH = 256


class Batcher:
    """Coalesces the requests for one partition actor submitted in one loop iteration."""

    def __init__(self, handle: object) -> None:
        self._handle = handle
        self._pending: list[tuple[object, asyncio.Future]] = []
        self._sending: set[asyncio.Task] = set()

    async def call(self, request: object) -> object:
        """The reply to ``request``: sent alone if it may long-poll (after the batch gathered
        so far, to keep the order), else in the batch this loop iteration gathers."""
        if BIG.get():  # pickled off the loop, and sent alone (its connection waits for it)
            self._flush()
            packed = await off_loop(pack, request)
            return await off_loop(unpack, await self._handle.handle_packed.remote(packed))
        if not isinstance(request, BATCHED):
            self._flush()
            return unpack(await self._handle.handle_packed.remote(pack(request)))
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        self._pending.append((request, fut))
        if len(self._pending) >= MAX_BATCH:
            self._flush()
        elif len(self._pending) == 1:
            loop.call_soon(self._flush)
        return await fut

    def _flush(self) -> None:
        batch, self._pending = self._pending, []
        if not batch:
            return
        # The Ray call is submitted now, in order; only its reply is awaited in a task. A call
        # that cannot even be made fails every request it would have carried.
        try:
            ref = self._handle.handle_batch_packed.remote(pack([r for r, _ in batch]))
        except Exception as e:
            _fail_all(batch, e)
            return
        task = asyncio.ensure_future(self._deliver(ref, batch))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    @staticmethod
    async def _deliver(ref: object, batch: list[tuple[object, asyncio.Future]]) -> None:
        try:
            replies = unpack(await ref)
        except Exception as e:  # the call failed: every request it carried fails alike
            _fail_all(batch, e)
            return
        for (_, fut), reply in zip(batch, replies, strict=True):
            if not fut.done():
                fut.set_result(reply)

    def close(self) -> None:
        for task in self._sending:
            task.cancel()


def _fail_all(batch: list[tuple[object, asyncio.Future]], error: Exception) -> None:
    for _, fut in batch:
        if not fut.done():
            fut.set_exception(error)
