"""The shard's half of atomic turns (``GroupCoordinatorShard._guard``), for both KIP-848 types.

A refusal leaves no trace; a refusal after the handler emitted records is a bug (raised, so the
runtime fails the turn); the one exception is a request that converted its group to another
type (online migration) before it was refused: the conversion is kept, as if an earlier event
had made it (docs/decisions.md, "A conversion completes on its own"). Replaying the records
still rebuilds the same state.
"""

from __future__ import annotations

import pytest

from protocol import messages as m
from protocol.classic.connect_protocol import Work
from protocol.connect.rules import ConnectGroupRules
from protocol.consumer.rules import ConsumerGroupRules
from protocol.errors import CoordinatorError, Errors
from protocol.records import GroupMetadataKey, GroupMetadataValue, Record
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import Member, image
from tests.protocol.migration.connect_sim import GROUP
from tests.protocol.migration.test_connect_migration import (
    WORK,
    classic_connect_group,
    fresh_shard,
    new_worker_join,
)
from tests.protocol.test_replay import assert_same_groups, loaded


def refuse_after(monkeypatch: pytest.MonkeyPatch, rules: type, method: str) -> None:
    """``rules.method`` does its work (records and all), then refuses."""
    real = getattr(rules, method)

    def then_refuse(self: object, *args: object) -> object:
        real(self, *args)
        raise CoordinatorError(Errors.INVALID_REQUEST, "refused after the fact")

    monkeypatch.setattr(rules, method, then_refuse)


def test_consumer_a_leave_that_converts_an_empty_classic_group_keeps_the_conversion():
    shard = GroupCoordinatorShard(metadata=image(foo=2))
    empty = Record(GroupMetadataKey("g"), GroupMetadataValue("consumer", 3, None, None, 0))
    shard.replay(empty)
    leave = m.ConsumerGroupHeartbeatRequest(group_id="g", member_id="stranger", member_epoch=-1)
    result = shard.handle(leave)
    assert result.response.error_code == Errors.UNKNOWN_MEMBER_ID
    assert result.records == [Record(GroupMetadataKey("g"), None)]
    assert "g" not in shard.groups
    assert_same_groups(shard, loaded(shard, [empty, *result.records]))


def test_connect_a_join_that_converts_a_classic_group_keeps_the_conversion(monkeypatch):
    shard = fresh_shard()
    classic_connect_group(shard, WORK)
    before = shard.groups[GROUP].to_record()
    refuse_after(monkeypatch, ConnectGroupRules, "heartbeat")
    result = new_worker_join(shard)
    assert result.response.error_code == Errors.INVALID_REQUEST
    assert result.records[0] == Record(GroupMetadataKey(GROUP), None)
    assert shard.groups[GROUP].group_type == "connect"
    assert_same_groups(shard, loaded(shard, [Record(GroupMetadataKey(GROUP), before),
                                             *result.records]))


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
