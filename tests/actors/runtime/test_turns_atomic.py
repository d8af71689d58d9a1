"""The shard's half of atomic turns (``GroupCoordinatorShard._guard``), for both KIP-848 types.

A refusal leaves no trace; a refusal after the handler emitted records is a bug (raised, so the
runtime fails the turn), a conversion of the group included (docs/decisions.md, "Atomic
turns"). Only a join converts a classic group, so a stray heartbeat or leave naming one is a
plain refusal that changes nothing.
"""

from __future__ import annotations

import pytest

from protocol import messages as m
from protocol.classic.connect_protocol import Work
from protocol.classic.records import GroupMetadataKey, GroupMetadataValue
from protocol.connect.rules import ConnectGroupRules
from protocol.consumer.rules import ConsumerGroupRules
from protocol.errors import CoordinatorError, Errors
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


def refuse_after(monkeypatch: pytest.MonkeyPatch, rules: type, method: str) -> None:
    """``rules.method`` does its work (records and all), then refuses."""
    real = getattr(rules, method)

    def then_refuse(self: object, *args: object) -> object:
        real(self, *args)
        raise CoordinatorError(Errors.INVALID_REQUEST, "refused after the fact")

    monkeypatch.setattr(rules, method, then_refuse)


@pytest.mark.parametrize("epoch", [-1, -2, 3])
def test_a_consumer_heartbeat_that_is_not_a_join_leaves_an_empty_classic_group_alone(epoch):
    shard = GroupCoordinatorShard(metadata=image(foo=2))
    empty = Record(GroupMetadataKey("g"), GroupMetadataValue("consumer", 3, None, None, 0))
    shard.replay(empty)
    req = m.ConsumerGroupHeartbeatRequest(group_id="g", member_id="stranger", member_epoch=epoch,
                                          instance_id="i1" if epoch == -2 else None)
    result = shard.handle(req)
    assert result.response.error_code == Errors.GROUP_ID_NOT_FOUND
    assert result.records == []
    assert shard.groups["g"].group_type == "classic"


def test_a_consumer_join_converts_an_empty_classic_group():
    shard = GroupCoordinatorShard(metadata=image(foo=2))
    empty = Record(GroupMetadataKey("g"), GroupMetadataValue("consumer", 3, None, None, 0))
    shard.replay(empty)
    reply = Member(shard, "m1").join()
    assert reply.error_code == Errors.NONE
    assert shard.groups["g"].group_type == "consumer"


def test_connect_a_refusal_after_a_conversion_is_a_bug_too(monkeypatch):
    shard = fresh_shard()
    classic_connect_group(shard, WORK)
    refuse_after(monkeypatch, ConnectGroupRules, "heartbeat")
    with pytest.raises(RuntimeError, match="after it emitted"):
        new_worker_join(shard)


def test_connect_a_refusal_after_records_without_a_conversion_is_a_bug(monkeypatch):
    shard = fresh_shard()
    classic_connect_group(shard, {"A": Work.of(["sink"])})
    assert new_worker_join(shard, "n0").response.error_code == Errors.NONE  # converted
    refuse_after(monkeypatch, ConnectGroupRules, "heartbeat")
    with pytest.raises(RuntimeError, match="after it emitted"):
        new_worker_join(shard, "n1")


def test_consumer_a_refusal_after_records_without_a_conversion_is_a_bug(monkeypatch):
    shard = GroupCoordinatorShard(metadata=image(foo=2))
    Member(shard, "m1").join()
    refuse_after(monkeypatch, ConsumerGroupRules, "complete")
    with pytest.raises(RuntimeError, match="after it emitted"):
        Member(shard, "m2").join()


@pytest.mark.parametrize("kind", ["consumer", "connect"])
def test_a_plain_refusal_is_a_reply_and_no_record(kind):
    if kind == "consumer":
        shard = GroupCoordinatorShard(metadata=image(foo=2))
        Member(shard, "m1").join()
        req: object = m.ConsumerGroupHeartbeatRequest(group_id="g", member_id="nobody",
                                                      member_epoch=4, topic_partitions=[])
    else:
        shard = fresh_shard()
        classic_connect_group(shard, {"A": Work.of(["sink"])})
        new_worker_join(shard, "n0")
        req = m.ConnectGroupHeartbeatRequest(GROUP, "nobody", 4)
    result = shard.handle(req)
    assert result.response.error_code == Errors.UNKNOWN_MEMBER_ID
    assert result.records == []
