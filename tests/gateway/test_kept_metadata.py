"""In front of an upstream, Metadata is asked of the upstream (by the gateway) or of the gateway
(by a partition's listener, a Ray call); the same question asked by many members at once, or
again within a second under the same image, is one ask, its reply re-addressed to each asker."""

from __future__ import annotations

import asyncio
import struct
from types import SimpleNamespace

import pytest

from actors.gateway import kept_metadata, topic_handlers
from actors.gateway.kept_metadata import KEPT_S, STALE_S, KeptAnswers, addressed
from actors.gateway.serving import GatewayOptions, WireRequest
from protocol.api import BY_API_KEY
from protocol.wire.codec import RequestHeader, encode_response
from protocol.wire.topics import Node
from protocol.wire.upstream import decode_reply, encode_reply


def _framed(correlation_id: int, body: bytes = b"\x00\x01reply") -> bytes:
    payload = struct.pack(">i", correlation_id) + body
    return struct.pack(">i", len(payload)) + payload


async def _asked(kept, key, image, correlation_id, ask):
    """As a partition's listener uses the kept answers: the shared reply, re-addressed."""
    return addressed(await kept.answer(key, image, ask), correlation_id)


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
        gateway, kept = Gateway(), KeptAnswers()
        image = object()
        waiting = [asyncio.create_task(_asked(kept, ("q",), image, cid, gateway.ask))
                   for cid in range(1, 201)]
        await asyncio.sleep(0)
        gateway.release.set()
        replies = await asyncio.gather(*waiting)
        assert gateway.calls == 1
        assert replies == [_framed(cid) for cid in range(1, 201)]
        other = await _asked(kept, ("other",), image, 5, gateway.ask)
        assert gateway.calls == 2 and other == _framed(5)

    asyncio.run(scenario())


def test_an_answer_is_asked_again_after_a_second_or_under_a_new_image():
    async def scenario():
        now = [0.0]
        gateway, kept = Gateway(), KeptAnswers(clock=lambda: now[0])
        gateway.release.set()
        image = object()
        await _asked(kept, ("q",), image, 1, gateway.ask)
        now[0] = KEPT_S / 2
        await _asked(kept, ("q",), image, 2, gateway.ask)
        assert gateway.calls == 1
        now[0] = KEPT_S * 2
        await _asked(kept, ("q",), image, 3, gateway.ask)  # the last answer, while it is asked
        await asyncio.sleep(0)
        assert gateway.calls == 2
        await _asked(kept, ("q",), object(), 4, gateway.ask)  # a topic created, say
        assert gateway.calls == 3

    asyncio.run(scenario())


def test_a_failed_call_fails_its_waiters_and_is_not_kept():
    async def scenario():
        gateway, kept = Gateway(), KeptAnswers()
        gateway.fail = True
        image = object()
        waiting = [asyncio.create_task(_asked(kept, ("q",), image, cid, gateway.ask))
                   for cid in (1, 2)]
        await asyncio.sleep(0)
        gateway.release.set()
        for task in waiting:
            with pytest.raises(ConnectionError):
                await task
        gateway.fail = False
        assert await _asked(kept, ("q",), image, 3, gateway.ask) == _framed(3)
        assert gateway.calls == 2

    asyncio.run(scenario())


class _Upstream:
    """Stands for the upstream view's ``call_framed_at`` only, counting the Metadata it is asked."""

    def __init__(self) -> None:
        self.asked = 0

    async def call_framed_at(self, api_key: int, version: int, body: dict) -> bytes:
        self.asked += 1
        await asyncio.sleep(0)
        reply = encode_reply(api_key, version, 1 << 30, {
                "throttle_time_ms": 0, "cluster_id": "c", "controller_id": 1,
                "brokers": [{"node_id": 1, "host": "10.0.0.1", "port": 9092, "rack": None}],
                "topics": [{"error_code": 0, "name": "t", "topic_id": None, "is_internal": False,
                            "partitions": [], "topic_authorized_operations": -2147483648}]})
        return struct.pack(">i", len(reply)) + reply


def _gateway_core(index: object) -> SimpleNamespace:
    core = SimpleNamespace(options=GatewayOptions(), leader=Node(0, "127.0.0.1", 9092),
                           brokers=SimpleNamespace(nodes=lambda: [Node(1000, "127.0.0.1", 9093)]),
                           listeners={1: ("127.0.0.1", 9101)}, upstream=_Upstream(),
                           kept_metadata=KeptAnswers(), topics_now=lambda: core.index,
                           index=index)
    core.listener_of = core.listeners.get
    return core


def _metadata(core: SimpleNamespace, correlation_id: int) -> object:
    body = {"topics": [{"name": "t", "topic_id": None}], "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False}
    req = WireRequest(RequestHeader(3, 12, correlation_id, "c"), body, "User:ANONYMOUS",
                      "127.0.0.1", BY_API_KEY[3])
    return topic_handlers.metadata(core, req)


def test_the_gateway_asks_the_upstream_once_for_many_members_asking_the_same_metadata():
    async def scenario():
        core = _gateway_core(object())
        replies = await asyncio.gather(*(_metadata(core, cid) for cid in range(100)))
        assert core.upstream.asked == 1
        assert all(r is replies[0] for r in replies)
        framed = encode_response(RequestHeader(3, 12, 7, "c"), replies[0])
        assert decode_reply(3, 12, framed[4:])["brokers"][0]["port"] == 9101
        core.index = object()  # a topic created through Cohort: a new image
        await _metadata(core, 100)
        assert core.upstream.asked == 2

    asyncio.run(scenario())


def test_a_failed_ask_gives_the_questions_last_answer_when_it_had_one():
    async def scenario():
        now = [0.0]
        gateway, kept = Gateway(), KeptAnswers(clock=lambda: now[0])
        gateway.release.set()
        image = object()
        assert await _asked(kept, ("q",), image, 1, gateway.ask) == _framed(1)
        now[0] = STALE_S * 2  # too old to give while asking: it waits for the ask
        gateway.fail = True  # the upstream did not answer in time
        assert await _asked(kept, ("q",), image, 2, gateway.ask) == _framed(2)
        assert gateway.calls == 2
        with pytest.raises(ConnectionError):  # a question never answered has nothing to give
            await _asked(kept, ("other",), image, 3, gateway.ask)

    asyncio.run(scenario())


def test_while_an_ask_is_slow_the_last_answer_under_the_same_image_is_given_at_once():
    """A member's heartbeat waits behind its Metadata on their connection: a slow upstream
    must not hold it. An answer up to ``STALE_S`` old is given while the next is asked, once."""
    async def scenario():
        now = [0.0]
        gateway, kept = Gateway(), KeptAnswers(clock=lambda: now[0])
        gateway.release.set()
        image = {"t": 1}
        assert await _asked(kept, ("q",), image, 1, gateway.ask) == _framed(1)
        gateway.release.clear()  # the upstream is slow from now on
        now[0] = KEPT_S * 2
        replies = [await asyncio.wait_for(_asked(kept, ("q",), {"t": 1}, cid, gateway.ask), 5)
                   for cid in (2, 3)]
        assert replies == [_framed(2), _framed(3)]  # an equal image is the same image
        await asyncio.sleep(0)
        assert gateway.calls == 2  # one ask on its way for both
        slow = asyncio.create_task(_asked(kept, ("q",), {"t": 2}, 4, gateway.ask))
        await asyncio.sleep(0)
        assert not slow.done()  # a new image: nothing older is given
        now[0] = KEPT_S * 2 + STALE_S + 1
        late = asyncio.create_task(_asked(kept, ("q",), {"t": 2}, 5, gateway.ask))
        await asyncio.sleep(0)
        assert not late.done()
        gateway.release.set()
        assert await slow == _framed(4) and await late == _framed(5)

    asyncio.run(scenario())


def test_answers_kept_stay_within_the_byte_budget(monkeypatch):
    """Upstream replies of a question each: no more of them kept, fresh or last good, than
    ``KEPT_BYTES``; one that fits is still shared."""
    monkeypatch.setattr(kept_metadata, "KEPT_BYTES", 1000)

    async def scenario():
        kept = KeptAnswers()
        image = object()

        async def reply_of(size):
            return b"r" * size

        for q in range(20):
            await kept.answer((q,), image, lambda: reply_of(300))
        await asyncio.sleep(0)
        assert kept._fresh.held <= 1000 and kept._last_good.held <= 1000
        assert len([k for k, (_, f) in kept._answers.items() if f.done()]) <= 3
        asked = []
        await kept.answer((19,), image, lambda: asked.append(1) or reply_of(300))
        assert not asked  # the last one is kept, and shared
        await kept.answer(("big",), image, lambda: reply_of(5000))
        await asyncio.sleep(0)
        assert ("big",) not in kept._fresh and ("big",) not in kept._last_good

    asyncio.run(scenario())
