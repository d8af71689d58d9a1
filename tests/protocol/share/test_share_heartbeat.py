"""ShareGroupHeartbeat: joining, the simple assignor's targets, epochs, leaving, fencing,
session expiry, the size limit, metadata changes, describe, listing, and the requests of other
group types refused as Kafka 4.2 refuses them."""

from __future__ import annotations

import pytest

from protocol import messages as m
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from tests.protocol.share.helpers import (
    GROUP,
    assigned,
    heartbeat,
    image,
    join,
    new_shard,
    tid,
)

ORD = tid("orders")


def test_first_member_gets_every_partition_at_epoch_two():
    """A new group is at epoch 1 and its first member's join bumps it (Kafka 4.3's
    KAFKA-20268; share groups are not the seeds')."""
    shard = new_shard()
    resp = join(shard, "a")
    assert (resp.member_id, resp.member_epoch, resp.heartbeat_interval_ms) == ("a", 2, 5_000)
    assert assigned(resp) == {(ORD, 0), (ORD, 1), (ORD, 2)}


def test_members_split_partitions_and_share_them_when_they_outnumber_them():
    shard = new_shard()
    join(shard, "a")
    b = join(shard, "b")
    assert b.member_epoch == 3 and assigned(b) == {(ORD, 1)}
    a = heartbeat(shard, "a", 2)
    assert a.member_epoch == 3 and assigned(a) == {(ORD, 0), (ORD, 2)}
    for mid in ("c", "d"):
        join(shard, mid)
    owners = {mid: assigned(heartbeat(shard, mid, 0, ["orders"])) for mid in "abcd"}
    covered = set().union(*owners.values())
    assert covered == {(ORD, 0), (ORD, 1), (ORD, 2)}  # every partition to at least one member
    assert all(len(v) == 1 for v in owners.values())  # members share, each reads one


def test_a_steady_heartbeat_sends_no_assignment():
    shard = new_shard()
    join(shard, "a")
    resp = heartbeat(shard, "a", 2)
    assert resp.error_code == 0 and resp.assignment is None and resp.member_epoch == 2


def test_subscribing_to_a_new_topic_bumps_the_epoch_and_assigns_it():
    shard = new_shard()
    join(shard, "a")
    resp = heartbeat(shard, "a", 2, ["orders", "audit"])
    assert resp.member_epoch == 3
    assert (tid("audit"), 0) in assigned(resp)


def test_a_topic_that_does_not_exist_yet_is_assigned_when_it_is_created():
    shard = new_shard()
    resp = join(shard, "a", topics=("later",))
    assert assigned(resp) == set()
    from protocol.metadata import MetadataImage, TopicMetadata

    grown = MetadataImage([*image().topics(), TopicMetadata("T-later", "later", 2)])
    shard.update_metadata(grown)
    resp = heartbeat(shard, "a", 2)  # names it: its share-partitions are initialised first
    assert (resp.member_epoch, resp.assignment) == (2, None)
    shard.tick(shard.now_ms)  # initialised: the epoch is bumped and the target covers them
    resp = heartbeat(shard, "a", 2)
    assert resp.member_epoch == 3 and assigned(resp) == {("T-later", 0), ("T-later", 1)}


def test_growing_a_topic_rebalances_the_group_once_its_new_partition_is_initialised():
    shard = new_shard()
    join(shard, "a")
    shard.update_metadata(image(orders=4))
    resp = heartbeat(shard, "a", 2)
    assert (resp.member_epoch, resp.assignment) == (2, None)
    shard.tick(shard.now_ms)
    resp = heartbeat(shard, "a", 2)
    assert resp.member_epoch == 3 and (ORD, 3) in assigned(resp)


def test_a_stale_or_future_epoch_is_fenced_and_changes_nothing():
    shard = new_shard()
    join(shard, "a")
    join(shard, "b")
    for epoch in (2, 5):
        result = shard.handle(m.ShareGroupHeartbeatRequest(GROUP, "b", epoch))
        assert result.response.error_code == Errors.FENCED_MEMBER_EPOCH
        assert result.records == []
    assert heartbeat(shard, "b", 3).error_code == 0


def test_a_fenced_member_rejoins_with_epoch_zero_under_its_id():
    shard = new_shard()
    join(shard, "a")
    resp = heartbeat(shard, "a", 0, ["orders"])
    assert resp.error_code == 0 and resp.member_epoch == 2 and assigned(resp)


def test_an_unknown_member_is_refused():
    shard = new_shard()
    join(shard, "a")
    assert heartbeat(shard, "zz", 2).error_code == Errors.UNKNOWN_MEMBER_ID
    assert heartbeat(shard, "zz", -1).error_code == Errors.UNKNOWN_MEMBER_ID
    # A group that does not exist is Kafka's GROUP_ID_NOT_FOUND.
    assert heartbeat(shard, "zz", 3, group="nope").error_code == Errors.GROUP_ID_NOT_FOUND


def test_leaving_removes_the_member_and_rebalances_the_rest():
    shard = new_shard()
    join(shard, "a")
    join(shard, "b")
    resp = heartbeat(shard, "b", -1)
    assert (resp.error_code, resp.member_epoch) == (0, -1)
    a = heartbeat(shard, "a", 2)
    assert a.member_epoch == 4 and assigned(a) == {(ORD, 0), (ORD, 1), (ORD, 2)}
    assert "b" not in shard.groups[GROUP].members


def test_a_member_that_stops_heartbeating_is_removed_after_the_session_timeout():
    shard = new_shard()
    join(shard, "a")
    join(shard, "b")
    shard.tick(40_000)
    assert heartbeat(shard, "a", 2).member_epoch == 3
    shard.tick(45_000)
    assert set(shard.groups[GROUP].members) == {"a"}
    shard.tick(85_000)
    assert shard.groups[GROUP].members == {}
    assert shard.groups[GROUP].state == "empty"


def test_the_group_size_limit_refuses_one_member_too_many():
    shard = new_shard(config=CoordinatorConfig(group_share_max_size=2))
    join(shard, "a")
    join(shard, "b")
    result = shard.handle(m.ShareGroupHeartbeatRequest(GROUP, "c", 0,
                                                      subscribed_topic_names=["orders"]))
    assert result.response.error_code == Errors.GROUP_MAX_SIZE_REACHED and result.records == []


def test_the_default_size_limit_is_two_hundred():
    assert CoordinatorConfig().group_share_max_size == 200


@pytest.mark.parametrize(
    "req",
    [
        m.ShareGroupHeartbeatRequest("", "a", 0, subscribed_topic_names=["orders"]),
        m.ShareGroupHeartbeatRequest(GROUP, "", 0, subscribed_topic_names=["orders"]),
        m.ShareGroupHeartbeatRequest(GROUP, "a", -2),
        m.ShareGroupHeartbeatRequest(GROUP, "a", 0),
        m.ShareGroupHeartbeatRequest(GROUP, "a", 0, subscribed_topic_names=[]),
        m.ShareGroupHeartbeatRequest(GROUP, "a", 0, rack_id="", subscribed_topic_names=["x"]),
        m.ShareGroupHeartbeatRequest(GROUP, "a", "1"),  # type: ignore[arg-type]
        m.ShareGroupHeartbeatRequest(GROUP, "a", 2**31),
    ],
    ids=["empty group", "empty member", "epoch -2", "join without topics", "empty topics",
         "empty rack", "epoch not an int", "epoch out of int32"],
)
def test_a_malformed_heartbeat_is_invalid_request_and_changes_nothing(req):
    shard = new_shard(initialized=False)
    result = shard.handle(req)
    assert result.response.error_code == Errors.INVALID_REQUEST
    assert result.records == [] and shard.groups == {}


def test_a_share_heartbeat_on_a_consumer_group_is_group_id_not_found():
    shard = new_shard()
    shard.handle(m.ConsumerGroupHeartbeatRequest("cg", "", 0, rebalance_timeout_ms=5000,
                                                 subscribed_topic_names=["orders"],
                                                 topic_partitions=[]))
    resp = heartbeat(shard, "a", 0, ["orders"], group="cg")
    assert resp.error_code == Errors.GROUP_ID_NOT_FOUND


def test_requests_of_other_group_types_to_a_share_group_are_refused_as_kafka_does():
    shard = new_shard()
    join(shard, "a")
    consumer = shard.handle(m.ConsumerGroupHeartbeatRequest(
        GROUP, "", 0, rebalance_timeout_ms=5000, subscribed_topic_names=["orders"],
        topic_partitions=[])).response
    assert consumer.error_code == Errors.GROUP_ID_NOT_FOUND
    classic = shard.handle(m.JoinGroupRequest(
        group_id=GROUP, member_id="", protocol_type="consumer", session_timeout_ms=10_000,
        protocols=[m.JoinGroupRequestProtocol("range", b"")])).response
    assert classic.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    sync = shard.handle(m.SyncGroupRequest(group_id=GROUP, generation_id=1, member_id="x"))
    assert sync.response.error_code == Errors.UNKNOWN_MEMBER_ID
    commit = shard.handle(m.OffsetCommitRequest(group_id=GROUP, generation_id_or_member_epoch=1,
                                                member_id="a", topics=[]))
    assert commit.response.error_code == Errors.GROUP_ID_NOT_FOUND
    fetch = shard.handle(m.OffsetFetchRequest(group_id=GROUP, topics=None))
    assert fetch.response.error_code == Errors.GROUP_ID_NOT_FOUND
    describe = shard.handle(m.ConsumerGroupDescribeRequest([GROUP])).response
    assert describe.groups[0].error_code == Errors.GROUP_ID_NOT_FOUND
    assert shard.groups[GROUP].group_type == "share"


def test_describe_shows_members_with_topic_names_and_the_simple_assignor():
    shard = new_shard()
    join(shard, "a")
    heartbeat(shard, "a", 2, rack_id="r1", client_id="cli", client_host="/1.2.3.4")
    group = shard.handle(m.ShareGroupDescribeRequest([GROUP, "missing"])).response.groups
    assert (group[0].group_state, group[0].group_epoch, group[0].assignor_name) == (
        "stable", 2, "simple")
    member = group[0].members[0]
    assert (member.rack_id, member.client_id, member.client_host) == ("r1", "cli", "/1.2.3.4")
    assert member.assignment.topic_partitions[0].topic_name == "orders"
    assert group[1].error_code == Errors.GROUP_ID_NOT_FOUND


def test_list_groups_shows_type_share_and_filters_on_it():
    shard = new_shard()
    join(shard, "a")
    listed = shard.handle(m.ListGroupsRequest(types_filter=["share"])).response.groups
    assert [(g.group_id, g.group_type, g.protocol_type, g.group_state) for g in listed] == [
        (GROUP, "share", "share", "stable")]
    classic = shard.handle(m.DescribeGroupsRequest([GROUP])).response.groups[0]
    assert classic.protocol_type == "share"


def test_an_empty_share_group_can_be_deleted_and_a_live_one_cannot():
    shard = new_shard()
    join(shard, "a")
    resp = shard.handle(m.DeleteGroupsRequest([GROUP])).response
    assert resp.results[0].error_code == Errors.NON_EMPTY_GROUP
    heartbeat(shard, "a", -1)
    resp = shard.handle(m.DeleteGroupsRequest([GROUP])).response
    assert resp.results[0].error_code == 0 and GROUP not in shard.groups


def test_an_empty_share_group_outlives_the_retention_checks_that_delete_other_empty_groups():
    # Kafka's ShareGroup.shouldExpire is false: its share-partitions' state stays.
    shard = new_shard()
    join(shard, "a")
    assert heartbeat(shard, "a", -1).error_code == Errors.NONE
    check_ms = CoordinatorConfig().offsets_retention_check_interval_ms
    for t in (check_ms, 2 * check_ms):
        shard.tick(t)
    assert GROUP in shard.groups and not shard.groups[GROUP].members
