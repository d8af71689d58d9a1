"""The gateway's router keeps a connection's pipelined requests in order through retries.

The partition here is a stand-in object with the two calls the router makes (``handle_packed``
and ``handle_batch_packed``, pickled as the gateway sends them): the test is about the router's
ordering, not about a partition."""

from __future__ import annotations

import asyncio

from actors.gateway.routing import Router
from actors.runtime.packed import pack, unpack
from protocol import messages as m
from protocol.errors import Errors


class _Call:
    def __init__(self, fn) -> None:
        self._fn = fn

    def remote(self, arg):
        return self._fn(arg)


class LoadingPartition:
    """Answers a commit COORDINATOR_LOAD_IN_PROGRESS ``refusals[offset]`` times, then takes it."""

    def __init__(self, refusals: dict[int, int]) -> None:
        self.refusals = dict(refusals)
        self.applied: list[int] = []
        self.handle_packed = _Call(self._one_packed)
        self.handle_batch_packed = _Call(self._batch_packed)

    async def _one_packed(self, packed: bytes) -> bytes:
        return pack(await self._one(unpack(packed)))

    async def _batch_packed(self, packed: bytes) -> bytes:
        return pack(await self._batch(unpack(packed)))

    async def _one(self, req: m.OffsetCommitRequest) -> m.OffsetCommitResponse:
        offset = req.topics[0].partitions[0].committed_offset
        if self.refusals.get(offset, 0) > 0:
            self.refusals[offset] -= 1
            code = Errors.COORDINATOR_LOAD_IN_PROGRESS
        else:
            self.applied.append(offset)
            code = Errors.NONE
        return m.OffsetCommitResponse(error_code=code)  # a group-wide answer, as the shard's

    async def _batch(self, reqs: list) -> list:
        return [await self._one(r) for r in reqs]


def _commit(offset: int) -> m.OffsetCommitRequest:
    return m.OffsetCommitRequest(group_id="g", topics=[m.OffsetCommitRequestTopic(
        name="t", partitions=[m.OffsetCommitRequestPartition(0, offset)])])


def test_pipelined_commits_retried_through_a_restart_land_in_the_order_they_were_sent():
    # Commits refused a different number of times each: retried independently, the ones
    # refused once would overtake the ones refused twice and land first.
    partition = LoadingPartition({o: 1 + o % 2 for o in range(6)})

    async def run() -> list:
        router = Router(1, retry_budget_s=10.0, handles=[partition])
        return await asyncio.gather(*(router.call_partition(0, _commit(o)) for o in range(6)))

    replies = asyncio.run(run())
    assert all(r.error_code == Errors.NONE for r in replies)
    assert partition.applied == list(range(6))
