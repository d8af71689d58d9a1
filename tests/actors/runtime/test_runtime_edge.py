"""Bad and big input at the runtime's edge: a clear error or a correct answer, never a dead actor.

Each test sends what a careless or hostile Ray client could send through ``Cluster.call`` (or
straight to a partition actor) and checks the answer, then that the partition is the same
process as before (nothing killed it, so Ray did not restart it) and still serves.
"""

from __future__ import annotations

import pytest
import ray

from protocol import messages as m
from protocol.errors import Errors
from protocol.types import MAX_STRING_BYTES

pytestmark = pytest.mark.ray

REBALANCE_TIMEOUT_MS = 60_000


def pids(cluster) -> list[int]:
    return [ray.get(cluster.partition(p).info.remote())["pid"]
            for p in range(cluster.num_partitions)]


def still_serving(cluster, before: list[int]) -> None:
    assert pids(cluster) == before, "a partition actor died"
    assert ray.get([cluster.partition(p).ready.remote()
                    for p in range(cluster.num_partitions)]) == ["active"] * len(before)
    resp = cluster.call(m.ListGroupsRequest())
    assert resp.error_code == Errors.NONE


def join(group_id: str, topic: str) -> m.ConsumerGroupHeartbeatRequest:
    return m.ConsumerGroupHeartbeatRequest(
        group_id, member_epoch=0, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        subscribed_topic_names=[topic], topic_partitions=[])


def test_objects_that_are_not_requests_get_invalid_request_and_kill_nothing(cluster):
    class Sneaky(str):
        """A string whose hash raises: the rules key dicts by group id."""

        def __hash__(self):
            raise RuntimeError("no hashing me")

    before = pids(cluster)
    not_requests = [None, "hello", 42, 1.5, b"x", ["a"], {"group_id": "g"}, ("g",), object(),
                    m.ErrorResponse(), m.ConsumerGroupHeartbeatResponse(),
                    m.TopicPartitions("t", [0])]
    for obj in not_requests:
        resp = cluster.call(obj, deadline_s=10)
        assert resp.error_code == Errors.INVALID_REQUEST, (obj, resp)
        assert "unknown request type" in resp.error_message
    sneaky = [
        join(Sneaky("edge-sneaky"), "t"),
        m.OffsetFetchRequest(group_id=Sneaky("edge-sneaky")),
        m.ConsumerGroupHeartbeatRequest("edge-sneaky", member_id=Sneaky("m"), member_epoch=0,
                                        rebalance_timeout_ms=1000,
                                        subscribed_topic_names=[Sneaky("t")],
                                        topic_partitions=[]),
    ]
    for req in sneaky:
        resp = cluster.call(req, deadline_s=10)
        assert resp.error_code == Errors.INVALID_REQUEST, resp
        assert "expected a string, got Sneaky" in resp.error_message
    # Straight to an actor: not a list, and a list of all that is refused before routing.
    partition = cluster.partition(0)
    [resp] = ray.get(partition.handle_batch.remote("not a list"))
    assert resp.error_code == Errors.INVALID_REQUEST
    replies = ray.get(partition.handle_batch.remote([*not_requests, *sneaky[:2]]))
    assert [r.error_code for r in replies] == [Errors.INVALID_REQUEST] * len(replies)
    still_serving(cluster, before)


def test_a_megabyte_long_group_id_is_refused_by_every_request_that_names_one(cluster):
    before = pids(cluster)
    huge = "g" * (1 << 20)
    wide = "é" * (MAX_STRING_BYTES // 2 + 1)  # few characters, too many UTF-8 bytes
    for group_id in (huge, wide):
        requests = [
            join(group_id, "t"),
            m.OffsetFetchRequest(group_id=group_id),
            m.OffsetCommitRequest(group_id=group_id),
            m.JoinGroupRequest(group_id=group_id, session_timeout_ms=10_000),
            m.ConsumerGroupDescribeRequest(group_ids=[group_id]),
            m.DescribeGroupsRequest(groups=["edge-ok", group_id]),
            m.DeleteGroupsRequest(groups_names=[group_id]),
        ]
        for req in requests:
            resp = cluster.call(req, deadline_s=10)
            errors = ([g.error_code for g in resp.groups] if hasattr(resp, "groups") else
                      [r.error_code for r in resp.results] if hasattr(resp, "results") else
                      [resp.error_code])
            assert set(errors) == {Errors.INVALID_REQUEST}, (type(req).__name__, resp)
    # The longest id Kafka could carry is a group like any other.
    longest = "g" * MAX_STRING_BYTES
    cluster.create_topic("edge-topic", 1)
    try:
        resp = cluster.call(m.OffsetCommitRequest(group_id=longest, topics=[
            m.OffsetCommitRequestTopic("edge-topic", [m.OffsetCommitRequestPartition(0, 5)])]))
        assert resp.topics[0].partitions[0].error_code == Errors.NONE
        fetched = cluster.call(m.OffsetFetchRequest(group_id=longest))
        assert [(t.name, p.committed_offset) for t in fetched.topics for p in t.partitions] == [
            ("edge-topic", 5)]
    finally:
        cluster.call(m.DeleteGroupsRequest(groups_names=[longest]))
        cluster.delete_topic("edge-topic")
    still_serving(cluster, before)


def test_a_commit_of_100000_partitions_is_applied_whole_and_fetched_back(cluster):
    before = pids(cluster)
    group, topic, n = "edge-big-commit", "edge-big-topic", 100_000
    cluster.create_topic(topic, n)
    try:
        resp = cluster.call(m.OffsetCommitRequest(group_id=group, topics=[
            m.OffsetCommitRequestTopic(topic, [m.OffsetCommitRequestPartition(p, p + 1)
                                               for p in range(n)])]), deadline_s=120)
        [t] = resp.topics
        assert len(t.partitions) == n
        assert {p.error_code for p in t.partitions} == {Errors.NONE}
        fetched = cluster.call(m.OffsetFetchRequest(group_id=group), deadline_s=120)
        offsets = {p.partition_index: p.committed_offset
                   for ft in fetched.topics for p in ft.partitions}
        assert offsets == {p: p + 1 for p in range(n)}
        still_serving(cluster, before)
    finally:
        cluster.call(m.DeleteGroupsRequest(groups_names=[group]))
        cluster.delete_topic(topic)


def test_a_group_of_10000_members_is_described_whole(cluster):
    before = pids(cluster)
    group, topic, n = "edge-ten-thousand", "edge-wide-topic", 10_000
    cluster.create_topic(topic, 50)
    # Sessions long enough that no member expires between the join and the describe.
    cluster.set_group_config(group, consumer_session_timeout_ms=60_000)
    coordinator = cluster.coordinator(group)
    try:
        joined = ray.get(coordinator.handle_batch.remote([join(group, topic) for _ in range(n)]))
        assert {r.error_code for r in joined} == {Errors.NONE}
        assert len({r.member_id for r in joined}) == n
        described = cluster.describe(group)
        assert described.error_code == Errors.NONE
        assert len(described.members) == n
        assert {mm.member_id for mm in described.members} == {r.member_id for r in joined}
        targets = [(tp.topic_id, p) for mm in described.members
                   for tp in mm.target_assignment.topic_partitions for p in tp.partitions]
        assert len(targets) == len(set(targets)) == 50  # each partition has one owner
        leave = [m.ConsumerGroupHeartbeatRequest(group, member_id=r.member_id, member_epoch=-1)
                 for r in joined]
        left = ray.get(coordinator.handle_batch.remote(leave))
        assert {r.error_code for r in left} == {Errors.NONE}
        assert cluster.describe(group).members == []
        still_serving(cluster, before)
    finally:
        cluster.call(m.DeleteGroupsRequest(groups_names=[group]))
        cluster.set_group_config(group)
        cluster.delete_topic(topic)
