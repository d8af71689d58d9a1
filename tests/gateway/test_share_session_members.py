"""The gateway's share sessions follow the group's members: a ShareFetch from a member id the
group does not know opens no lasting session (the partition's reply says so and the session
goes), so made-up member ids cannot fill the 2,000 sessions; a member that leaves through its
coordinator has its session dropped at the gateway without stalling the coordinator."""

from __future__ import annotations

import asyncio
import time
import uuid
from types import SimpleNamespace

from actors.gateway import broker as broker_module
from actors.gateway import share_handlers
from actors.gateway.serving import WireRequest
from protocol.api import BY_API_KEY
from protocol.shard import GroupCoordinatorShard
from protocol.wire.codec import RequestHeader
from protocol.wire.share_session import ShareSessions
from protocol.wire.stream import SyntheticStream
from protocol.wire.topics import Node, TopicIndex

SHARE_FETCH = 78
UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND = 25, 69


class _Router:
    def __init__(self) -> None:
        self.shard = GroupCoordinatorShard()

    async def call(self, request: object) -> object:
        return self.shard.handle(request).response


def _core() -> SimpleNamespace:
    async def topics_knowing(names=(), uuids=()) -> TopicIndex:
        return TopicIndex()

    return SimpleNamespace(
        router=_Router(), share_sessions=ShareSessions(), node=Node(0, "h", 9092),
        topics_knowing=topics_knowing, may=lambda *args: True, now_ms=lambda: 1_000,
        stream=SyntheticStream(anchor_ms=0, records_per_s=0.0))  # empty: its end stays 0


def _fetch(core: SimpleNamespace, group: str, member: str) -> dict:
    body = {"group_id": group, "member_id": member, "share_session_epoch": 0, "max_wait": 0,
            "topics": [{"topic_id": uuid.uuid4(), "partitions": [{"partition_index": 0}]}],
            "forgotten_topics_data": []}
    req = WireRequest(RequestHeader(SHARE_FETCH, 1, 1, "c"), body, "User:ANONYMOUS",
                      "127.0.0.1", BY_API_KEY[SHARE_FETCH])
    return asyncio.run(share_handlers.share_fetch(core, req))


def test_a_share_fetch_from_a_member_the_group_does_not_know_leaves_no_session():
    core = _core()
    codes = {_fetch(core, "g", f"ghost-{k}")["error_code"] for k in range(100)}
    assert codes <= {UNKNOWN_MEMBER_ID, GROUP_ID_NOT_FOUND} and codes
    assert len(core.share_sessions) == 0


def test_a_share_member_leaving_through_its_coordinator_does_not_wait_for_the_gateway_lookup(
        monkeypatch):
    """``ray.get_actor`` is a blocking call to Ray's GCS: made on the partition's loop, every
    leave a client sends stalled it. It is made once, on a thread."""
    dropped, lookups = [], []

    gateway = SimpleNamespace(drop_share_session=SimpleNamespace(
        remote=lambda group_id, member_id: dropped.append((group_id, member_id))))

    def slow_get_actor(name: str, namespace: str) -> SimpleNamespace:
        lookups.append(name)
        time.sleep(0.5)
        return gateway

    monkeypatch.setattr(broker_module.ray, "get_actor", slow_get_actor)

    async def leave_twice() -> float:
        sessions = broker_module._GatewaySessions("gateway")
        started = time.perf_counter()
        sessions.drop("g", "m1")
        took = time.perf_counter() - started
        deadline = time.monotonic() + 60
        while not dropped:
            assert time.monotonic() < deadline, "the first leave never reached the gateway"
            await asyncio.sleep(0.01)
        sessions.drop("g", "m2")
        return took

    assert asyncio.run(leave_twice()) < 0.1
    assert dropped == [("g", "m1"), ("g", "m2")] and lookups == ["gateway"]
