"""In front of an upstream a partition listener forwards Metadata to the gateway (a Ray call);
the same question asked by many members at once, or again within a second under the same
image, is one call, its reply re-addressed to each asker."""

from __future__ import annotations

import asyncio
import struct

import pytest

from actors.gateway.forwarded_metadata import KEPT_S, ForwardedMetadata, addressed


def _framed(correlation_id: int, body: bytes = b"\x00\x01reply") -> bytes:
    payload = struct.pack(">i", correlation_id) + body
    return struct.pack(">i", len(payload)) + payload


class Gateway:
    def __init__(self) -> None:
        self.calls = 0
        self.release = asyncio.Event()
        self.fail = False

    async def ask(self) -> bytes:
        self.calls += 1
        await self.release.wait()
        if self.fail:
            raise ConnectionError("gateway restarted")
        return _framed(999)


def test_a_reply_is_re_addressed_to_the_askers_correlation_id():
    assert addressed(_framed(7), 42) == _framed(42)


def test_members_asking_the_same_question_at_once_share_one_call():
    async def scenario():
        gateway, kept = Gateway(), ForwardedMetadata()
        image = object()
        waiting = [asyncio.create_task(kept.answer(("q",), image, cid, gateway.ask))
                   for cid in range(1, 201)]
        await asyncio.sleep(0)
        gateway.release.set()
        replies = await asyncio.gather(*waiting)
        assert gateway.calls == 1
        assert replies == [_framed(cid) for cid in range(1, 201)]
        other = await kept.answer(("other",), image, 5, gateway.ask)
        assert gateway.calls == 2 and other == _framed(5)

    asyncio.run(scenario())


def test_an_answer_is_asked_again_after_a_second_or_under_a_new_image():
    async def scenario():
        now = [0.0]
        gateway, kept = Gateway(), ForwardedMetadata(clock=lambda: now[0])
        gateway.release.set()
        image = object()
        await kept.answer(("q",), image, 1, gateway.ask)
        now[0] = KEPT_S / 2
        await kept.answer(("q",), image, 2, gateway.ask)
        assert gateway.calls == 1
        now[0] = KEPT_S * 2
        await kept.answer(("q",), image, 3, gateway.ask)
        assert gateway.calls == 2
        await kept.answer(("q",), object(), 4, gateway.ask)  # a topic created, say
        assert gateway.calls == 3

    asyncio.run(scenario())


def test_a_failed_call_fails_its_waiters_and_is_not_kept():
    async def scenario():
        gateway, kept = Gateway(), ForwardedMetadata()
        gateway.fail = True
        image = object()
        waiting = [asyncio.create_task(kept.answer(("q",), image, cid, gateway.ask))
                   for cid in (1, 2)]
        await asyncio.sleep(0)
        gateway.release.set()
        for task in waiting:
            with pytest.raises(ConnectionError):
                await task
        gateway.fail = False
        assert await kept.answer(("q",), image, 3, gateway.ask) == _framed(3)
        assert gateway.calls == 2

    asyncio.run(scenario())
