"""Rules the two online migrations (classic <-> consumer, classic Connect <-> connect) share,
tested for both group types: they run on one driver (``conversion_driver``) and one set of
classic-member rules (``classic_in_modern``), and decisions.md says each rule once."""

from __future__ import annotations

from dataclasses import replace

import pytest

from protocol import messages as m
from protocol.classic.connect_protocol import WorkerState, encode_metadata
from protocol.classic.consumer_protocol import Subscription, encode_subscription
from protocol.classic.group import ClassicGroup
from protocol.classic.records import GroupMetadataKey
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import Member, image
from tests.protocol.migration.connect_sim import GROUP
from tests.protocol.migration.test_connect_migration import (
    WORK,
    classic_connect_group,
    fresh_shard,
    new_worker_join,
)
from tests.protocol.migration.test_migration import classic_group_at_generation_22


def converted_consumer_group() -> tuple[GroupCoordinatorShard, str]:
    """Classic A, B, C at generation 22, converted by A restarted with the new protocol."""
    shard = classic_group_at_generation_22()
    Member(shard, "A2", instance_id="a").join()
    return shard, "g"


def converted_connect_group() -> tuple[GroupCoordinatorShard, str]:
    """Classic workers A, B, C at generation 22, converted by the new-protocol worker n0."""
    shard = fresh_shard()
    classic_connect_group(shard, WORK)
    assert new_worker_join(shard).response.error_code == Errors.NONE
    return shard, GROUP


@pytest.mark.parametrize(
    ("converted", "leaving", "staying"),
    [
        (converted_consumer_group, [("A2", "a"), ("B", "b")], ["C"]),
        (converted_connect_group, [("n0", None), ("A", None)], ["B", "C"]),
    ],
    ids=["consumer", "connect"],
)
def test_a_leave_that_converts_the_group_back_answers_every_identity(converted, leaving, staying):
    shard, gid = converted()
    req = m.LeaveGroupRequest(gid, [m.MemberIdentity(mid, iid) for mid, iid in leaving])
    resp = shard.handle(req).response
    assert resp.error_code == Errors.NONE
    assert [(r.member_id, r.error_code) for r in resp.members] == [
        (mid, Errors.NONE) for mid, _ in leaving
    ]
    group = shard.groups[gid]
    assert isinstance(group, ClassicGroup) and sorted(group.members) == staying


def test_consumer_upgrade_refusal_names_the_policy_before_the_protocol_type():
    shard = GroupCoordinatorShard(
        CoordinatorConfig(group_consumer_migration_policy="disabled"), image(foo=6)
    )
    value = classic_group_at_generation_22().groups["g"].to_record()
    shard.replay(Record(GroupMetadataKey("g"), replace(value, protocol_type="connect")))
    resp = shard.handle(Member(shard, "X").join_request()).response
    assert resp.error_code == Errors.GROUP_ID_NOT_FOUND
    assert "upgrade to consumer is disabled" in resp.error_message


def test_connect_upgrade_refusal_names_the_policy_before_the_protocol_type():
    shard = fresh_shard(group_connect_migration_policy="disabled")
    classic_connect_group(shard, WORK, protocol_type="consumer")
    resp = new_worker_join(shard).response
    assert resp.error_code == Errors.GROUP_ID_NOT_FOUND
    assert "upgrade to connect is disabled" in resp.error_message


def classic_consumer_join(member_id: str) -> m.JoinGroupRequest:
    meta = encode_subscription(Subscription(["foo"]))
    protocols = [m.JoinGroupRequestProtocol("range", meta)]
    return m.JoinGroupRequest("g", 30_000, 60_000, member_id, None, "consumer", protocols)


def classic_connect_join(member_id: str) -> m.JoinGroupRequest:
    meta = encode_metadata(WorkerState("http://x/", 5), 2)
    protocols = [m.JoinGroupRequestProtocol("sessioned", meta)]
    return m.JoinGroupRequest(GROUP, 3_000, 5_000, member_id, None, "connect", protocols)


def with_new_consumer(shard: GroupCoordinatorShard) -> None:
    assert Member(shard, "X").join().error_code == Errors.NONE


def with_new_worker(shard: GroupCoordinatorShard) -> None:
    assert new_worker_join(shard, "X").response.error_code == Errors.NONE


@pytest.mark.parametrize(
    ("converted", "add_new", "classic_join"),
    [
        (converted_consumer_group, with_new_consumer, classic_consumer_join),
        (converted_connect_group, with_new_worker, classic_connect_join),
    ],
    ids=["consumer", "connect"],
)
def test_a_classic_join_with_a_new_protocol_members_id_takes_that_member_over(
    converted, add_new, classic_join
):
    shard, gid = converted()
    add_new(shard)
    before = shard.groups[gid].members["X"].metadata.classic_member_metadata
    resp = shard.handle(classic_join("X")).response
    assert resp.error_code == Errors.NONE and resp.member_id == "X"
    assert before is None
    group = shard.groups[gid]
    assert group.group_type != "classic"  # others still speak the new protocol
    assert group.members["X"].metadata.classic_member_metadata is not None
