"""Seed 002's "Online Migration", step by step, and the conversion back.

A classic group at generation 22 (A, B, C) meets A restarted with the new protocol. The tables
of the seed are checked with ``snapshot`` (KIP-848 view) and each classic member's phase
(``PreparingRebalance`` / ``CompletingRebalance`` / ``Stable``) as the seed names it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol import messages as m
from protocol.classic.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from protocol.classic.group import ClassicGroup
from protocol.classic.records import GroupMemberMetadata, GroupMetadataKey, GroupMetadataValue
from protocol.config import CoordinatorConfig
from protocol.consumer.group import ConsumerGroup
from protocol.errors import Errors
from protocol.records import OffsetCommitKey, OffsetCommitValue, Record
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import Member, image, snapshot

SESSION_MS = 30_000


@dataclass
class Classic:
    """A classic eager consumer, as seed 002 assumes: it revokes everything before rejoining."""

    shard: GroupCoordinatorShard
    member_id: str
    instance_id: str | None = None
    generation: int = -1
    owned: list[str] = field(default_factory=list)

    def subscription(self) -> bytes:
        return encode_subscription(Subscription(["foo"]))

    def heartbeat(self) -> Errors:
        req = m.HeartbeatRequest("g", self.generation, self.member_id, self.instance_id)
        return Errors(self.shard.handle(req).response.error_code)

    def rejoin(self) -> m.JoinGroupResponse:
        self.owned = []  # eager: revoke all first
        req = m.JoinGroupRequest(
            "g",
            SESSION_MS,
            60_000,
            self.member_id,
            self.instance_id,
            "consumer",
            [m.JoinGroupRequestProtocol("range", self.subscription())],
        )
        resp = self.shard.handle(req).response
        assert resp.error_code == Errors.NONE, resp
        self.generation = resp.generation_id
        return resp

    def sync(self) -> list[str]:
        req = m.SyncGroupRequest("g", self.generation, self.member_id, self.instance_id)
        resp = self.shard.handle(req).response
        assert resp.error_code == Errors.NONE, resp
        assigned = decode_assignment(resp.assignment).assigned_partitions
        self.owned = [f"{t}-{p}" for t, ps in assigned for p in sorted(ps)]
        return self.owned

    def leave(self) -> m.LeaveGroupResponse:
        req = m.LeaveGroupRequest("g", [m.MemberIdentity(self.member_id, self.instance_id)])
        return self.shard.handle(req).response


def _classic_member(mid: str, iid: str, parts: list[int]) -> GroupMemberMetadata:
    return GroupMemberMetadata(
        member_id=mid,
        group_instance_id=iid,
        client_id=mid,
        client_host="/10.0.0.1",
        rebalance_timeout_ms=60_000,
        session_timeout_ms=SESSION_MS,
        subscription=encode_subscription(Subscription(["foo"])),
        assignment=encode_assignment(Assignment([("foo", parts)])),
    )


def classic_group_at_generation_22() -> GroupCoordinatorShard:
    # No KIP-1263 interval: a leave's turn computes the target, as the seed tells it.
    config = CoordinatorConfig(group_consumer_assignment_interval_ms=0)
    shard = GroupCoordinatorShard(config=config, metadata=image(foo=6))
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=22,
        protocol_name="range",
        leader="A",
        current_state_timestamp=0,
        members=(
            _classic_member("A", "a", [0, 1]),
            _classic_member("B", "b", [3, 4]),
            _classic_member("C", "c", [2, 5]),
        ),
        state="stable",
    )
    shard.replay(Record(GroupMetadataKey("g"), value))
    shard.replay(Record(OffsetCommitKey("g", "foo", 0), OffsetCommitValue(offset=42)))
    return shard


def phase(shard: GroupCoordinatorShard, member_id: str) -> str:
    group = shard.group_of("g", "consumer")
    return shard.classic_members.phase(group, group.members[member_id])


def test_online_migration_unfolds_as_the_seed_describes():
    shard = classic_group_at_generation_22()
    assert isinstance(shard.groups["g"], ClassicGroup)

    # A leaves and rejoins with the new protocol: the group is converted; the generation
    # becomes the group epoch, the classic assignment the target and current assignments.
    a = Member(shard, "A2", instance_id="a")
    a.join()
    assert isinstance(shard.groups["g"], ConsumerGroup)
    assert snapshot(shard) == {
        "group_epoch": 22,
        "members": ["A2", "B", "C"],
        "target_epoch": 22,
        "target": {"A2": ["foo-0", "foo-1"], "B": ["foo-3", "foo-4"], "C": ["foo-2", "foo-5"]},
        "current": {
            "A2": (22, ["foo-0", "foo-1"], []),
            "B": (22, ["foo-3", "foo-4"], []),
            "C": (22, ["foo-2", "foo-5"], []),
        },
    }
    assert a.epoch == 22
    b, c = Classic(shard, "B", "b", 22), Classic(shard, "C", "c", 22)
    assert b.heartbeat() == c.heartbeat() == Errors.NONE  # nothing changed for them

    # B leaves; the coordinator computes a new target and triggers a rebalance for C.
    assert b.leave().members[0].error_code == Errors.NONE
    assert snapshot(shard)["group_epoch"] == 23
    assert snapshot(shard)["target"] == {
        "A2": ["foo-0", "foo-1", "foo-3"],
        "C": ["foo-2", "foo-4", "foo-5"],
    }
    assert phase(shard, "C") == "preparing_rebalance"
    assert c.heartbeat() == Errors.REBALANCE_IN_PROGRESS

    # C revokes all (eager) and sends JoinGroup: all its partitions are free, epoch 23.
    joined = c.rejoin()
    assert (joined.generation_id, joined.leader) == (23, "")
    assert phase(shard, "C") == "completing_rebalance"
    assert snapshot(shard)["current"]["C"] == (23, ["foo-2", "foo-4", "foo-5"], [])
    # In the meantime, A heartbeats and transitions to epoch 23 as well.
    a.heartbeat()
    assert snapshot(shard)["current"]["A2"] == (23, ["foo-0", "foo-1", "foo-3"], [])
    # C's SyncGroup collects the assignment; C is Stable.
    assert c.sync() == ["foo-2", "foo-4", "foo-5"]
    assert phase(shard, "C") == "stable"
    assert c.heartbeat() == Errors.NONE

    # B rejoins with the new protocol: the epoch is bumped, and C must give one up (the seed
    # has C give foo-4 up; the uniform assignor picks foo-5 — either is balanced and sticky).
    b2 = Member(shard, "B2", instance_id="b")
    b2.join()
    snap = snapshot(shard)
    assert snap["group_epoch"] == 24
    c_keeps = snap["target"]["C"]
    (moved,) = {"foo-2", "foo-4", "foo-5"} - set(c_keeps)
    assert snap["target"] == {
        "A2": ["foo-0", "foo-1"],
        "B2": sorted(["foo-3", moved]),
        "C": c_keeps,
    }
    assert snap["current"]["B2"] == (24, [], sorted(["foo-3", moved]))
    assert phase(shard, "C") == "preparing_rebalance"
    # A heartbeats and is told to revoke foo-3.
    a.heartbeat()
    assert a.owned == {"foo-id": (0, 1)} and a.epoch == 23
    # C rejoins owning nothing: epoch 24 at once, its partition released, CompletingRebalance.
    assert c.heartbeat() == Errors.REBALANCE_IN_PROGRESS
    assert c.rejoin().generation_id == 24
    assert phase(shard, "C") == "completing_rebalance"
    assert snapshot(shard)["current"]["C"] == (24, c_keeps, [])
    b2.heartbeat()
    assert snapshot(shard)["current"]["B2"] == (24, [moved], ["foo-3"])
    assert c.sync() == c_keeps
    assert phase(shard, "C") == "stable"
    # A confirms foo-3's revocation: epoch 24, foo-3 released; B heartbeats and gets it.
    a.heartbeat()
    assert snapshot(shard)["current"]["A2"] == (24, ["foo-0", "foo-1"], [])
    b2.heartbeat()
    assert snapshot(shard) == {
        "group_epoch": 24,
        "members": ["A2", "B2", "C"],
        "target_epoch": 24,
        "target": {"A2": ["foo-0", "foo-1"], "B2": sorted(["foo-3", moved]), "C": c_keeps},
        "current": {
            "A2": (24, ["foo-0", "foo-1"], []),
            "B2": (24, sorted(["foo-3", moved]), []),
            "C": (24, c_keeps, []),
        },
    }
    assert shard.group_of("g", "consumer").state == "stable"


def test_the_group_converts_back_when_its_last_new_protocol_member_leaves():
    shard = classic_group_at_generation_22()
    a = Member(shard, "A2", instance_id="a")
    a.join()
    b, c = Classic(shard, "B", "b", 22), Classic(shard, "C", "c", 22)
    a.leave()
    group = shard.groups["g"]
    assert isinstance(group, ClassicGroup)
    assert group.state == "preparing_rebalance"
    assert sorted(group.members) == ["B", "C"]
    # The classic members learn it by heartbeat and rejoin as a classic group.
    assert b.heartbeat() == Errors.REBALANCE_IN_PROGRESS
    assert [h.reason for h in _history(shard)][-1] == "downgrade to the classic protocol"
    rb = m.JoinGroupRequest(
        "g",
        SESSION_MS,
        60_000,
        "B",
        "b",
        "consumer",
        [m.JoinGroupRequestProtocol("range", b.subscription())],
    )
    rc = m.JoinGroupRequest(
        "g",
        SESSION_MS,
        60_000,
        "C",
        "c",
        "consumer",
        [m.JoinGroupRequestProtocol("range", c.subscription())],
    )
    assert shard.handle(rb).response is None  # waits for C
    res = shard.handle(rc)
    replies = dict((q.member_id, r) for q, r in res.replies)
    assert {r.generation_id for r in replies.values()} == {group.generation_id}
    assert group.generation_id == 23 and group.state == "completing_rebalance"
    # Offsets were untouched by both conversions.
    assert shard.offsets is not None
    assert any(isinstance(r.key, GroupMetadataKey) and r.value for r in res.records)


def test_conversion_is_persisted_so_a_reload_sees_the_consumer_group():
    shard = classic_group_at_generation_22()
    records: list[Record] = []
    a = Member(shard, "A2", instance_id="a")
    res = shard.handle(a.join_request())
    records += res.records
    assert records[0] == Record(GroupMetadataKey("g"), None)
    fresh = GroupCoordinatorShard(metadata=image(foo=6))
    fresh.replay(
        Record(GroupMetadataKey("g"), classic_group_at_generation_22().groups["g"].to_record())
    )
    for r in records:
        fresh.replay(r)
    assert snapshot(fresh) == snapshot(shard)


def test_a_classic_group_that_is_rebalancing_is_not_converted_yet():
    """Cohort's rule, not Kafka 4.4's (docs/decisions.md, "Online migration")."""
    shard = classic_group_at_generation_22()
    Classic(shard, "B", "b", 22).leave()  # B's leave starts a rebalance
    before = shard.groups["g"]
    resp = shard.handle(Member(shard, "A2", instance_id="a").join_request()).response
    assert resp.error_code == Errors.REBALANCE_IN_PROGRESS
    assert shard.groups["g"] is before


def test_a_classic_group_of_another_protocol_type_is_not_a_consumer_group():
    shard = GroupCoordinatorShard(metadata=image(foo=6))
    value = GroupMetadataValue(
        "connect", 3, "sessioned", "W", 0, (_classic_member("W", None, []),), state="stable"
    )
    shard.replay(Record(GroupMetadataKey("g"), value))
    resp = shard.handle(Member(shard, "X").join_request()).response
    assert resp.error_code == Errors.GROUP_ID_NOT_FOUND
    assert isinstance(shard.groups["g"], ClassicGroup)


def test_migration_policy_disabled_refuses_the_upgrade():
    from protocol.config import CoordinatorConfig

    shard = GroupCoordinatorShard(
        CoordinatorConfig(group_consumer_migration_policy="disabled"), image(foo=6)
    )
    for r in [
        Record(GroupMetadataKey("g"), classic_group_at_generation_22().groups["g"].to_record())
    ]:
        shard.replay(r)
    resp = shard.handle(Member(shard, "A2", instance_id="a").join_request()).response
    assert resp.error_code == Errors.GROUP_ID_NOT_FOUND
    assert isinstance(shard.groups["g"], ClassicGroup)


def test_a_classic_member_with_a_stale_generation_is_told_illegal_generation():
    shard = classic_group_at_generation_22()
    Member(shard, "A2", instance_id="a").join()
    assert Classic(shard, "C", "c", 21).heartbeat() == Errors.ILLEGAL_GENERATION
    assert Classic(shard, "Z", None, 22).heartbeat() == Errors.UNKNOWN_MEMBER_ID


def test_a_new_dynamic_classic_member_joins_a_converted_group_after_learning_its_id():
    shard = classic_group_at_generation_22()
    Member(shard, "A2", instance_id="a").join()
    first = m.JoinGroupRequest(
        "g",
        SESSION_MS,
        60_000,
        "",
        None,
        "consumer",
        [m.JoinGroupRequestProtocol("range", encode_subscription(Subscription(["foo"])))],
    )
    resp = shard.handle(first).response
    assert resp.error_code == Errors.MEMBER_ID_REQUIRED
    first.member_id = resp.member_id
    resp = shard.handle(first).response
    assert resp.error_code == Errors.NONE
    assert resp.member_id in shard.group_of("g", "consumer").members
    assert shard.group_of("g", "consumer").group_epoch == 23


def _history(shard):
    return shard.history.of("g")


def test_a_classic_restart_of_the_last_new_protocol_member_converts_the_group_back():
    shard = classic_group_at_generation_22()
    a = Member(shard, "A2", instance_id="a")
    a.join()
    again = m.JoinGroupRequest(
        "g",
        SESSION_MS,
        60_000,
        "",
        "a",
        "consumer",
        [m.JoinGroupRequestProtocol("range", encode_subscription(Subscription(["foo"])))],
    )
    # Still active under the new protocol: the classic process must wait for it to leave.
    resp = shard.handle(again).response
    assert resp.error_code == Errors.UNRELEASED_INSTANCE_ID
    assert isinstance(shard.groups["g"], ConsumerGroup)
    a.leave(epoch=-2)  # a static member's temporary leave keeps its place
    assert shard.handle(again).response is None  # rejoining the classic group: delayed
    group = shard.groups["g"]
    assert isinstance(group, ClassicGroup) and group.state == "preparing_rebalance"
    assert group.static_members["a"] in group.members


def test_a_classic_join_to_an_empty_consumer_group_starts_a_new_classic_group():
    """As Kafka: the empty consumer group goes (its offsets stay) and the join is a classic
    group's first, at generation 1 once its join phase ends."""
    shard = GroupCoordinatorShard(metadata=image(foo=6))
    a = Member(shard, "A")
    a.join()
    a.leave()
    assert shard.groups["g"].group_type == "consumer" and not shard.groups["g"].members
    shard.handle(m.JoinGroupRequest(
        group_id="g", member_id="", group_instance_id="c", protocol_type="consumer",
        session_timeout_ms=10_000, protocols=[m.JoinGroupRequestProtocol(
            "range", encode_subscription(Subscription(["foo"])))]))
    group = shard.groups["g"]
    assert isinstance(group, ClassicGroup) and group.generation_id == 0
