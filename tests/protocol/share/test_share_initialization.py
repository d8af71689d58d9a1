"""A share group assigns only share-partitions whose state is initialised (Kafka 4.x's
``ShareGroupStatePartitionMetadata``): a heartbeat naming a topic whose partitions are not
asks for them, they are initialised on the shard's next tick, and that bumps the group's epoch
so the next heartbeat gets them; a load finishes an initialisation it finds begun; a deleted
topic leaves the set."""

from __future__ import annotations

from protocol import messages as m
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.records import Record
from protocol.share.records import (
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
)
from protocol.share.sessions import ShareInitialization
from tests.protocol.share.helpers import GROUP, assigned, heartbeat, image, join, new_shard, tid
from tests.protocol.test_replay import loaded

ORD = tid("orders")
EVERY = {(ORD, 0), (ORD, 1), (ORD, 2)}


def _state_records(records: list[Record]) -> list[ShareGroupStatePartitionMetadataValue]:
    return [r.value for r in records if type(r.key) is ShareGroupStatePartitionMetadataKey]


def test_a_new_groups_first_join_gets_nothing_until_its_partitions_are_initialised():
    shard = new_shard(initialized=False)
    first = shard.handle(_join_request("a"))
    assert first.response.member_epoch == 2 and assigned(first.response) == set()
    assert _state_records(first.records) == [
        ShareGroupStatePartitionMetadataValue({ORD: (0, 1, 2)}, {})]
    done = shard.tick(shard.now_ms)
    assert _state_records(done.records) == [
        ShareGroupStatePartitionMetadataValue({}, {ORD: (0, 1, 2)})]
    assert shard.groups[GROUP].group_epoch == 3  # Kafka's bump once they are initialised
    again = heartbeat(shard, "a", 2)
    assert again.member_epoch == 3 and assigned(again) == EVERY


def test_members_joining_before_the_initialisation_completes_split_the_partitions():
    shard = new_shard(initialized=False)
    for mid in "abc":
        assert assigned(join(shard, mid)) == set()
    shard.tick(shard.now_ms)
    held = {mid: assigned(heartbeat(shard, mid, shard.groups[GROUP].members[mid].member_epoch))
            for mid in "abc"}
    assert all(len(parts) == 1 for parts in held.values()), held
    assert set().union(*held.values()) == EVERY


def test_a_heartbeat_asks_once_while_an_initialisation_is_under_way():
    shard = new_shard(initialized=False)
    join(shard, "a")
    second = shard.handle(_join_request("b"))
    assert _state_records(second.records) == []


def test_a_load_that_finds_an_initialisation_begun_completes_it_on_its_first_tick():
    shard = new_shard(initialized=False)
    log = shard.handle(_join_request("a")).records
    fresh = loaded(shard, log)
    assert fresh.timers.deadline(ShareInitialization(GROUP)) is not None
    fresh.tick(fresh.now_ms)
    assert fresh.groups[GROUP].initialized == {ORD: (0, 1, 2)}
    assert assigned(heartbeat(fresh, "a", 2)) == EVERY


def test_a_deleted_topic_leaves_the_set_and_a_new_one_of_its_name_is_initialised_anew():
    shard = new_shard()
    join(shard, "a", topics=("orders", "audit"))
    without_audit = MetadataImage([t for t in image().topics() if t.name != "audit"])
    shard.update_metadata(without_audit)
    assert tid("audit") not in shard.groups[GROUP].initialized
    shard.update_metadata(MetadataImage([*without_audit.topics(),
                                         TopicMetadata("T-audit-2", "audit", 1)]))
    epoch = shard.groups[GROUP].members["a"].member_epoch
    asked = shard.handle(_beat("a", epoch))
    assert _state_records(asked.records)[0].initializing_topics == {"T-audit-2": (0,)}


def test_deleting_the_group_deletes_its_initialised_set():
    shard = new_shard()
    join(shard, "a")
    heartbeat(shard, "a", -1)
    result = shard.handle(m.DeleteGroupsRequest([GROUP]))
    assert Record(ShareGroupStatePartitionMetadataKey(GROUP), None) in result.records
    assert GROUP not in shard.groups


def _join_request(member: str) -> m.ShareGroupHeartbeatRequest:
    return m.ShareGroupHeartbeatRequest(GROUP, member, 0, subscribed_topic_names=["orders"])


def _beat(member: str, epoch: int) -> m.ShareGroupHeartbeatRequest:
    return m.ShareGroupHeartbeatRequest(GROUP, member, epoch)
