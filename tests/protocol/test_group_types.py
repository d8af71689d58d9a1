"""The group-type table: every group type is a row, and the rules every row answers hold for
each type alike.

For each row, a real group of that type is built through the shard's requests; DeleteGroups
refuses it while it has members and deletes it (with the row's tombstones) once empty; and
every record written on the way rebuilds the same groups in a fresh shard (replay
equivalence), before and after the deletion.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from protocol import messages as m
from protocol import records as r
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from protocol.group_types import (
    BY_NAME,
    BY_RECORD_KEY,
    GROUP_TYPES,
    RECORD_SCHEMAS,
    GroupType,
    group_counts,
    type_of,
)
from protocol.metadata import ConnectorMetadata, MetadataImage, TopicMetadata
from protocol.offsets.timers import OffsetsTimer
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard
from tests.protocol.connect.workers import Worker
from tests.protocol.driver import Member

GID = "g"


class RecordingShard(GroupCoordinatorShard):
    """A shard that keeps every record it emits, in order: its log."""

    def __init__(self, **kwargs) -> None:
        self.log: list[Record] = []
        super().__init__(**kwargs)

    def emit(self, record: Record) -> None:
        super().emit(record)
        self.log.append(record)


def new_shard() -> RecordingShard:
    metadata = MetadataImage(
        [TopicMetadata("foo-id", "foo", 2)], [ConnectorMetadata(GID, "sink", 2)]
    )
    config = CoordinatorConfig(group_initial_rebalance_delay_ms=0)
    return RecordingShard(config=config, metadata=metadata)


def replayed(shard: RecordingShard) -> GroupCoordinatorShard:
    fresh = GroupCoordinatorShard(config=shard.config, metadata=shard.image, now_ms=shard.now_ms)
    for record in shard.log:
        fresh.replay(record)
    return fresh


def assert_replays(shard: RecordingShard) -> None:
    """The log rebuilds the same groups: equal objects for the KIP-848-style types; for a
    classic group what it persists (seed 003: its generation and membership, as DescribeGroups
    shows them; a loaded group knows it was loaded, and redoes what was in flight)."""
    fresh = replayed(shard)
    assert sorted(fresh.groups) == sorted(shard.groups)
    for gid, group in shard.groups.items():
        if group.group_type == "classic":
            describe = m.DescribeGroupsRequest([gid])
            assert fresh.handle(describe).response == shard.handle(describe).response
        else:
            assert fresh.groups[gid] == group


# ------------------------------------------------------------- one live group of each type


def consumer_group(shard: RecordingShard) -> Callable[[], None]:
    member = Member(shard, "a", group_id=GID, topics=["foo"])
    for _ in range(3):
        member.heartbeat()
    return lambda: _ok(member.leave())


def classic_group(shard: RecordingShard) -> Callable[[], None]:
    def join(member_id: str) -> m.JoinGroupResponse:
        req = m.JoinGroupRequest(
            GID, 30_000, 60_000, member_id, protocol_type="consumer",
            protocols=[m.JoinGroupRequestProtocol("range", b"")],
        )
        return shard.handle(req).response

    first = join("")
    assert first.error_code == Errors.MEMBER_ID_REQUIRED, first
    joined = join(first.member_id)
    if joined is None:  # the join phase completes on a tick
        joined = shard.tick(shard.now_ms + 1).replies[-1][1]
    _ok(joined)
    mid, gen = joined.member_id, joined.generation_id
    _ok(shard.handle(m.SyncGroupRequest(GID, gen, mid, assignments=[])).response)
    return lambda: _ok(shard.handle(m.LeaveGroupRequest(GID, [m.MemberIdentity(mid)])).response)


def connect_group(shard: RecordingShard) -> Callable[[], None]:
    worker = Worker(shard, "w1", group_id=GID)
    _ok(worker.join())
    return lambda: _ok(worker.leave())


def share_group(shard: RecordingShard) -> Callable[[], None]:
    """A share member that has acquired records (so the group has share-partition state)."""
    _ok(shard.handle(m.ShareGroupHeartbeatRequest(GID, "s1", 0,
                                                  subscribed_topic_names=["foo"])).response)
    fetch = m.ShareFetchRequest(GID, "s1", [m.ShareFetchTopic("foo-id", [
        m.ShareFetchPartition(0, log_end_offset=5)])])
    assert _ok(shard.handle(fetch).response).topics[0].partitions[0].error_code == 0
    assert shard.groups[GID].partitions
    return lambda: _ok(shard.handle(m.ShareGroupHeartbeatRequest(GID, "s1", -1)).response)


def streams_group(shard: RecordingShard) -> Callable[[], None]:
    """A streams member of a one-subtopology topology reading ``foo``, holding its tasks."""
    from tests.protocol.streams.driver import StreamsMember, topology

    member = StreamsMember(shard, "k1", group_id=GID, topology=topology("foo"))
    _ok(member.join())
    shard.tick(shard.now_ms + 3_000)  # the initial rebalance delay ends
    for _ in range(3):
        _ok(member.heartbeat())
    assert member.active
    return lambda: _ok(member.leave())


BUILDERS = {"consumer": consumer_group, "classic": classic_group, "connect": connect_group,
            "share": share_group, "streams": streams_group}


def _ok(resp):
    assert resp.error_code == Errors.NONE, resp
    return resp


def delete(shard: GroupCoordinatorShard) -> m.DeletableGroupResult:
    (result,) = shard.handle(m.DeleteGroupsRequest([GID])).response.results
    return result


# ------------------------------------------------------------------------------ the rows


def test_every_group_type_has_a_builder_here():
    assert sorted(BUILDERS) == sorted(BY_NAME)


def test_each_record_key_and_timer_key_belongs_to_one_row():
    keys = [k for row in GROUP_TYPES for k in row.record_keys]
    assert len(keys) == len(set(keys)) == len(BY_RECORD_KEY)
    timers = [row.timer_key for row in GROUP_TYPES] + [OffsetsTimer]
    assert all(not issubclass(a, b) for a in timers for b in timers if a is not b)


def test_every_group_record_type_is_replayed_by_a_row():
    not_groups = {r.OffsetCommitKey, r.GroupRebalanceHistoryKey}
    assert set(RECORD_SCHEMAS) - not_groups == set(BY_RECORD_KEY)


@pytest.mark.parametrize("row", GROUP_TYPES, ids=lambda row: row.name)
def test_a_group_of_each_type_is_refused_deletion_while_it_has_members(row: GroupType):
    shard = new_shard()
    BUILDERS[row.name](shard)
    group = shard.groups[GID]
    assert type_of(group) is row and isinstance(group, row.group_class)
    assert not row.is_empty(group)
    before = list(shard.log)
    result = delete(shard)
    assert result.error_code == Errors.NON_EMPTY_GROUP
    assert shard.log == before  # nothing written
    assert shard.groups[GID] is group


@pytest.mark.parametrize("row", GROUP_TYPES, ids=lambda row: row.name)
def test_an_empty_group_of_each_type_is_deleted_with_its_rows_tombstones(row: GroupType):
    shard = new_shard()
    leave = BUILDERS[row.name](shard)
    leave()
    group = shard.groups[GID]
    assert row.is_empty(group)
    expected = row.tombstones(group)
    written = len(shard.log)
    assert delete(shard).error_code == Errors.NONE
    assert GID not in shard.groups
    tail = shard.log[written:]
    assert [rec for rec in tail if rec.key in {t.key for t in expected}] == expected
    assert all(rec.value is None for rec in tail)


@pytest.mark.parametrize("row", GROUP_TYPES, ids=lambda row: row.name)
def test_replaying_a_group_of_each_type_rebuilds_it_before_and_after_deletion(row: GroupType):
    shard = new_shard()
    leave = BUILDERS[row.name](shard)
    assert_replays(shard)
    leave()
    assert_replays(shard)
    delete(shard)
    assert_replays(shard)
    assert shard.groups == {}


@pytest.mark.parametrize("row", GROUP_TYPES, ids=lambda row: row.name)
def test_list_groups_shows_each_type_under_its_row_name(row: GroupType):
    shard = new_shard()
    BUILDERS[row.name](shard)
    resp = shard.handle(m.ListGroupsRequest(types_filter=[row.name])).response
    assert [(g.group_id, g.group_type) for g in resp.groups] == [(GID, row.name)]
    group = shard.groups[GID]
    assert resp.groups[0].protocol_type == row.list_protocol_type(group)
    counts = group_counts(shard.groups.values())
    assert counts == {r.metrics_label: int(r is row) for r in GROUP_TYPES}


def test_each_type_has_its_own_metrics_label_classic_as_the_seed_names_it():
    labels = [row.metrics_label for row in GROUP_TYPES]
    assert len(set(labels)) == len(labels)
    assert BY_NAME["classic"].metrics_label == "generic"


@pytest.mark.parametrize("row", GROUP_TYPES, ids=lambda row: row.name)
def test_describe_groups_shows_each_type_in_its_rows_shape(row: GroupType):
    shard = new_shard()
    BUILDERS[row.name](shard)
    (described,) = shard.handle(m.DescribeGroupsRequest([GID])).response.groups
    assert described.error_code == Errors.NONE
    assert described.group_id == GID
    assert len(described.members) == 1


def test_a_classic_request_to_a_type_without_a_classic_host_is_not_found(monkeypatch):
    """A future type whose row names no classic host: Kafka 4's "not a classic group"."""
    shard = new_shard()
    consumer_group(shard)
    lone = GroupType(**{**vars(BY_NAME["consumer"]), "name": "lone", "classic_host": None})
    monkeypatch.setitem(BY_NAME, "lone", lone)
    monkeypatch.setattr(type(shard.groups[GID]), "group_type", "lone")
    resp = shard.handle(m.HeartbeatRequest(GID, 1, "a")).response
    assert resp.error_code == Errors.GROUP_ID_NOT_FOUND
    assert "is a lone group, not a classic group" in resp.error_message
