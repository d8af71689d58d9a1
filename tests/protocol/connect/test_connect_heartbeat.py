"""ConnectGroupHeartbeat (seed 004): validation, join, leave, fencing, timeouts, static workers."""

from __future__ import annotations

import copy

import pytest

from protocol import messages as m
from protocol.config import CoordinatorConfig
from protocol.connect import units as u
from protocol.connect.sessions import ScheduledRebalance
from protocol.errors import Errors
from protocol.shard import GroupCoordinatorShard
from tests.protocol.connect.workers import (
    GROUP,
    REBALANCE_TIMEOUT_MS,
    Worker,
    advance,
    client_assignor,
    connectors,
    settle,
)

A3 = u.configured({"a": 3})


def shard_with(config: CoordinatorConfig | None = None, **tasks: int) -> GroupCoordinatorShard:
    return GroupCoordinatorShard(config=config, metadata=connectors(**(tasks or {"a": 3})))


def refused(shard: GroupCoordinatorShard, req: object, error: Errors, text: str = "") -> None:
    """``req`` gets ``error`` (naming ``text``) and changes nothing."""
    groups, timers = copy.deepcopy(shard.groups), shard.next_deadline_ms()
    result = shard.handle(req)
    assert result.response.error_code == error, result.response
    assert text in (result.response.error_message or "")
    assert result.records == []
    assert shard.groups == groups and shard.next_deadline_ms() == timers


def join(member_id: str = "w1", **fields) -> m.ConnectGroupHeartbeatRequest:
    base = dict(member_epoch=0, rebalance_timeout_ms=REBALANCE_TIMEOUT_MS)
    base.update(fields)
    return m.ConnectGroupHeartbeatRequest(GROUP, member_id, **base)


# ----------------------------------------------------------------------- INVALID_REQUEST


@pytest.mark.parametrize(
    ("req", "text"),
    [
        (m.ConnectGroupHeartbeatRequest("", "w1", 0, rebalance_timeout_ms=1), "GroupId"),
        (join(""), "MemberId"),
        (m.ConnectGroupHeartbeatRequest(GROUP, "", 3), "MemberId"),
        (join(member_epoch=-3), "MemberEpoch must be >= -1"),
        (join(member_epoch=-2), "MemberEpoch must be >= -1"),
        (join(instance_id=""), "InstanceId can't be empty"),
        (join(rebalance_timeout_ms=0), "RebalanceTimeoutMs must be larger than zero"),
        (join(rebalance_timeout_ms=-1), "RebalanceTimeoutMs must be larger than zero"),
        (m.ConnectGroupHeartbeatRequest(GROUP, "w1", 4, rebalance_timeout_ms=-7), "Rebalance"),
        (
            join(server_assignor="incremental-cooperative", client_assignors=[client_assignor()]),
            "ServerAssignor and ClientAssignors cannot be used together",
        ),
        (join(client_assignors=[m.Assignor("", 0, 1)]), "Assignor.Name must be non-empty"),
        (join(client_assignors=[m.Assignor("x", -2, 1)]), "MinimumVersion must be >= -1"),
        (join(client_assignors=[m.Assignor("x", -1, -1)]), "MaximumVersion must be >= 0"),
        (join(client_assignors=[m.Assignor("x", 3, 2, 0, 3)]), "MaximumVersion must be >= 0 and"),
        (join(client_assignors=[m.Assignor("x", 1, 2, 0, 0)]), "Assignor.Version must be"),
        (join(client_assignors=[m.Assignor("x", 1, 2, 0, 3)]), "Assignor.Version must be"),
        (join(client_assignors=[client_assignor(), client_assignor()]), "listed twice"),
        (
            join(connectors_and_tasks=m.ConnectorsAndTasks(["a"])),
            "ConnectorsAndTasks must be empty when (re-)joining",
        ),
        (
            m.ConnectGroupHeartbeatRequest(
                GROUP, "w1", 1, connectors_and_tasks=m.ConnectorsAndTasks([""])
            ),
            "empty name",
        ),
        (
            m.ConnectGroupHeartbeatRequest(
                GROUP,
                "w1",
                1,
                connectors_and_tasks=m.ConnectorsAndTasks(tasks=[m.ConnectorTaskId("a", -1)]),
            ),
            "task ids >= 0",
        ),
        (join(member_epoch="0"), "ConnectGroupHeartbeatRequest.member_epoch"),
        (join(client_assignors=[m.Assignor("x", 0, 2**15)]), "out of int16 range"),
    ],
)
def test_each_validation_rule_of_the_seed_is_invalid_request_and_changes_nothing(req, text):
    shard = shard_with()
    Worker(shard, "w0").join()
    refused(shard, req, Errors.INVALID_REQUEST, text)


def test_the_member_id_is_the_workers_own_and_kept():
    shard = shard_with()
    resp = Worker(shard, "worker-host-1:8083").join()
    assert resp.error_code == Errors.NONE and resp.member_id == "worker-host-1:8083"


# ------------------------------------------------------------------- UNSUPPORTED_ASSIGNOR


def test_a_server_assignor_the_server_does_not_have_is_unsupported():
    shard = shard_with()
    refused(shard, join(server_assignor="uniform"), Errors.UNSUPPORTED_ASSIGNOR, "uniform")


def test_the_connect_server_assignor_is_supported_and_computes_at_once():
    shard = shard_with()
    w = Worker(shard, "w1")
    resp = w.send(join(server_assignor="incremental-cooperative"))
    assert resp.error_code == Errors.NONE
    assert w.runs == A3 and resp.member_epoch == 1


def test_client_ranges_that_do_not_overlap_the_groups_are_unsupported_and_change_nothing():
    shard = shard_with()
    Worker(shard, "w1", assignors=[client_assignor(1, 2)]).join()
    refused(
        shard,
        Worker(shard, "w2", assignors=[client_assignor(3, 4, metadata_version=3)]).join_request(),
        Errors.UNSUPPORTED_ASSIGNOR,
        "does not overlap",
    )
    assert sorted(shard.groups[GROUP].members) == ["w1"]


def test_a_worker_moving_its_range_away_from_the_groups_is_refused():
    shard = shard_with()
    a = Worker(shard, "w1", assignors=[client_assignor(1, 2)])
    b = Worker(shard, "w2", assignors=[client_assignor(1, 2)])
    a.join(), b.join()
    moved = b.heartbeat_request(client_assignors=[client_assignor(3, 4, metadata_version=3)])
    refused(shard, moved, Errors.UNSUPPORTED_ASSIGNOR)


# ------------------------------------------------------------- join, leave, unknown, fence


def test_the_first_join_creates_the_group_and_runs_everything_on_the_only_worker():
    shard = shard_with()
    w = Worker(shard, "w1")
    resp = w.join()
    group = shard.groups[GROUP]
    assert (group.group_type, group.group_epoch, group.assignment_epoch) == ("connect", 1, 1)
    assert resp.member_epoch == 1 and resp.heartbeat_interval_ms == 3_000
    assert w.runs == A3 and group.state == "stable"
    assert [c.reason for c in shard.history.of(GROUP)] == ["new worker joined"]


def test_a_join_bumps_the_epoch_and_the_work_spreads():
    shard = shard_with()
    ws = [Worker(shard, f"w{i}") for i in range(3)]
    for w in ws:
        w.join()
    settle(ws)
    assert shard.groups[GROUP].group_epoch == 3
    # Two revoking rounds in a row: Connect's storm guard waits 40 ms before the second.
    assert shard.next_deadline_ms() == 40
    shard.tick(40)
    settle(ws)
    assert shard.history.of(GROUP)[-1].reason == "scheduled rebalance delay expired"
    assert sorted(len(w.runs) for w in ws) == [1, 1, 2]  # 1 connector + 3 tasks, ±1


def test_a_leaving_worker_is_removed_its_epoch_bumped_and_its_work_held_by_default():
    shard = shard_with()
    ws = [Worker(shard, "w1"), Worker(shard, "w2")]
    for w in ws:
        w.join()
    settle(ws)
    left = ws[1].runs
    resp = ws[1].leave()
    assert resp.error_code == Errors.NONE and resp.member_epoch == -1
    group = shard.groups[GROUP]
    assert "w2" not in group.members and group.group_epoch == 3
    settle(ws[:1])
    assert not (ws[0].runs & left)  # held for scheduled.rebalance.max.delay.ms
    assert shard.timers.deadline(ScheduledRebalance(GROUP)) == 300_000
    advance(shard, ws[:1], 299_999)
    assert not (ws[0].runs & left)
    advance(shard, ws[:1], 300_000)
    settle(ws[:1])
    assert ws[0].runs == A3
    assert shard.history.of(GROUP)[-1].reason == "scheduled rebalance delay expired"


def test_with_no_scheduled_delay_a_departed_workers_work_moves_at_once():
    shard = shard_with(CoordinatorConfig(group_connect_scheduled_rebalance_max_delay_ms=0))
    ws = [Worker(shard, "w1"), Worker(shard, "w2")]
    for w in ws:
        w.join()
    settle(ws)
    ws[1].leave()
    settle(ws[:1])
    assert ws[0].runs == A3


def test_a_heartbeat_from_an_unknown_worker_or_group_is_unknown_member_id():
    shard = shard_with()
    Worker(shard, "w1").join()
    refused(shard, m.ConnectGroupHeartbeatRequest(GROUP, "ghost", 1), Errors.UNKNOWN_MEMBER_ID)
    refused(shard, m.ConnectGroupHeartbeatRequest("nope", "w1", 1), Errors.UNKNOWN_MEMBER_ID)
    refused(shard, m.ConnectGroupHeartbeatRequest(GROUP, "ghost", -1), Errors.UNKNOWN_MEMBER_ID)


def test_a_wrong_epoch_is_fenced_and_the_worker_removed():
    shard = shard_with()
    ws = [Worker(shard, "w1"), Worker(shard, "w2")]
    for w in ws:
        w.join()
    settle(ws)
    epoch = shard.groups[GROUP].group_epoch
    resp = ws[1].heartbeat(member_epoch=ws[1].epoch + 1)
    assert resp.error_code == Errors.FENCED_MEMBER_EPOCH
    group = shard.groups[GROUP]
    assert "w2" not in group.members and group.group_epoch == epoch + 1
    assert shard.history.of(GROUP)[-1].reason == "worker fenced: stale epoch"
    # The worker rejoins with the same member id and epoch 0, as the seed says.
    assert ws[1].join().error_code == Errors.NONE


def test_a_retry_after_a_lost_reply_is_accepted_when_it_runs_a_subset_of_its_assignment():
    shard = shard_with(a=4)
    w1, w2 = Worker(shard, "w1"), Worker(shard, "w2")
    w1.join()
    w2.join()
    settle([w1, w2])
    member = shard.groups[GROUP].members["w1"]
    assert 0 < member.previous_member_epoch < member.member_epoch
    # The reply that moved w1 to its epoch was lost: it retries with its previous epoch.
    retry = m.ConnectGroupHeartbeatRequest(
        GROUP, "w1", member.previous_member_epoch, connectors_and_tasks=u.to_wire(w1.runs)
    )
    resp = shard.handle(retry).response
    assert resp.error_code == Errors.NONE and resp.member_epoch == member.member_epoch
    assert resp.assignment is not None  # the epoch it missed, sent again
    # Claiming work it was never given is fenced instead.
    stranger = m.ConnectGroupHeartbeatRequest(
        GROUP, "w1", member.previous_member_epoch, connectors_and_tasks=u.to_wire(w2.runs)
    )
    assert shard.handle(stranger).response.error_code == Errors.FENCED_MEMBER_EPOCH


# ---------------------------------------------------------------------------- timeouts


def test_a_worker_that_stops_heartbeating_is_removed_after_its_session_timeout():
    shard = shard_with()
    ws = [Worker(shard, "w1"), Worker(shard, "w2")]
    for w in ws:
        w.join()
    settle(ws)
    shard.tick(9_999)
    assert "w2" in shard.groups[GROUP].members
    ws[0].heartbeat()  # w1 stays alive
    shard.tick(10_000)
    assert "w2" not in shard.groups[GROUP].members
    assert shard.history.of(GROUP)[-1].reason == "worker session timed out"


def test_a_worker_that_does_not_revoke_within_its_rebalance_timeout_is_removed():
    shard = shard_with(CoordinatorConfig(group_connect_session_timeout_ms=60_000))
    w1 = Worker(shard, "w1")
    w1.send(join("w1", rebalance_timeout_ms=5_000))
    Worker(shard, "w2").join()
    w1.heartbeat()  # told to stop some work; never says it did
    assert shard.groups[GROUP].members["w1"].state.label == "unrevoked_work"
    shard.tick(4_999)
    assert "w1" in shard.groups[GROUP].members
    shard.tick(5_000)
    assert "w1" not in shard.groups[GROUP].members
    assert "rebalance timeout" in shard.history.of(GROUP)[-1].reason


def test_an_acknowledged_revocation_stops_the_rebalance_timer():
    shard = shard_with(CoordinatorConfig(group_connect_session_timeout_ms=60_000))
    w1, w2 = Worker(shard, "w1"), Worker(shard, "w2")
    w1.send(join("w1", rebalance_timeout_ms=5_000))
    w2.join()
    w1.heartbeat()  # told to revoke: stops the work
    w1.heartbeat()  # acknowledges
    shard.tick(30_000)
    assert "w1" in shard.groups[GROUP].members


# ---------------------------------------------------------------------- static workers


def test_a_bounced_static_worker_takes_its_place_and_work_at_once_without_a_rebalance():
    shard = shard_with()
    ws = [Worker(shard, "w1", instance_id="i1"), Worker(shard, "w2", instance_id="i2")]
    for w in ws:
        w.join()
    settle(ws)
    had, epoch = ws[1].runs, shard.groups[GROUP].group_epoch
    assert ws[1].static_leave().member_epoch == -2
    group = shard.groups[GROUP]
    assert group.members["w2"].member_epoch == -2 and group.group_epoch == epoch
    assert not (ws[0].runs & had)  # nobody else runs it meanwhile
    back = Worker(shard, "w2-restarted", instance_id="i2")
    resp = back.join()
    assert resp.error_code == Errors.NONE and back.runs == had
    assert shard.groups[GROUP].group_epoch == epoch and "w2" not in shard.groups[GROUP].members


def test_a_static_worker_rejoining_under_its_own_id_keeps_its_work_without_a_rebalance():
    shard = shard_with()
    w = Worker(shard, "w1", instance_id="i1")
    w.join()
    epoch = shard.groups[GROUP].group_epoch
    resp = w.join()
    assert resp.error_code == Errors.NONE and w.runs == A3
    assert shard.groups[GROUP].group_epoch == epoch


def test_an_instance_id_held_by_a_live_worker_is_unreleased():
    shard = shard_with()
    Worker(shard, "w1", instance_id="i1").join()
    refused(shard, join("w9", instance_id="i1"), Errors.UNRELEASED_INSTANCE_ID, "i1")


def test_the_old_process_of_a_replaced_static_worker_is_fenced_by_instance_id():
    shard = shard_with()
    old = Worker(shard, "w1", instance_id="i1")
    old.join()
    old.static_leave()
    Worker(shard, "w1-new", instance_id="i1").join()
    req = m.ConnectGroupHeartbeatRequest(GROUP, "w1", 1, instance_id="i1")
    refused(shard, req, Errors.FENCED_INSTANCE_ID)


def test_a_static_worker_that_does_not_return_within_its_session_is_removed():
    shard = shard_with()
    ws = [Worker(shard, "w1"), Worker(shard, "w2", instance_id="i2")]
    for w in ws:
        w.join()
    settle(ws)
    ws[1].static_leave()
    ws[0].heartbeat()
    shard.tick(10_000)
    assert "w2" not in shard.groups[GROUP].members


def test_a_static_worker_returning_with_other_assignors_rebalances():
    shard = shard_with()
    w = Worker(shard, "w1", instance_id="i1")
    w.join()
    w.static_leave()
    epoch = shard.groups[GROUP].group_epoch
    back = Worker(shard, "w1b", instance_id="i1", assignors=[client_assignor()])
    assert back.join().error_code in (Errors.NONE, Errors.COMPUTE_ASSIGNMENT)
    assert shard.groups[GROUP].group_epoch == epoch + 1


def test_the_group_size_limit_refuses_one_more_worker():
    shard = shard_with(CoordinatorConfig(group_connect_max_size=1))
    Worker(shard, "w1").join()
    refused(shard, join("w2"), Errors.GROUP_MAX_SIZE_REACHED)


# ------------------------------------------------------------------- other group types


def test_a_connect_heartbeat_for_a_consumer_group_id_is_group_id_not_found():
    shard = shard_with()
    shard.handle(
        m.ConsumerGroupHeartbeatRequest(
            "cg", "c1", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
            topic_partitions=[],
        )
    )
    refused(shard, join(), Errors.GROUP_ID_NOT_FOUND, "consumer group")


def test_a_consumer_heartbeat_for_a_connect_group_id_is_group_id_not_found():
    shard = shard_with()
    Worker(shard, "w1").join()
    req = m.ConsumerGroupHeartbeatRequest(
        GROUP, "c1", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"],
        topic_partitions=[],
    )
    refused(shard, req, Errors.GROUP_ID_NOT_FOUND, "connect group")


@pytest.mark.parametrize(
    ("req", "error"),
    [
        (
            m.JoinGroupRequest(
                GROUP, 30_000, protocol_type="connect",
                protocols=[m.JoinGroupRequestProtocol("sessioned")],
            ),
            Errors.INCONSISTENT_GROUP_PROTOCOL,  # its metadata is not Connect's
        ),
        (
            m.JoinGroupRequest(
                GROUP, 30_000, protocol_type="consumer",
                protocols=[m.JoinGroupRequestProtocol("range")],
            ),
            Errors.INCONSISTENT_GROUP_PROTOCOL,
        ),
        (m.SyncGroupRequest(GROUP, 1, "w1"), Errors.UNKNOWN_MEMBER_ID),  # w1 is new-protocol
        (m.HeartbeatRequest(GROUP, 1, "w1"), Errors.UNKNOWN_MEMBER_ID),
        (m.HeartbeatRequest(GROUP, 1, "ghost"), Errors.UNKNOWN_MEMBER_ID),
    ],
    ids=lambda r: type(r).__name__ if not isinstance(r, Errors) else r.name,
)
def test_classic_requests_for_a_connect_group_are_refused_unless_a_classic_worker(req, error):
    """A Connect group hosts classic workers (online migration, ``tests/protocol/migration``);
    anything else classic is refused and changes nothing."""
    shard = shard_with()
    Worker(shard, "w1").join()
    refused(shard, req, error)


def test_an_empty_classic_group_becomes_a_connect_group_on_a_join():
    shard = shard_with()
    shard.handle(m.OffsetCommitRequest(GROUP, topics=[]))  # nothing committed: no group
    join_req = m.JoinGroupRequest(
        GROUP, 30_000, protocol_type="connect", protocols=[m.JoinGroupRequestProtocol("sessioned")]
    )
    shard.handle(join_req)  # MEMBER_ID_REQUIRED: the classic group exists, empty
    assert shard.groups[GROUP].group_type == "classic"
    assert Worker(shard, "w1").join().error_code == Errors.NONE
    assert shard.groups[GROUP].group_type == "connect"
