"""A regex subscription resolves to the topics its member may DESCRIBE, as Kafka 4.0's
coordinator filters a regex's matches by the subscriber's principal (KAFKA-18813, issue 30's
M6): a topic the principal may not see is never assigned to it, one created later included;
what it may see follows its heartbeats' view, and replays from the records."""

from __future__ import annotations

from protocol import messages as m
from protocol.codec import decode_record, encode_record
from protocol.consumer.records import ConsumerGroupMemberMetadataValue
from protocol.record_fields import decoder
from protocol.security.acls import AclBinding, TopicView
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import Member, image

ALICE, HOST = "User:alice", "10.0.0.1"
# Alice may describe every topic named orders-..., but not orders-b.
SEES_ORDERS = TopicView.of([
    AclBinding(ALICE, "TOPIC", "orders-", "DESCRIBE", "ALLOW", "PREFIXED"),
    AclBinding(ALICE, "TOPIC", "orders-b", "DESCRIBE", "DENY"),
    AclBinding("User:bob", "TOPIC", "orders-b", "DESCRIBE", "ALLOW"),  # not hers: left out
], ALICE, HOST)


def _joined(shard: GroupCoordinatorShard, view: TopicView | None) -> Member:
    member = Member(shard, "A", topics=[])
    member.accept(shard.handle(m.ConsumerGroupHeartbeatRequest(
        "g", "A", 0, rebalance_timeout_ms=1000, subscribed_topic_regex="orders-.*",
        topic_partitions=[], topic_view=view)).response)
    for _ in range(3):
        member.heartbeat(topic_view=view)
    return member


def test_a_regex_is_assigned_only_the_topics_its_member_may_describe():
    shard = GroupCoordinatorShard(metadata=image(**{"orders-a": 1, "orders-b": 1, "other": 1}))
    assert len(SEES_ORDERS.bindings) == 2  # bob's binding is not hers
    assert _joined(shard, SEES_ORDERS).owned == {"orders-a-id": (0,)}


def test_without_a_view_a_regex_is_assigned_every_match():
    shard = GroupCoordinatorShard(metadata=image(**{"orders-a": 1, "orders-b": 1}))
    assert _joined(shard, None).owned == {"orders-a-id": (0,), "orders-b-id": (0,)}


def test_a_topic_created_later_is_assigned_only_if_the_member_may_describe_it():
    shard = GroupCoordinatorShard(metadata=image(**{"orders-a": 1, "orders-b": 1}))
    member = _joined(shard, SEES_ORDERS)
    shard.update_metadata(image(**{"orders-a": 1, "orders-b": 1, "orders-c": 1, "hidden": 1}))
    for _ in range(3):
        member.heartbeat(topic_view=SEES_ORDERS)
    assert member.owned == {"orders-a-id": (0,), "orders-c-id": (0,)}


def test_a_wider_view_on_a_later_heartbeat_rebalances_onto_the_topic_it_may_now_see():
    shard = GroupCoordinatorShard(metadata=image(**{"orders-a": 1, "orders-b": 1}))
    member = _joined(shard, SEES_ORDERS)
    epoch = shard.groups["g"].group_epoch
    wider = TopicView.of([AclBinding(ALICE, "TOPIC", "orders-", "DESCRIBE", "ALLOW",
                                     "PREFIXED")], ALICE, HOST)
    for _ in range(3):
        member.heartbeat(topic_view=wider)
    assert shard.groups["g"].group_epoch == epoch + 1
    assert member.owned == {"orders-a-id": (0,), "orders-b-id": (0,)}


def test_the_view_is_in_the_members_record_and_a_replay_resolves_the_same():
    shard = GroupCoordinatorShard(metadata=image(**{"orders-a": 1, "orders-b": 1}))
    records = []
    member = Member(shard, "A", topics=[])
    res = shard.handle(m.ConsumerGroupHeartbeatRequest(
        "g", "A", 0, rebalance_timeout_ms=1000, subscribed_topic_regex="orders-.*",
        topic_partitions=[], topic_view=SEES_ORDERS))
    records += res.records
    member.accept(res.response)
    replayed = GroupCoordinatorShard(metadata=image(**{"orders-a": 1, "orders-b": 1}))
    for record in records:
        replayed.replay(decode_record(encode_record(record)))
    assert replayed.groups["g"].members["A"].topic_view == SEES_ORDERS
    assert replayed.groups["g"].target == shard.groups["g"].target
    assert set(replayed.groups["g"].target["A"].partitions) == {"orders-a-id"}


def test_a_member_record_written_before_views_existed_reads_with_none():
    old = [None, None, "c", "h", ["orders"], None, None, [], 5000, None]  # ten fields
    value = decoder(ConsumerGroupMemberMetadataValue)(old, "value")
    assert value.topic_view is None and value.subscribed_topic_names == ("orders",)
