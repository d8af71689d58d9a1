"""A Fetch naming thousands of partitions of the embedded stream is answered off the gateway's
loop (issue 30: the fuzzer's repeated-entry Fetch frames held the gateway's loop 120-180 ms
while their synthetic batches were cut and written). The loop's stall: ``LoopStall``."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from actors.gateway import topic_handlers
from actors.runtime.offload import BIG
from protocol.wire import stream
from protocol.wire.codec import EncodedBody
from protocol.wire.topics import TopicIndex, TopicMetadata
from tests.gateway.loop_stall import LoopStall

STALL_BOUND_S = 0.05
PARTITIONS = 37_000  # about a 1 MiB request, as the fuzzer repeats entries


def _core(index: TopicIndex) -> SimpleNamespace:
    async def topics_knowing(names):
        return index

    return SimpleNamespace(topics_knowing=topics_knowing, may=lambda *_: True,
                           stream=stream.SyntheticStream(anchor_ms=0), now_ms=lambda: 10**9)


def _answered(big: bool) -> tuple[float, bytes]:
    index = TopicIndex([TopicMetadata("GXCmfjCPSEefsQqgR0oNjw", "foo", 8)])
    body = {"max_wait": 0, "max_bytes": 1 << 20, "topics": [{"topic": "foo", "partitions": [
        {"partition": p % 8, "fetch_offset": 10 + p, "partition_max_bytes": 64}
        for p in range(PARTITIONS)]}]}
    req = SimpleNamespace(body=body, version=12)

    async def scenario() -> tuple[float, bytes]:
        async with LoopStall() as stall:
            BIG.set(big)
            reply = await topic_handlers.fetch(_core(index), req)
        assert isinstance(reply, EncodedBody)
        return stall.longest_s, b"".join(bytes(p) for p in reply.parts)

    return asyncio.run(scenario())


def test_a_fetch_of_many_partitions_is_answered_off_the_loop_with_the_same_reply():
    stall_big, reply_big = _answered(big=True)
    stall_small, reply_small = _answered(big=False)
    assert reply_big == reply_small and len(reply_big) > PARTITIONS
    assert stall_small > STALL_BOUND_S  # served on the loop, the same fetch holds it
    assert stall_big < STALL_BOUND_S, f"the loop stalled {stall_big * 1000:.0f} ms"
