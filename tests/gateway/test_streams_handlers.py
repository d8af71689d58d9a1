"""The gateway's streams coroutines against a real pure shard standing in for the partitions
(no Ray, no sockets): ACLs as KafkaApis (READ on the group, DESCRIBE on the topology's
topics), and the internal topics a heartbeat names created in the background under the
caller's CREATE right, a failure never failing the heartbeat but shown, per topic and for a
while, in the MISSING_INTERNAL_TOPICS status."""

from __future__ import annotations

import asyncio
import copy

from actors.gateway import dispatch
from actors.gateway.core import WireRequest
from actors.gateway.streams_handlers import creations_of
from protocol.api import BY_API_KEY
from protocol.errors import CoordinatorError, Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard
from protocol.wire.codec import RequestHeader, encode_response
from tests.gateway.test_group_handlers import _Router
from tests.protocol.streams.test_wire import JOIN

MISSING_INTERNAL_TOPICS = 3


class _Controller:
    """The Controller's ``create_topic``: a topic in the shard's image, or its refusal."""

    def __init__(self, router: _Router, refuse: bool = False) -> None:
        self.router, self.refuse, self.created = router, refuse, []
        self.asked: dict[str, tuple[dict, int]] = {}
        outer = self

        class _Create:
            @staticmethod
            async def remote(name: str, partitions: int, racks=None, configs=None,
                             replication_factor: int = -1) -> str:
                if outer.refuse:
                    raise CoordinatorError(Errors.INVALID_REPLICATION_FACTOR, "no brokers")
                outer.created.append((name, partitions))
                outer.asked[name] = (configs, replication_factor)
                shard = outer.router.shard
                shard.update_metadata(MetadataImage(
                    [*shard.image.topics(), TopicMetadata(f"{name}-id", name, partitions)]))
                return f"{name}-id"

        self.create_topic = _Create


class _Core:
    def __init__(self, denied: set[tuple[str, str]] = frozenset(), refuse: bool = False) -> None:
        self.router = _Router(GroupCoordinatorShard(
            metadata=MetadataImage([TopicMetadata("input-id", "input", 2)])))
        self.controller = _Controller(self.router, refuse)
        self.denied = denied
        self.clock = 0

    def now_ms(self) -> int:
        return self.clock

    def may(self, req, operation: str, resource_type: str, name: str) -> bool:
        return (operation, name) not in self.denied

    def saw_epoch(self, group_id, member_id, epoch) -> None:
        pass

    async def topics(self, refresh: bool = False):
        return None


async def _serve(core: _Core, api_key: int, body: dict) -> dict:
    header = RequestHeader(api_key, 0, 1, "client")
    req = WireRequest(header, body, "User:alice", "10.0.0.1", BY_API_KEY[api_key])
    reply = await dispatch.HANDLERS[api_key](core, req)
    encode_response(header, reply)
    return reply


async def _settle(core: _Core) -> None:
    await asyncio.gather(*list(creations_of(core).tasks))


def _statuses(reply: dict) -> dict[int, str]:
    return {s["status_code"]: s["status_detail"] for s in reply["status"] or []}


def test_the_changelog_is_created_under_the_callers_right_and_the_group_proceeds():
    async def run():
        core = _Core()
        reply = await _serve(core, 88, JOIN)
        assert reply["error_code"] == 0
        assert MISSING_INTERNAL_TOPICS in _statuses(reply)
        await _settle(core)
        assert core.controller.created == [("app-store-changelog", 2)]
        assert core.controller.asked["app-store-changelog"] == ({}, -1)  # JOIN names none
        core.router.shard.tick(3_000)
        beat = {**JOIN, "member_epoch": reply["member_epoch"], "topology": None,
                "rebalance_timeout": -1}
        active = None
        for _ in range(2):
            reply = await _serve(core, 88, beat)
            beat["member_epoch"] = reply["member_epoch"]
            active = reply["active_tasks"] if reply["active_tasks"] is not None else active
        assert MISSING_INTERNAL_TOPICS not in _statuses(reply)
        assert active == [{"subtopology_id": "0", "partitions": [0, 1]}]
        described = await _serve(core, 89, {"group_ids": ["app"]})
        assert described["groups"][0]["group_state"] == "Stable"
    asyncio.run(run())


def test_the_internal_topics_are_created_with_the_topologys_configs_and_replication():
    async def run():
        core = _Core()
        join = copy.deepcopy(JOIN)
        (changelog,) = join["topology"]["subtopologies"][0]["state_changelog_topics"]
        changelog["replication_factor"] = 3
        changelog["topic_configs"] = [{"key": "cleanup.policy", "value": "compact"},
                                      {"key": "min.insync.replicas", "value": "2"}]
        assert (await _serve(core, 88, join))["error_code"] == 0
        await _settle(core)
        assert core.controller.asked["app-store-changelog"] == (
            {"cleanup.policy": "compact", "min.insync.replicas": "2"}, 3)
    asyncio.run(run())


def test_without_create_rights_nothing_is_created_and_the_status_says_why():
    async def run():
        core = _Core(denied={("CREATE", "kafka-cluster"), ("CREATE", "app-store-changelog")})
        reply = await _serve(core, 88, JOIN)
        assert reply["error_code"] == 0
        assert "Unauthorized to CREATE on topics app-store-changelog." in _statuses(reply)[
            MISSING_INTERNAL_TOPICS]
        await _settle(core)
        assert core.controller.created == []
    asyncio.run(run())


def test_a_failed_creation_never_fails_the_heartbeat_and_is_reported_for_a_while():
    async def run():
        core = _Core(refuse=True)
        reply = await _serve(core, 88, JOIN)
        await _settle(core)
        beat = {**JOIN, "member_epoch": reply["member_epoch"], "topology": None,
                "rebalance_timeout": -1}
        reply = await _serve(core, 88, beat)
        assert reply["error_code"] == 0
        detail = _statuses(reply)[MISSING_INTERNAL_TOPICS]
        assert "app-store-changelog: INVALID_REPLICATION_FACTOR: no brokers" in detail
        assert not creations_of(core).in_flight  # not retried while the failure is cached
        core.clock += 2 * reply["heartbeat_interval"] + 1
        reply = await _serve(core, 88, beat)
        assert "INVALID_REPLICATION_FACTOR" not in _statuses(reply)[MISSING_INTERNAL_TOPICS]
        assert creations_of(core).in_flight == {"app-store-changelog"}  # tried again
        await _settle(core)
    asyncio.run(run())


def test_a_topology_naming_a_topic_the_caller_may_not_describe_is_refused():
    async def run():
        core = _Core(denied={("DESCRIBE", "input")})
        reply = await _serve(core, 88, JOIN)
        assert reply["error_code"] == Errors.TOPIC_AUTHORIZATION_FAILED
        assert core.router.sent == []
        core = _Core(denied={("READ", "app")})
        reply = await _serve(core, 88, JOIN)
        assert reply["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED
    asyncio.run(run())


PUSH = {"group_id": "app", "member_id": "m1", "topology_epoch": 1,
        "topology_description": {"subtopologies": [], "global_stores": []}}


def test_a_topology_description_push_is_refused_as_kafka_without_its_plugin_refuses_it():
    async def run():
        reply = await _serve(_Core(), 93, PUSH)
        assert (reply["error_code"], reply["error_message"]) == (
            Errors.UNSUPPORTED_VERSION,
            "The broker has no streams group topology description plugin configured.")
        denied = await _serve(_Core(denied={("READ", "app")}), 93, PUSH)
        assert denied["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED
    asyncio.run(run())
