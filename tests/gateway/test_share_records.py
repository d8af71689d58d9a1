"""The gateway's ShareFetch in front of an upstream (``share_records``), with a stand-in for
the upstream reader: a fetch that finds nothing waits for the upstream's log to grow, up to the
client's ``max_wait``; acquisitions whose records the upstream cannot give now are handed back
instead of going out empty (a client would acknowledge them as gaps, and they would be lost)."""

from __future__ import annotations

import asyncio
import time
import uuid
from types import SimpleNamespace

from actors.gateway import share_handlers
from actors.gateway.serving import WireRequest
from protocol import messages as m
from protocol.api import BY_API_KEY
from protocol.config import GroupConfig
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard
from protocol.wire.codec import RequestHeader
from protocol.wire.ids import topic_uuid
from protocol.wire.share_session import ShareSessions
from protocol.wire.topics import Node, TopicIndex

SHARE_FETCH, UNKNOWN_TOPIC_ID = 78, 100
TOPIC = TopicMetadata("T-orders", "orders", 1)


class _Reader:
    """The upstream as the gateway reads it: a log end that grows, batches readable or not."""

    def __init__(self, end: int = 0, readable: bool = True) -> None:
        self.end, self.readable = end, readable

    async def bounds(self, tps):
        return {tp: (0, self.end) for tp in tps}

    async def batches(self, tp, ranges):
        return f"batches of {ranges}".encode() if self.readable else None


class _Router:
    def __init__(self) -> None:
        self.shard = GroupCoordinatorShard(metadata=MetadataImage([TOPIC]))
        self.shard.set_group_config("sg", GroupConfig(share_auto_offset_reset="earliest"))

    async def call(self, request: object) -> object:
        return self.shard.handle(request).response


def _core(reader: _Reader) -> SimpleNamespace:
    async def topics_knowing(names=(), uuids=()) -> TopicIndex:
        return TopicIndex([TOPIC])

    core = SimpleNamespace(
        router=_Router(), share_sessions=ShareSessions(), node=Node(0, "h", 9092),
        topics_knowing=topics_knowing, may=lambda *args: True,
        now_ms=lambda: int(time.time() * 1000), upstream_reader=reader)
    joined = core.router.shard.handle(m.ShareGroupHeartbeatRequest(
        "sg", "member-a", 0, subscribed_topic_names=["orders"])).response
    assert joined.error_code == 0
    return core


async def _fetch(core: SimpleNamespace, max_wait_ms: int, topic=None) -> dict:
    body = {"group_id": "sg", "member_id": "member-a", "share_session_epoch": 0,
            "max_wait": max_wait_ms, "max_records": 500, "forgotten_topics_data": [],
            "topics": [{"topic_id": topic or topic_uuid(TOPIC.topic_id),
                        "partitions": [{"partition_index": 0}]}]}
    req = WireRequest(RequestHeader(SHARE_FETCH, 1, 1, "c"), body, "User:ANONYMOUS",
                      "127.0.0.1", BY_API_KEY[SHARE_FETCH])
    return await share_handlers.share_fetch(core, req)


def _acquired(reply: dict) -> list[tuple[int, int]]:
    return [(a["first_offset"], a["last_offset"]) for t in reply["responses"]
            for p in t["partitions"] for a in p["acquired_records"]]


def test_a_share_fetch_that_finds_nothing_waits_for_the_upstreams_log_to_grow():
    reader = _Reader(end=0)
    core = _core(reader)

    async def run():
        async def grow():
            await asyncio.sleep(0.4)
            reader.end = 5

        started = time.monotonic()
        reply, _ = await asyncio.gather(_fetch(core, max_wait_ms=3_000), grow())
        return reply, time.monotonic() - started

    reply, took_s = asyncio.run(run())
    assert _acquired(reply) == [(0, 4)]
    assert 0.4 <= took_s < 3.0
    (part,) = reply["responses"][0]["partitions"]
    assert part["records"] == b"batches of [(0, 4)]"


def test_a_share_fetch_that_finds_nothing_returns_empty_after_its_max_wait():
    core = _core(_Reader(end=0))
    started = time.monotonic()
    reply = asyncio.run(_fetch(core, max_wait_ms=600))
    assert _acquired(reply) == [] and reply["error_code"] == 0
    assert time.monotonic() - started >= 0.55


def test_acquisitions_the_upstream_cannot_give_now_are_handed_back_not_sent_as_gaps():
    core = _core(_Reader(end=5, readable=False))
    reply = asyncio.run(_fetch(core, max_wait_ms=0))
    assert _acquired(reply) == []
    sp = core.router.shard.groups["sg"].partitions[(TOPIC.topic_id, 0)]
    assert (sp.start_offset, sp.next_offset) == (0, 5)  # acquired once, then released
    assert sp.acquired_by("member-a") == [] and sp.in_flight() == 0
    core.upstream_reader.readable = True  # the upstream is back: the same records, again
    reply = asyncio.run(_fetch(core, max_wait_ms=0))
    assert _acquired(reply) == [(0, 4)]


def test_a_topic_cohort_does_not_know_is_answered_unknown_topic_id_as_without_an_upstream():
    core = _core(_Reader(end=5))
    reply = asyncio.run(_fetch(core, max_wait_ms=0, topic=uuid.uuid4()))
    (part,) = reply["responses"][0]["partitions"]
    assert part["error_code"] == UNKNOWN_TOPIC_ID and part["acquired_records"] == []
