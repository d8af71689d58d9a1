"""Client-side assignment in Connect groups (seed 004): worker selection by version range,
COMPUTE_ASSIGNMENT, ConnectGroupPrepareAssignment's checks in the seed's order,
ConnectGroupInstallAssignment's validation, older epochs, and a chosen worker's deadline."""

from __future__ import annotations

import copy

import pytest

from protocol import messages as m
from protocol.connect import units as u
from protocol.errors import Errors
from protocol.shard import GroupCoordinatorShard
from tests.protocol.connect.workers import (
    GROUP,
    REBALANCE_TIMEOUT_MS,
    Worker,
    client_assignor,
    compute,
    connectors,
    owners,
    settle,
)


def three_ranges() -> tuple[GroupCoordinatorShard, dict[str, Worker]]:
    """Seed 004's example: A [1-5], B [3-4], C [2-4]."""
    shard = GroupCoordinatorShard(metadata=connectors(a=3, b=2))
    ws = {
        "A": Worker(shard, "A", assignors=[client_assignor(1, 5)]),
        "B": Worker(shard, "B", assignors=[client_assignor(3, 4)]),
        "C": Worker(shard, "C", assignors=[client_assignor(2, 4)]),
    }
    for w in ws.values():
        w.join()
    return shard, ws


def unchanged(shard: GroupCoordinatorShard, req: object, error: Errors, text: str = "") -> None:
    groups, timers = copy.deepcopy(shard.groups), shard.next_deadline_ms()
    result = shard.handle(req)
    assert result.response.error_code == error, result.response
    assert text in (result.response.error_message or "")
    assert result.records == [] and shard.groups == groups and shard.next_deadline_ms() == timers


# ---------------------------------------------------------------------------- selection


def test_the_worker_whose_range_covers_everyones_is_chosen_a_1_5_b_3_4_c_2_4_gives_a():
    _, ws = three_ranges()
    replies = {name: w.heartbeat() for name, w in ws.items()}
    assert replies["A"].error_code == Errors.COMPUTE_ASSIGNMENT
    assert replies["B"].error_code == Errors.NONE and replies["C"].error_code == Errors.NONE


def test_a_compute_assignment_reply_is_otherwise_a_full_success_reply():
    shard, ws = three_ranges()
    resp = ws["A"].heartbeat()
    assert resp.error_code == Errors.COMPUTE_ASSIGNMENT
    assert resp.member_id == "A" and resp.heartbeat_interval_ms == 3_000
    assert resp.member_epoch == shard.groups[GROUP].members["A"].member_epoch
    assert resp.assignment is not None  # a worker at epoch 0 always gets its assignment
    assert "chosen to compute" in resp.error_message


def test_the_chosen_worker_computes_and_every_unit_runs_once():
    shard, ws = three_ranges()
    settle(list(ws.values()))
    held = owners(list(ws.values()))
    assert sorted(held) == sorted(u.configured({"a": 3, "b": 2}))
    assert all(len(v) == 1 for v in held.values())
    assert shard.groups[GROUP].state == "stable"


def test_nobody_is_asked_once_the_target_is_installed():
    _, ws = three_ranges()
    settle(list(ws.values()))
    for w in ws.values():
        assert w.heartbeat().error_code == Errors.NONE


# ----------------------------------------------------- PrepareAssignment, in seed order


def prepare(shard, member_id="A", epoch=None, group_id=GROUP):
    if epoch is None:
        epoch = shard.groups[GROUP].members[member_id].member_epoch
    return m.ConnectGroupPrepareAssignmentRequest(group_id, member_id, epoch)


@pytest.mark.parametrize(
    ("fields", "text"),
    [(("", "A", 0), "GroupId"), ((GROUP, "", 0), "MemberId"), ((GROUP, "A", -1), "MemberEpoch")],
)
def test_prepare_validation_is_invalid_request(fields, text):
    shard, _ = three_ranges()
    req = m.ConnectGroupPrepareAssignmentRequest(*fields)
    unchanged(shard, req, Errors.INVALID_REQUEST, text)
    install = m.ConnectGroupInstallAssignmentRequest(*fields, group_epoch=1)
    unchanged(shard, install, Errors.INVALID_REQUEST, text)


def test_prepare_checks_come_in_the_seeds_order():
    shard, _ = three_ranges()
    epoch_a = shard.groups[GROUP].members["A"].member_epoch
    # 1. the group: an unknown group wins over every later check
    unchanged(shard, prepare(shard, "ghost", 99, group_id="nope"), Errors.GROUP_ID_NOT_FOUND)
    # 2. the member: an unknown member wins over an epoch mismatch
    unchanged(shard, prepare(shard, "ghost", 99), Errors.UNKNOWN_MEMBER_ID, "not in group")
    # 3. the epoch: FENCED_MEMBER_EPOCH (not STALE_MEMBER_EPOCH), even for a non-chosen worker
    unchanged(shard, prepare(shard, "B", 99), Errors.FENCED_MEMBER_EPOCH)
    # 4. the chosen one: anyone else is an unknown member to this request
    unchanged(shard, prepare(shard, "B"), Errors.UNKNOWN_MEMBER_ID, "not the member chosen")
    assert shard.handle(prepare(shard, "A", epoch_a)).response.error_code == Errors.NONE


def test_prepare_on_a_group_of_another_type_is_group_id_not_found():
    shard = GroupCoordinatorShard(metadata=connectors(a=1))
    shard.handle(
        m.ConsumerGroupHeartbeatRequest(
            "cons", "c1", 0, rebalance_timeout_ms=1000, subscribed_topic_names=["t"]
        )
    )
    unchanged(
        shard, m.ConnectGroupPrepareAssignmentRequest("cons", "c1", 0), Errors.GROUP_ID_NOT_FOUND
    )


def test_a_server_side_group_has_no_chosen_worker():
    shard = GroupCoordinatorShard(metadata=connectors(a=1))
    w = Worker(shard, "w1")
    w.join()
    unchanged(shard, prepare(shard, "w1"), Errors.UNKNOWN_MEMBER_ID, "not the member chosen")


def test_prepare_returns_the_workers_metadata_and_work_and_the_connectors():
    shard, ws = three_ranges()
    settle(list(ws.values()))
    shard.update_metadata(connectors(a=3, b=2, c=1))
    ws["B"].heartbeat(client_assignors=[client_assignor(3, 4, reason=1, metadata_bytes=b"b")])
    resp = shard.handle(prepare(shard, "A")).response
    assert resp.error_code == Errors.NONE
    group = shard.groups[GROUP]
    assert resp.group_epoch == group.group_epoch and resp.assignor_name == "incremental-cooperative"
    assert (resp.minimum_version, resp.maximum_version) == (3, 4)
    assert [c for c in resp.connectors] == [
        m.ConnectorTasks("a", 3), m.ConnectorTasks("b", 2), m.ConnectorTasks("c", 1)
    ]
    by_id = {p.member_id: p for p in resp.members}
    assert sorted(by_id) == ["A", "B", "C"]
    assert by_id["B"].assignor.reason == 1 and by_id["B"].maximum_version == 4
    for mid, p in by_id.items():
        target = group.target[mid]
        assert u.from_wire(p.connectors_and_tasks) == group.target_of(mid)
        assert (p.assignor.version, p.assignor.metadata) == (
            target.metadata_version, target.metadata_bytes
        )
        assert p.member_epoch == group.members[mid].member_epoch


# ----------------------------------------------------------------- InstallAssignment


def install(shard, members, member_id="A", group_epoch=None, error=0):
    group = shard.groups[GROUP]
    return m.ConnectGroupInstallAssignmentRequest(
        GROUP,
        member_id,
        group.members[member_id].member_epoch,
        group.group_epoch if group_epoch is None else group_epoch,
        error=error,
        members=members,
    )


def entry(member_id, connectors=(), tasks=()):
    return m.ConnectInstallAssignmentMember(
        member_id,
        connectors_and_tasks=m.ConnectorsAndTasks(
            list(connectors), [m.ConnectorTaskId(c, t) for c, t in tasks]
        ),
    )


@pytest.mark.parametrize(
    ("members", "text"),
    [
        ([entry("A", ["zzz"])], "Connector 'zzz' does not exist"),
        ([entry("A", tasks=[("zzz", 0)])], "Connector 'zzz' does not exist"),
        ([entry("A", tasks=[("a", 3)])], "a-3 does not exist"),
        ([entry("A", tasks=[("a", -1)])], "a--1 does not exist"),  # not the connector
        ([entry("A", ["a"]), entry("B", ["a"])], "a is assigned twice"),
        ([entry("A", tasks=[("b", 1), ("b", 1)])], "b-1 is assigned twice"),
        ([entry("A"), entry("A")], "Member A appears twice"),
    ],
)
def test_an_assignment_naming_unknown_or_doubled_work_is_invalid_and_changes_nothing(members, text):
    shard, ws = three_ranges()
    ws["A"].heartbeat()
    unchanged(shard, install(shard, members), Errors.INVALID_ASSIGNMENT, text)


def test_install_checks_the_chosen_worker_as_prepare_does():
    shard, _ = three_ranges()
    unchanged(shard, install(shard, [], member_id="B"), Errors.UNKNOWN_MEMBER_ID)
    req = install(shard, [])
    req.member_epoch += 7
    unchanged(shard, req, Errors.FENCED_MEMBER_EPOCH)


def test_an_installed_assignment_moves_the_assignment_epoch_and_unnamed_workers_get_nothing():
    shard, _ = three_ranges()
    group = shard.groups[GROUP]
    resp = shard.handle(install(shard, [entry("A", ["a", "b"], [("a", 0)])])).response
    assert resp.error_code == Errors.NONE
    assert group.assignment_epoch == group.group_epoch
    assert group.target_of("A") == {("a", -1), ("b", -1), ("a", 0)}
    assert group.target_of("B") == u.EMPTY and group.target_of("C") == u.EMPTY


def test_an_assignment_for_an_older_epoch_is_installed_and_the_worker_asked_again():
    shard, ws = three_ranges()
    group = shard.groups[GROUP]
    old_epoch = group.group_epoch
    ws["A"].heartbeat()
    prepared = shard.handle(prepare(shard, "A")).response
    Worker(shard, "D", assignors=[client_assignor(2, 5)]).join()  # the epoch moves on
    assert group.group_epoch == old_epoch + 1
    resp = shard.handle(
        install(shard, [entry("A", ["a"])], group_epoch=prepared.group_epoch)
    ).response
    assert resp.error_code == Errors.NONE
    assert group.assignment_epoch == old_epoch and group.state == "assigning"
    assert ws["A"].heartbeat().error_code == Errors.COMPUTE_ASSIGNMENT


def test_an_assignment_for_an_epoch_already_installed_or_not_yet_reached_is_invalid():
    shard, _ = three_ranges()
    group = shard.groups[GROUP]
    ahead = install(shard, [entry("A", ["a"])], group_epoch=group.group_epoch + 1)
    unchanged(shard, ahead, Errors.INVALID_ASSIGNMENT, "GroupEpoch")
    assert shard.handle(install(shard, [entry("A", ["a"])])).response.error_code == Errors.NONE
    again = install(shard, [entry("A", ["a"])])  # a retry of what is installed: harmless
    unchanged(shard, again, Errors.NONE)
    other = install(shard, [entry("A", ["b"])])
    unchanged(shard, other, Errors.INVALID_ASSIGNMENT, "GroupEpoch")


def test_workers_that_left_after_prepare_are_skipped():
    shard, ws = three_ranges()
    ws["C"].leave()
    resp = shard.handle(install(shard, [entry("A", ["a"]), entry("C", ["b"])])).response
    assert resp.error_code == Errors.NONE
    assert "C" not in shard.groups[GROUP].target


def test_a_chosen_worker_that_does_not_install_within_its_rebalance_timeout_loses_the_job():
    shard, ws = three_ranges()
    assert ws["A"].heartbeat().error_code == Errors.COMPUTE_ASSIGNMENT

    def everyone_heartbeats_until(to_ms: int) -> None:  # nobody computes
        while shard.now_ms < to_ms:
            shard.tick(min(shard.now_ms + 2_000, to_ms))
            for w in ws.values():
                w.heartbeat()

    everyone_heartbeats_until(REBALANCE_TIMEOUT_MS - 1)
    assert ws["A"].last.error_code == Errors.COMPUTE_ASSIGNMENT
    assert ws["B"].last.error_code == Errors.NONE and ws["C"].last.error_code == Errors.NONE
    everyone_heartbeats_until(REBALANCE_TIMEOUT_MS)
    # C [2-4] covers more than B [3-4]: the next by the same rule.
    assert ws["C"].last.error_code == Errors.COMPUTE_ASSIGNMENT
    assert ws["A"].last.error_code == Errors.NONE
    unchanged(shard, prepare(shard, "A"), Errors.UNKNOWN_MEMBER_ID, "not the member chosen")
    assert compute(ws["C"], now_ms=shard.now_ms).error_code == Errors.NONE
    settle(list(ws.values()), now_ms=shard.now_ms)
    assert ws["A"].heartbeat().error_code == Errors.NONE  # installed: the job is done


def test_an_assignor_reporting_an_error_installs_nothing_and_passes_the_job_on():
    shard, ws = three_ranges()
    ws["A"].heartbeat()
    resp = shard.handle(install(shard, [entry("A", ["a"])], error=1)).response
    assert resp.error_code == Errors.NONE
    group = shard.groups[GROUP]
    assert group.assignment_epoch < group.group_epoch and group.target_of("A") == u.EMPTY
    assert ws["C"].heartbeat().error_code == Errors.COMPUTE_ASSIGNMENT


def test_when_the_chosen_worker_leaves_another_is_chosen():
    _, ws = three_ranges()
    ws["A"].leave()
    assert ws["C"].heartbeat().error_code == Errors.COMPUTE_ASSIGNMENT
    settle([ws["B"], ws["C"]])
