"""Online migration of a classic Connect group to the ``connect`` group type and back (seed
004, "Migration To the New Protocol"), with the real client halves of both kinds of worker.

The rolling runs check, after every reply, that no connector or task runs on two workers, and
that a fresh shard loading every record written (through the codec) holds the same group.
"""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import example, given, settings

from protocol import messages as m
from protocol.classic.connect_protocol import (
    PROTOCOL_NAME,
    ConnectAssignment,
    Work,
    WorkerState,
    decode_assignment,
    encode_assignment,
    encode_metadata,
)
from protocol.classic.group import ClassicGroup
from protocol.connect.group import ConnectGroup
from protocol.errors import Errors
from protocol.records import (
    ConnectGroupCurrentMemberAssignmentKey,
    ConnectGroupMetadataKey,
    GroupMemberMetadata,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
)
from protocol.shard import GroupCoordinatorShard
from tests.protocol.migration.connect_sim import GROUP, MigrationSim, config, units
from tests.protocol.test_replay import compacted, loaded, through_the_codec

CONNECTORS = {"sink": 4, "src": 2}


def group_of(shard: GroupCoordinatorShard):
    return shard.groups[GROUP]


def assert_replays_alike(sim: MigrationSim) -> None:
    """Replay equivalence: the log, whole and compacted, rebuilds the group the live shard
    holds."""
    records = through_the_codec(sim.records)
    _assert_alike(sim, loaded(sim.shard, records))
    _assert_alike(sim, loaded(sim.shard, compacted(records)))


def _assert_alike(sim: MigrationSim, fresh: GroupCoordinatorShard) -> None:
    live, again = group_of(sim.shard), group_of(fresh)
    assert type(again) is type(live)
    if isinstance(live, ConnectGroup):
        assert again == live
        describe = m.ConnectGroupDescribeRequest([GROUP])
        assert fresh.handle(describe).response == sim.shard.handle(describe).response
    else:
        assert again.to_record() == live.to_record()
    assert fresh.history.of(GROUP) == sim.shard.history.of(GROUP)


def new_worker_join(shard: GroupCoordinatorShard, member_id: str = "n0"):
    req = m.ConnectGroupHeartbeatRequest(
        GROUP, member_id, 0, rebalance_timeout_ms=5_000, connectors_and_tasks=m.ConnectorsAndTasks()
    )
    return shard.handle(req)


# ------------------------------------------------------------------ rolling migrations


@pytest.mark.parametrize("mode", ["sessioned", "compatible", "eager"])
def test_rolling_three_classic_workers_to_the_new_protocol_and_back(mode):
    sim = MigrationSim(CONNECTORS)
    for i in range(3):
        sim.add_classic(f"c{i}", mode)
    sim.settle()
    assert isinstance(group_of(sim.shard), ClassicGroup)
    # Upgrade: each classic worker stops and a new-protocol worker takes its place.
    for i in range(3):
        sim.stop(f"c{i}")
        sim.add_new(f"n{i}")
        sim.settle()
        group = group_of(sim.shard)
        assert isinstance(group, ConnectGroup)
        for name, c in sim.clients.items():
            if name.startswith("c"):
                assert c.protocol_name == PROTOCOL_NAME[mode]  # answered in its own protocol
                assert group.members[c.member_id].metadata.classic_member_metadata is not None
        assert_replays_alike(sim)
        if i == 0:  # connectors change while the group is mixed
            sim.set_connectors({"sink": 6, "src": 2, "extra": 1})
            sim.settle()
    group = group_of(sim.shard)
    assert group.assignor(sim.shard.config.default_connect_assignor).client_side
    assert sim.describe().protocol_type == "connect"
    # Downgrade: each new-protocol worker stops and a classic one takes its place; the group
    # converts back when the last new-protocol worker leaves.
    for i in range(3):
        sim.stop(f"n{i}")
        assert isinstance(group_of(sim.shard), ClassicGroup if i == 2 else ConnectGroup)
        sim.add_classic(f"d{i}", mode)
        sim.settle()
        assert_replays_alike(sim)
    classic = group_of(sim.shard)
    assert isinstance(classic, ClassicGroup) and classic.protocol_type == "connect"
    assert sorted(u for c in sim.clients.values() for u in units(c)) == sim.all_units()


def test_a_killed_classic_worker_in_a_converted_group_times_out_with_its_own_session():
    sim = MigrationSim(CONNECTORS)
    for i in range(2):
        sim.add_classic(f"c{i}")
    sim.settle()
    sim.add_new("n0")
    sim.settle()
    victim = sim.clients.pop("c1")  # gone without a word
    member = group_of(sim.shard).members[victim.member_id]
    assert member.metadata.classic_member_metadata.session_timeout_ms == 3_000
    sim.settle(limit_ms=15_000)
    assert victim.member_id not in group_of(sim.shard).members
    assert_replays_alike(sim)


def test_policy_upgrade_keeps_a_connect_group_of_classic_workers_serving():
    sim = MigrationSim(CONNECTORS, config(group_connect_migration_policy="upgrade"))
    sim.add_classic("c0")
    sim.settle()
    sim.add_new("n0")
    sim.settle()
    sim.stop("n0")
    sim.add_classic("c1")
    sim.settle()
    group = group_of(sim.shard)
    assert isinstance(group, ConnectGroup) and len(group.members) == 2


# ------------------------------------------------------------------ the conversion itself


def classic_connect_group(
    shard: GroupCoordinatorShard,
    work: dict[str, Work],
    generation: int = 22,
    state: str = "stable",
    protocol_type: str = "connect",
    instance_id: str | None = None,
) -> None:
    """A classic Connect group at ``generation`` whose members run ``work`` (sessioned,
    each member's allocation empty and its V1 assignment the work)."""
    members = []
    for i, (mid, w) in enumerate(sorted(work.items())):
        meta = encode_metadata(WorkerState(f"http://{mid}/", 5), 2)
        members.append(GroupMemberMetadata(
            member_id=mid, group_instance_id=instance_id if i == 0 else None, client_id=mid,
            client_host="/h", rebalance_timeout_ms=5_000, session_timeout_ms=3_000,
            subscription=meta, assignment=encode_assignment(ConnectAssignment(1, assigned=w)),
        ))
    value = GroupMetadataValue(protocol_type, generation, "sessioned", members[0].member_id, 0,
                               tuple(members), state)
    shard.replay(Record(GroupMetadataKey(GROUP), value))


WORK = {
    "A": Work.of(["sink"], [("sink", 0), ("sink", 1)]),
    "B": Work.of(["src"], [("sink", 2), ("src", 0)]),
    "C": Work.of([], [("sink", 3), ("src", 1)]),
}


def fresh_shard(**cfg) -> GroupCoordinatorShard:
    return MigrationSim(CONNECTORS, config(**cfg)).shard


def test_conversion_starts_at_the_generation_with_every_workers_work_as_target_and_current():
    shard = fresh_shard()
    classic_connect_group(shard, WORK)
    shard.replay(Record(OffsetCommitKey(GROUP, "t", 0), OffsetCommitValue(offset=42)))
    result = new_worker_join(shard)
    assert result.response.error_code == Errors.NONE
    records = result.records
    assert records[0] == Record(GroupMetadataKey(GROUP), None)
    epochs = [r.value.epoch for r in records if isinstance(r.key, ConnectGroupMetadataKey)]
    assert epochs == [22, 23]  # the generation, then the join's bump
    converted = {
        r.key.member_id: r.value for r in records
        if isinstance(r.key, ConnectGroupCurrentMemberAssignmentKey) and r.key.member_id in WORK
    }
    for mid, w in WORK.items():
        assert converted[mid].member_epoch == 22
        assert set(converted[mid].connectors) == w.connectors
        assert {(c, t) for c, ts in converted[mid].tasks.items() for t in ts} == w.tasks
    group = group_of(shard)
    assert isinstance(group, ConnectGroup) and group.group_epoch == 23
    assert not any(r.key == OffsetCommitKey(GROUP, "t", 0) for r in records)
    fetched = shard.handle(m.OffsetFetchRequest(GROUP, topics=None)).response
    assert fetched.topics[0].partitions[0].committed_offset == 42  # another key: untouched
    # The joiner waits for work the classic workers still run: nothing is handed twice.
    assert set(group.owners.values()) <= set(WORK)


def test_a_duplicated_unit_in_classic_assignments_goes_to_one_worker_only():
    shard = fresh_shard()
    classic_connect_group(shard, {"A": Work.of(["sink"]), "B": Work.of(["sink"])})
    assert new_worker_join(shard).response.error_code == Errors.NONE
    assert group_of(shard).owner_of(("sink", -1)) == "A"


def test_a_rebalancing_classic_group_is_answered_rebalance_in_progress_and_kept():
    shard = fresh_shard()
    classic_connect_group(shard, WORK, state="completing_rebalance")
    result = new_worker_join(shard)
    assert result.response.error_code == Errors.REBALANCE_IN_PROGRESS
    assert result.records == [] and isinstance(group_of(shard), ClassicGroup)


@pytest.mark.parametrize(
    ("setup", "cfg", "error"),
    [
        ({"protocol_type": "consumer"}, {}, Errors.GROUP_ID_NOT_FOUND),
        ({}, {"group_connect_migration_policy": "disabled"}, Errors.GROUP_ID_NOT_FOUND),
        ({}, {"group_connect_migration_policy": "downgrade"}, Errors.GROUP_ID_NOT_FOUND),
        ({"instance_id": "static-a"}, {}, Errors.GROUP_ID_NOT_FOUND),
        ({}, {"group_connect_max_size": 3}, Errors.GROUP_MAX_SIZE_REACHED),
    ],
    ids=["consumer-protocol", "policy-disabled", "policy-downgrade", "static", "max-size"],
)
def test_a_classic_group_that_cannot_convert_is_refused_and_unchanged(setup, cfg, error):
    shard = fresh_shard(**cfg)
    classic_connect_group(shard, WORK, **setup)
    before = group_of(shard).to_record()
    result = new_worker_join(shard)
    assert result.response.error_code == error, result.response
    assert result.records == [] and group_of(shard).to_record() == before


def test_only_a_join_converts_a_classic_group():
    shard = fresh_shard()
    classic_connect_group(shard, WORK)
    req = m.ConnectGroupHeartbeatRequest(GROUP, "n0", 3, connectors_and_tasks=None)
    result = shard.handle(req)
    assert result.response.error_code == Errors.GROUP_ID_NOT_FOUND and result.records == []


# ------------------------------------------------------------------ classic workers inside


def test_classic_requests_a_connect_group_refuses():
    shard = fresh_shard()
    classic_connect_group(shard, WORK)
    new_worker_join(shard)
    meta = encode_metadata(WorkerState("http://x/", 5), 1)
    static = m.JoinGroupRequest(GROUP, 3_000, 5_000, "", "i-1", "connect",
                                [m.JoinGroupRequestProtocol("compatible", meta)])
    unknown_name = m.JoinGroupRequest(GROUP, 3_000, 5_000, "", None, "connect",
                                      [m.JoinGroupRequestProtocol("custom", meta)])
    stale = m.HeartbeatRequest(GROUP, 21, "A")
    new_protocol = m.SyncGroupRequest(GROUP, 23, "n0")
    for req, error in [
        (static, Errors.INVALID_REQUEST),
        (unknown_name, Errors.INCONSISTENT_GROUP_PROTOCOL),
        (stale, Errors.ILLEGAL_GENERATION),
        (new_protocol, Errors.UNKNOWN_MEMBER_ID),
    ]:
        result = shard.handle(req)
        assert result.response.error_code == error, (req, result.response)
        assert result.records == []


def test_a_classic_worker_is_told_to_rebalance_then_revokes_before_it_is_assigned():
    shard = fresh_shard()
    classic_connect_group(shard, WORK)
    new_worker_join(shard)  # the target moves work from A, B, C to n0
    group = group_of(shard)
    losing = next(mid for mid in WORK if group.target_of(mid) < group.members[mid].assigned)
    hb = shard.handle(m.HeartbeatRequest(GROUP, 22, losing)).response
    assert hb.error_code == Errors.REBALANCE_IN_PROGRESS
    runs = WORK[losing]
    meta = encode_metadata(WorkerState("http://x/", 5, ConnectAssignment(1, assigned=runs)), 1)
    join = shard.handle(m.JoinGroupRequest(
        GROUP, 3_000, 5_000, losing, None, "connect",
        [m.JoinGroupRequestProtocol("compatible", meta)])).response
    assert join.error_code == Errors.NONE and join.leader == ""
    assert join.generation_id == 22  # it must stop work before it moves to epoch 23
    sync = shard.handle(m.SyncGroupRequest(GROUP, 22, losing, protocol_type="connect",
                                           protocol_name="compatible")).response
    a = decode_assignment(sync.assignment)
    assert a.version == 1 and a.revoked and not (a.revoked & a.assigned)
    assert (a.assigned | a.revoked) == runs


def test_the_last_new_protocol_worker_leaving_converts_the_group_back_at_its_epoch():
    shard = fresh_shard()
    classic_connect_group(shard, WORK)
    new_worker_join(shard)
    group = group_of(shard)
    epoch, held = group.group_epoch, {mid: group.members[mid].held for mid in WORK}
    history = list(shard.history.of(GROUP))
    result = shard.handle(m.ConnectGroupHeartbeatRequest(GROUP, "n0", -1))
    assert result.response.error_code == Errors.NONE
    classic = group_of(shard)
    assert isinstance(classic, ClassicGroup)
    assert classic.generation_id == epoch and classic.protocol_type == "connect"
    assert classic.state == "preparing_rebalance"  # the workers rejoin as a classic group
    for mid, member in classic.members.items():
        a = decode_assignment(member.assignment)
        assert {(c, -1) for c in a.assigned.connectors} | a.assigned.tasks == held[mid]
    assert shard.history.of(GROUP)[: len(history)] == history
    fresh = loaded(shard, through_the_codec(result.records))
    assert group_of(fresh).to_record().members == classic.to_record().members


def test_a_classic_worker_joining_an_empty_connect_group_makes_it_classic():
    shard = fresh_shard()
    assert new_worker_join(shard).response.error_code == Errors.NONE
    shard.handle(m.ConnectGroupHeartbeatRequest(GROUP, "n0", -1))
    assert isinstance(group_of(shard), ConnectGroup) and not group_of(shard).members
    meta = encode_metadata(WorkerState("http://x/", 5), 2)
    join = m.JoinGroupRequest(GROUP, 3_000, 5_000, "", None, "connect",
                              [m.JoinGroupRequestProtocol("sessioned", meta)])
    first = shard.handle(join).response
    assert first.error_code == Errors.MEMBER_ID_REQUIRED
    join.member_id = first.member_id
    reply = shard.handle(join).response
    assert reply.error_code == Errors.NONE and reply.leader == first.member_id  # it leads
    classic = group_of(shard)
    assert isinstance(classic, ClassicGroup) and list(classic.members) == [first.member_id]
    assert classic.protocol_type == "connect"


# ------------------------------------------------------------------ random rolls

STEP = st.one_of(
    st.tuples(st.just("classic"), st.sampled_from(["sessioned", "compatible", "eager"])),
    st.tuples(st.just("new"), st.none()),
    st.tuples(st.just("stop"), st.integers(0, 5)),
    st.tuples(st.just("connectors"), st.integers(1, 5)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(STEP, min_size=1, max_size=10), st.integers(0, 400))
# Found by a fresh clone's run: the group converts while a classic worker has not yet read the
# SyncGroup reply revoking its work; that work must stay its own until it stops it.
@example(
    steps=[("classic", "sessioned"), ("new", None), ("classic", "sessioned"), ("stop", 1),
           ("classic", "sessioned"), ("classic", "sessioned"), ("classic", "sessioned"),
           ("classic", "sessioned"), ("stop", 5)],
    pause=51,
)
def test_any_mix_of_joins_and_leaves_of_both_kinds_keeps_one_owner_and_settles(steps, pause):
    """Workers of both kinds come and go in any order (the sim asserts single ownership after
    every reply); once they stop, the group settles and its log rebuilds it."""
    sim = MigrationSim(CONNECTORS)
    sim.add_classic("first")
    for n, (kind, arg) in enumerate(steps):
        if kind == "classic":
            sim.add_classic(f"w{n}", arg)
        elif kind == "new":
            sim.add_new(f"w{n}")
        elif kind == "stop" and len(sim.clients) > 1:
            sim.stop(sorted(sim.clients)[arg % len(sim.clients)])
        elif kind == "connectors":
            sim.set_connectors({"sink": arg, "src": 2})
        sim.run(pause)
    sim.settle(limit_ms=30_000)
    kinds = {type(c).__name__ for c in sim.clients.values()}
    expected = ClassicGroup if kinds == {"ClassicConnectWorkerClient"} else ConnectGroup
    assert isinstance(group_of(sim.shard), expected)
    assert_replays_alike(sim)
