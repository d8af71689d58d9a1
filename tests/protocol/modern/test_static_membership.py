"""The static-membership rules the kernel decides once for every modern group type
(``protocol/modern/rules.py``; docs/decisions.md, "One kernel for KIP-848-style groups")."""

from __future__ import annotations

from protocol import messages as m
from protocol.connect import units as u
from protocol.connect.records import (
    ConnectGroupCurrentMemberAssignmentKey,
    ConnectGroupCurrentMemberAssignmentValue,
    ConnectGroupMemberMetadataKey,
    ConnectGroupMemberMetadataValue,
    ConnectGroupMetadataKey,
    ConnectGroupMetadataValue,
)
from protocol.errors import Errors
from protocol.records import ClassicMemberMetadata, Record
from protocol.shard import GroupCoordinatorShard
from tests.protocol.connect.workers import Worker, connectors
from tests.protocol.driver import Member, image
from tests.protocol.migration.test_migration import classic_group_at_generation_22


def test_a_consumer_heartbeat_naming_an_unknown_instance_id_is_unknown_member_and_changes_nothing():
    shard = GroupCoordinatorShard(metadata=image(foo=2))
    a = Member(shard, "A")
    a.join()
    req = m.ConsumerGroupHeartbeatRequest("g", "A", a.epoch, instance_id="nobody")
    res = shard.handle(req)
    assert res.response.error_code == Errors.UNKNOWN_MEMBER_ID
    assert res.records == []


def test_a_worker_heartbeat_naming_an_unknown_instance_id_is_unknown_member_and_changes_nothing():
    shard = GroupCoordinatorShard(metadata=connectors(a=2))
    w = Worker(shard, "W")
    w.join()
    req = m.ConnectGroupHeartbeatRequest("cg", "W", w.epoch, instance_id="nobody")
    res = shard.handle(req)
    assert res.response.error_code == Errors.UNKNOWN_MEMBER_ID
    assert res.records == []


def test_a_worker_under_another_workers_instance_id_is_fenced_as_a_consumer_is():
    shard = GroupCoordinatorShard(metadata=connectors(a=2))
    Worker(shard, "W1", instance_id="i").join()
    w2 = Worker(shard, "W2")
    w2.join()
    req = m.ConnectGroupHeartbeatRequest("cg", "W2", w2.epoch, instance_id="i")
    assert shard.handle(req).response.error_code == Errors.FENCED_INSTANCE_ID


def test_a_consumer_joining_under_a_classic_members_instance_id_takes_its_place():
    shard = classic_group_at_generation_22()
    Member(shard, "A2", instance_id="a").join()
    group = shard.groups["g"]
    assert group.static_members["a"] == "A2"
    assert "A" not in group.members
    assert group.members["A2"].metadata.classic_member_metadata is None


def test_a_worker_joining_under_a_classic_workers_instance_id_takes_its_place_and_work():
    # Classic Connect workers never have an instance id (a classic group with one is not
    # converted), so the group is made from records: the kernel's rule is the consumer's.
    shard = GroupCoordinatorShard(metadata=connectors(sink=2))
    classic = ClassicMemberMetadata(session_timeout_ms=10_000)
    meta = ConnectGroupMemberMetadataValue("i-A", rebalance_timeout_ms=5_000,
                                           classic_member_metadata=classic)
    current = ConnectGroupCurrentMemberAssignmentValue(3, 2, 0, ("sink",), {"sink": (0, 1)})
    for record in [
        Record(ConnectGroupMetadataKey("cg"), ConnectGroupMetadataValue(3)),
        Record(ConnectGroupMemberMetadataKey("cg", "A"), meta),
        Record(ConnectGroupCurrentMemberAssignmentKey("cg", "A"), current),
    ]:
        shard.replay(record)
    resp = Worker(shard, "N", instance_id="i-A").join()
    assert resp.error_code == Errors.NONE
    group = shard.groups["cg"]
    assert group.static_members["i-A"] == "N"
    assert "A" not in group.members
    worker = group.members["N"]
    assert worker.metadata.classic_member_metadata is None
    assert worker.held == u.of(["sink"], {"sink": [0, 1]})


def test_a_static_worker_back_from_a_temporary_leave_keeps_its_place_as_a_consumer_does():
    shard = GroupCoordinatorShard(metadata=connectors(a=2))
    w = Worker(shard, "W1", instance_id="i")
    w.join()
    epoch = shard.groups["cg"].group_epoch
    leave = m.ConnectGroupHeartbeatRequest("cg", "W1", -2, instance_id="i")
    assert shard.handle(leave).response.error_code == Errors.NONE
    assert Worker(shard, "W2", instance_id="i").join().error_code == Errors.NONE
    group = shard.groups["cg"]
    assert list(group.members) == ["W2"] and group.group_epoch == epoch
