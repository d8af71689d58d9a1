"""The gateway's group coroutines, from a Kafka request body to a Kafka response body, against
a real pure shard standing in for the partitions (no Ray, no sockets): each translates through
its row of the API table, refuses what the principal may not do, keeps the client's order of
groups, and shows no topic the principal may not DESCRIBE (issue 30's M6, as Kafka 4.0)."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from actors.gateway import dispatch
from actors.gateway.core import WireRequest
from protocol import messages as m
from protocol.api import BY_API_KEY
from protocol.errors import Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.security.acls import AclBinding, TopicView
from protocol.shard import GroupCoordinatorShard
from protocol.wire.codec import RequestHeader, encode_response
from protocol.wire.ids import topic_uuid
from protocol.wire.topics import TopicIndex

SECRET = "secret"
IMAGE = MetadataImage([TopicMetadata("tid-o", "orders", 2), TopicMetadata("tid-s", SECRET, 2)])
TOPIC_AUTHORIZATION_FAILED = 29
TICK_MS, MAX_TICKS = 1_000, 100


class _Router:
    """Every group on one shard: what ``actors.gateway.routing.Router`` answers, synchronously."""

    def __init__(self, shard: GroupCoordinatorShard) -> None:
        self.shard = shard
        self.sent: list[object] = []
        self.now_ms = 0

    async def call(self, request: object) -> object:
        """The reply, once the shard gives it (a JoinGroup waits for its rebalance: time is
        moved on until it completes, as the partition's timers would)."""
        self.sent.append(request)
        result = self.shard.handle(request)
        for _ in range(MAX_TICKS):
            if result.response is not None:
                return result.response
            self.now_ms += TICK_MS
            result = self.shard.tick(self.now_ms)
            result.response = next((resp for req, resp in result.replies if req is request), None)
        raise AssertionError(f"no reply to {request}")

    async def call_by_partition(self, group_ids, make) -> dict[str, object]:
        if not group_ids:
            return {}
        reply = await self.call(make(list(group_ids)))
        return dict.fromkeys(group_ids, reply)

    async def call_all(self, request: object) -> list[object]:
        return [await self.call(request)]


class _Core:
    """What the group coroutines read of ``GatewayCore``: the principal may do anything to
    any group or topic but ``secret``; the topics are ``orders`` and ``secret``."""

    def __init__(self) -> None:
        self.router = _Router(GroupCoordinatorShard(metadata=IMAGE))
        self.epochs: dict[tuple[str, str], int] = {}
        self.stream = SimpleNamespace(end_offset=lambda now_ms: 100)
        self.upstream = None  # the synthetic stream's end is every partition's

    def now_ms(self) -> int:
        return 0

    def topic_view(self, req) -> TopicView:
        return TopicView.of([AclBinding(req.principal, "TOPIC", "*", "DESCRIBE"),
                             AclBinding(req.principal, "TOPIC", SECRET, "DESCRIBE", "DENY")],
                            req.principal, req.client_host)

    def may(self, req, operation: str, resource_type: str, name: str) -> bool:
        return name != SECRET

    def saw_epoch(self, group_id: str, member_id: str | None, epoch: int) -> None:
        self.epochs[(group_id, member_id)] = epoch

    async def topics_knowing(self, names=(), uuids=()) -> TopicIndex:
        return TopicIndex()


def _serve(core: _Core, api_key: int, version: int, body: dict) -> dict:
    header = RequestHeader(api_key, version, 1, "client")
    req = WireRequest(header, body, "User:alice", "10.0.0.1", BY_API_KEY[api_key])
    reply = asyncio.run(dispatch.HANDLERS[api_key](core, req))
    encode_response(header, reply)  # what the coroutine returns, the codec can write
    return reply


def _join(core: _Core, group: str, version: int, member_id: str = "") -> dict:
    return _serve(core, 11, version, {
        "group_id": group, "session_timeout": 10_000, "rebalance_timeout": 10_000,
        "member_id": member_id, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}]})


def test_an_old_client_is_rejoined_with_its_new_member_id_in_one_request():
    core = _Core()
    reply = _join(core, "g", version=3)  # JoinGroup v3 predates MEMBER_ID_REQUIRED (KIP-394)
    assert reply["error_code"] == Errors.NONE and reply["member_id"]
    assert [type(r) for r in core.router.sent] == [m.JoinGroupRequest] * 2


def test_a_new_client_gets_member_id_required_and_its_epoch_is_remembered():
    core = _Core()
    first = _join(core, "g", version=9)
    assert first["error_code"] == Errors.MEMBER_ID_REQUIRED
    joined = _join(core, "g", version=9, member_id=first["member_id"])
    assert joined["error_code"] == Errors.NONE
    assert core.epochs[("g", joined["member_id"])] == joined["generation_id"]


def test_a_refused_group_request_never_reaches_the_partition():
    core = _Core()
    for api_key, body in [
        (11, {"group_id": SECRET, "session_timeout": 10_000, "protocols": []}),
        (12, {"group_id": SECRET, "generation_id": 1, "member_id": "m"}),
        (14, {"group_id": SECRET, "generation_id": 1, "member_id": "m"}),
        (47, {"group_id": SECRET, "topics": []}),
    ]:
        assert _serve(core, api_key, 0, body)["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED
    leave = _serve(core, 13, 3, {"group_id": SECRET, "members": [{"member_id": "m"}]})
    assert leave["error_code"] == Errors.GROUP_AUTHORIZATION_FAILED
    assert core.router.sent == []


def test_many_group_requests_answer_each_group_in_the_clients_order_refusing_per_group():
    core = _Core()
    _join(core, "b", version=3)
    described = _serve(core, 15, 5, {"groups": [SECRET, "b", "a"]})
    # Up to v5 Kafka answers a group it does not know NONE, Dead (GROUP_ID_NOT_FOUND from v6).
    assert [(g["group_id"], g["error_code"], g["group_state"]) for g in described["groups"]] == [
        (SECRET, Errors.GROUP_AUTHORIZATION_FAILED, ""), ("b", Errors.NONE, "CompletingRebalance"),
        ("a", Errors.NONE, "Dead")]
    assert described["groups"][1]["members"] and not described["groups"][2]["members"]

    modern = _serve(core, 69, 1, {"group_ids": ["a", SECRET]})
    assert [g["error_code"] for g in modern["groups"]] == [
        Errors.GROUP_ID_NOT_FOUND, Errors.GROUP_AUTHORIZATION_FAILED]
    assert modern["groups"][1]["error_message"] == f"Not authorized to access group {SECRET}."

    deleted = _serve(core, 42, 2, {"groups_names": [SECRET, "b"]})
    assert [(r["group_id"], r["error_code"]) for r in deleted["results"]] == [
        (SECRET, Errors.GROUP_AUTHORIZATION_FAILED), ("b", Errors.NON_EMPTY_GROUP)]
    assert [type(r) for r in core.router.sent[-3:]] == [
        m.DescribeGroupsRequest, m.ConsumerGroupDescribeRequest, m.DeleteGroupsRequest]
    assert [r.groups for r in core.router.sent if type(r) is m.DescribeGroupsRequest] == [
        ["b", "a"]]


def test_a_group_named_many_times_is_asked_about_once_and_answered_for_each_name():
    core = _Core()
    _join(core, "b", version=3)
    asked: list[str] = []
    may = core.may
    core.may = lambda req, op, kind, name: asked.append(name) or may(req, op, kind, name)
    times = 50_000
    described = _serve(core, 15, 5, {"groups": ["b", SECRET] * times})
    assert len(described["groups"]) == 2 * times
    assert {(g["group_id"], g["error_code"]) for g in described["groups"]} == {
        ("b", Errors.NONE), (SECRET, Errors.GROUP_AUTHORIZATION_FAILED)}
    assert core.router.sent[-1].groups == ["b"] and asked == ["b", SECRET]

    deleted = _serve(core, 42, 2, {"groups_names": ["gone"] * times})
    assert len(deleted["results"]) == times
    assert core.router.sent[-1].groups_names == ["gone"]


def test_list_groups_hides_the_groups_the_principal_may_not_describe():
    core = _Core()
    for group in ("b", SECRET, "a"):
        _join(core, group, version=3)
    listed = _serve(core, 16, 4, {"states_filter": []})
    assert listed["error_code"] == Errors.NONE
    assert [g["group_id"] for g in listed["groups"]] == ["a", "b"]


def test_a_group_named_many_times_is_translated_once_and_written_for_each_name():
    core = _Core()
    _join(core, "b", version=3)
    described = _serve(core, 15, 5, {"groups": ["b", SECRET] * 50_000})
    groups = described["groups"]
    assert groups[0] is groups[2] and groups[1] is groups[3]  # one translation each


# ------------------------------------------------------------- topics hidden (M6, KAFKA-18813)


def _commit_both(core: _Core, group: str) -> None:
    """Offsets of both topics, committed by a principal allowed to (straight to the shard)."""
    core.router.shard.handle(m.OffsetCommitRequest(group_id=group, topics=[
        m.OffsetCommitRequestTopic(t, [m.OffsetCommitRequestPartition(0, 7)])
        for t in ("orders", SECRET)]))


def test_offset_fetch_of_every_topic_shows_only_the_topics_the_principal_may_describe():
    core = _Core()
    _commit_both(core, "g")
    for version, body in ((7, {"group_id": "g", "topics": None, "require_stable": False}),
                          (8, {"groups": [{"group_id": "g", "topics": None}],
                               "require_stable": False})):
        reply = _serve(core, 9, version, body)
        topics = reply["topics"] if version < 8 else reply["groups"][0]["topics"]
        assert [t["name"] for t in topics] == ["orders"], version


def test_offset_fetch_of_named_topics_refuses_those_the_principal_may_not_describe():
    core = _Core()
    _commit_both(core, "g")
    reply = _serve(core, 9, 8, {"groups": [{"group_id": "g", "topics": [
        {"name": "orders", "partition_indexes": [0]},
        {"name": SECRET, "partition_indexes": [0, 1]}]}], "require_stable": False})
    topics = {t["name"]: t["partitions"] for t in reply["groups"][0]["topics"]}
    assert [(p["committed_offset"], p["error_code"]) for p in topics["orders"]] == [(7, 0)]
    assert [(p["partition_index"], p["committed_offset"], p["error_code"])
            for p in topics[SECRET]] == [(0, -1, TOPIC_AUTHORIZATION_FAILED),
                                         (1, -1, TOPIC_AUTHORIZATION_FAILED)]


def test_describe_share_group_offsets_shows_only_the_topics_the_principal_may_describe():
    core = _Core()
    shard = core.router.shard
    shard.handle(m.ShareGroupHeartbeatRequest(group_id="sg", member_id="m1",
                                              subscribed_topic_names=["orders", SECRET]))
    shard.handle(m.ShareGroupHeartbeatRequest(group_id="sg", member_id="m1", member_epoch=-1))
    shard.handle(m.AlterShareGroupOffsetsRequest(group_id="sg", topics=[
        m.AlterShareGroupOffsetsTopic(t, [m.AlterShareGroupOffsetsPartition(0, 5)])
        for t in ("orders", SECRET)]))
    every = _serve(core, 90, 0, {"groups": [{"group_id": "sg", "topics": None}]})
    assert [t["topic_name"] for t in every["groups"][0]["topics"]] == ["orders"]
    named = _serve(core, 90, 0, {"groups": [{"group_id": "sg", "topics": [
        {"topic_name": "orders", "partitions": [0]}, {"topic_name": SECRET, "partitions": [0]}]}]})
    topics = {t["topic_name"]: t["partitions"] for t in named["groups"][0]["topics"]}
    assert [(p["start_offset"], p["error_code"]) for p in topics["orders"]] == [(5, 0)]
    assert [(p["start_offset"], p["error_code"]) for p in topics[SECRET]] == [
        (-1, TOPIC_AUTHORIZATION_FAILED)]


def test_consumer_group_describe_hides_a_group_assigned_a_topic_the_principal_may_not_describe():
    core = _Core()
    for group, topic in (("open", "orders"), ("closed", SECRET)):
        core.router.shard.handle(m.ConsumerGroupHeartbeatRequest(
            group_id=group, member_id=f"{group}-m", rebalance_timeout_ms=5000,
            subscribed_topic_names=[topic], topic_partitions=[]))
    reply = _serve(core, 69, 1, {"group_ids": ["open", "closed"],
                                 "include_authorized_operations": False})
    shown, hidden = reply["groups"]
    assert shown["error_code"] == 0 and shown["members"][0]["assignment"]["topic_partitions"]
    assert (hidden["group_id"], hidden["error_code"], hidden["members"]) == (
        "closed", TOPIC_AUTHORIZATION_FAILED, [])
    assert hidden["error_message"] == (
        "The group has described topic(s) that the client is not authorized to describe.")


def test_a_regex_subscriber_is_assigned_only_the_topics_its_principal_may_describe():
    core = _Core()
    body = {"group_id": "g", "member_id": "m-1", "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout": 5000, "subscribed_topic_names": None,
            "subscribed_topic_regex": ".*", "server_assignor": None, "topic_partitions": []}
    reply = _serve(core, 68, 1, body)
    assert reply["error_code"] == Errors.NONE
    assigned = {t["topic_id"] for t in reply["assignment"]["topic_partitions"]}
    assert assigned == {topic_uuid("tid-o")}  # orders; never secret
    assert core.router.sent[-1].topic_view.principal == "User:alice"


def test_a_topic_named_many_times_is_authorized_once_per_request():
    """A commit or fetch naming one topic 50,000 times asks the authorizer about it once, not
    once an entry, on the listener's loop."""
    core = _Core()
    asked: list[str] = []
    may = core.may
    core.may = lambda req, op, kind, name: asked.append(name) or may(req, op, kind, name)
    times = 50_000
    commit = _serve(core, 8, 8, {
        "group_id": "g", "generation_id_or_member_epoch": -1, "member_id": "",
        "group_instance_id": None, "topics": [
            {"name": t, "partitions": [{"partition_index": 0, "committed_offset": 3,
                                        "committed_leader_epoch": -1,
                                        "committed_metadata": ""}]}
            for t in ("orders", SECRET) * times]})
    assert len(commit["topics"]) == 2 * times and sorted(set(asked)) == sorted(asked)
    asked.clear()
    fetched = _serve(core, 9, 8, {"groups": [{"group_id": "g", "topics": [
        {"name": t, "partition_indexes": [0]} for t in ("orders", SECRET) * times]}],
        "require_stable": False})
    topics = fetched["groups"][0]["topics"]
    assert len(topics) == 2 * times and sorted(set(asked)) == sorted(asked)
