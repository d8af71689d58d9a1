"""ConnectWorkerClient against hand-made coordinator replies (seed 004, the worker's side)."""

from __future__ import annotations

import pytest

from assignors.connect import REASON_NONE, REASON_REBALANCE_DUE, IncrementalCooperativeAssignor
from assignors.connect.metadata import WorkerMetadata, encode
from protocol import messages as m
from protocol.classic.connect_protocol import Work
from protocol.client.connect_worker import ConnectWorkerClient
from protocol.errors import Errors

GROUP = "connect-a"
INTERVAL_MS = 500
SESSION_MS = 3_000


def wire(connectors=(), tasks=()) -> m.ConnectorsAndTasks:
    return m.ConnectorsAndTasks(
        sorted(connectors), [m.ConnectorTaskId(c, t) for c, t in sorted(tasks)]
    )


def reply(epoch, connectors=None, tasks=(), pending_tasks=(), code=Errors.NONE,
          metadata=(0, b"")) -> m.ConnectGroupHeartbeatResponse:
    assignment = None
    if connectors is not None:
        assignment = m.ConnectGroupAssignment(
            connectors_and_tasks=wire(connectors, tasks),
            pending_connectors_and_tasks=wire((), pending_tasks),
            metadata_version=metadata[0],
            metadata_bytes=metadata[1],
        )
    return m.ConnectGroupHeartbeatResponse(
        error_code=code, member_id="w1", member_epoch=epoch,
        heartbeat_interval_ms=INTERVAL_MS, assignment=assignment,
    )


def worker(**kw) -> ConnectWorkerClient:
    kw.setdefault("session_timeout_ms", SESSION_MS)
    return ConnectWorkerClient(GROUP, "w1", **kw)


def exchange(w: ConnectWorkerClient, now: float, resp) -> object:
    req = w.poll(now)
    assert req is not None, "a request was due"
    w.on_response(now, resp)
    return req


def joined(tasks=(("sink", 0), ("sink", 1)), connectors=("sink",), **kw) -> ConnectWorkerClient:
    w = worker(**kw)
    exchange(w, 0.0, reply(3, connectors, tasks))
    exchange(w, 0.0, reply(3))  # the acknowledgement
    return w


def owned(w) -> tuple[list, list]:
    return w.assignment["connectors"], w.assignment["tasks"]


# ---------------------------------------------------------------------------- joining


def test_join_names_the_worker_its_assignor_and_version_range():
    w = worker(instance_id="host-1", rebalance_timeout_ms=20_000,
               assignors=[IncrementalCooperativeAssignor(minimum_version=1, maximum_version=1)])
    join = w.poll(0.0)
    assert isinstance(join, m.ConnectGroupHeartbeatRequest)
    assert (join.group_id, join.member_id, join.member_epoch) == (GROUP, "w1", 0)
    assert (join.instance_id, join.rebalance_timeout_ms) == ("host-1", 20_000)
    assert join.connectors_and_tasks == wire()
    (advert,) = join.client_assignors
    assert (advert.name, advert.minimum_version, advert.maximum_version) == (
        "incremental-cooperative", 1, 1)
    assert advert.reason == REASON_NONE
    assert join.server_assignor is None


def test_granted_work_starts_and_is_acknowledged_at_once_then_heartbeats_follow_the_interval():
    started = []
    w = worker(on_assigned=lambda cs, ts: started.append((cs, ts)))
    exchange(w, 0.0, reply(3, ["sink"], [("sink", 0), ("sink", 1)]))
    assert started == [(["sink"], [("sink", 0), ("sink", 1)])]
    assert w.timeline[-1] == {
        "t": 0.0, "event": "assigned", "connectors": ["sink"],
        "tasks": [("sink", 0), ("sink", 1)], "epoch": 3, "member_id": "w1",
    }
    ack = exchange(w, 0.0, reply(3))
    assert ack.connectors_and_tasks == wire(["sink"], [("sink", 0), ("sink", 1)])
    assert ack.client_assignors is None and ack.rebalance_timeout_ms == -1, "a lean heartbeat"
    assert w.state == "stable"
    assert w.poll(0.499) is None
    assert w.poll(0.5) is not None
    assert w.poll(0.5) is None, "one request in flight at a time"


def test_revoked_work_stops_before_the_acknowledgement_which_leaves_it_out():
    calls = []
    w = joined(on_revoked=lambda cs, ts: calls.append(("revoked", cs, ts)))
    exchange(w, 1.0, reply(4, ["sink"], [("sink", 0)]))
    assert calls == [("revoked", [], [("sink", 1)])]
    assert w.timeline[-1]["event"] == "revoked" and w.timeline[-1]["epoch"] == 4
    ack = w.poll(1.0)
    assert ack.connectors_and_tasks == wire(["sink"], [("sink", 0)])


def test_pending_work_is_shown_but_not_run():
    w = worker()
    exchange(w, 0.0, reply(2, ["sink"], [("sink", 0)], pending_tasks=[("sink", 1)]))
    assert owned(w) == (["sink"], [("sink", 0)])
    assert w.pending == Work.of(tasks=[("sink", 1)])
    assert w.state == "reconciling"


# ------------------------------------------------------------------- computing the assignment


def prepared(group_epoch=5) -> m.ConnectGroupPrepareAssignmentResponse:
    member = m.ConnectPrepareAssignmentMember
    return m.ConnectGroupPrepareAssignmentResponse(
        group_epoch=group_epoch,
        assignor_name="incremental-cooperative",
        members=[
            member("w1", 4, None, m.PrepareAssignmentAssignor(0, 2, b""),
                   wire(["sink"], [("sink", 0), ("sink", 1)]), maximum_version=2),
            member("w2", 0, None, m.PrepareAssignmentAssignor(0, 2, b""), wire(),
                   maximum_version=2),
        ],
        connectors=[m.ConnectorTasks("sink", 2), m.ConnectorTasks("source", 2)],
    )


def test_compute_assignment_prepares_runs_the_assignor_and_installs_for_that_group_epoch():
    w = joined()
    exchange(w, 1.0, reply(4, code=Errors.COMPUTE_ASSIGNMENT))
    assert w.job == "asked"
    prepare = exchange(w, 1.0, prepared(group_epoch=5))
    assert prepare == m.ConnectGroupPrepareAssignmentRequest(GROUP, "w1", 4)
    install = w.poll(1.0)
    assert isinstance(install, m.ConnectGroupInstallAssignmentRequest)
    assert (install.member_id, install.member_epoch, install.group_epoch) == ("w1", 4, 5)
    targets = {a.member_id: a.connectors_and_tasks for a in install.members}
    assert sorted(targets) == ["w1", "w2"]
    all_tasks = sorted((t.connector, t.task) for ct in targets.values() for t in ct.tasks)
    assert all_tasks == [("sink", 0), ("sink", 1), ("source", 0), ("source", 1)]
    assert sorted(c for ct in targets.values() for c in ct.connectors) == ["sink", "source"]
    assert [len(ct.tasks) for ct in targets.values()] == [2, 2]
    assert {a.metadata_version for a in install.members} == {2}
    w.on_response(1.0, m.ConnectGroupInstallAssignmentResponse())
    assert w.job == "idle" and w.job_stats.installed == 1
    assert isinstance(w.poll(1.0), m.ConnectGroupHeartbeatRequest), "asks for its new target"


def test_assignor_gets_the_worker_clock_in_ms():
    seen = []

    class Recording(IncrementalCooperativeAssignor):
        def assign(self, group):
            seen.append(group.now_ms)
            return super().assign(group)

    w = joined(assignors=[Recording()], wall_offset_s=1_000.0)
    exchange(w, 2.5, reply(4, code=Errors.COMPUTE_ASSIGNMENT))
    exchange(w, 2.5, prepared())
    assert seen == [1_002_500]


def test_a_revocation_in_the_compute_reply_is_acknowledged_before_preparing():
    w = joined()
    exchange(w, 1.0, reply(4, ["sink"], [("sink", 0)], code=Errors.COMPUTE_ASSIGNMENT))
    ack = exchange(w, 1.0, reply(4))
    assert isinstance(ack, m.ConnectGroupHeartbeatRequest)
    assert ack.connectors_and_tasks == wire(["sink"], [("sink", 0)])
    assert isinstance(w.poll(1.0), m.ConnectGroupPrepareAssignmentRequest)


@pytest.mark.parametrize("code", [Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_MEMBER_EPOCH,
                                  Errors.GROUP_ID_NOT_FOUND])
def test_a_refused_prepare_drops_the_job_but_keeps_the_work(code):
    w = joined()
    exchange(w, 1.0, reply(4, code=Errors.COMPUTE_ASSIGNMENT))
    exchange(w, 1.0, m.ConnectGroupPrepareAssignmentResponse(error_code=code))
    assert w.job == "idle" and w.job_stats.refused == 1
    assert owned(w) == (["sink"], [("sink", 0), ("sink", 1)])
    hb = w.poll(1.2)
    assert isinstance(hb, m.ConnectGroupHeartbeatRequest) and hb.member_epoch == 4


def test_an_invalid_assignment_is_dropped_and_the_next_heartbeat_decides():
    w = joined()
    exchange(w, 1.0, reply(4, code=Errors.COMPUTE_ASSIGNMENT))
    exchange(w, 1.0, prepared())
    exchange(w, 1.0, m.ConnectGroupInstallAssignmentResponse(
        error_code=Errors.INVALID_ASSIGNMENT, error_message="Connector gone does not exist."))
    assert w.job == "idle" and "INVALID_ASSIGNMENT" in w.job_stats.last_error
    assert owned(w) == (["sink"], [("sink", 0), ("sink", 1)])
    exchange(w, 1.0, reply(4, code=Errors.COMPUTE_ASSIGNMENT))
    assert isinstance(w.poll(1.0), m.ConnectGroupPrepareAssignmentRequest)


def test_an_unknown_assignor_name_is_not_computed():
    w = joined()
    exchange(w, 1.0, reply(4, code=Errors.COMPUTE_ASSIGNMENT))
    resp = prepared()
    resp.assignor_name = "someone-elses"
    exchange(w, 1.0, resp)
    assert w.job == "idle" and w.job_stats.failed == 1
    assert isinstance(w.poll(1.2), m.ConnectGroupHeartbeatRequest)


# ------------------------------------------------------------------------ fencing


@pytest.mark.parametrize("code", [Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID])
def test_fenced_worker_abandons_all_work_and_rejoins_with_epoch_zero_and_the_same_id(code):
    lost = []
    w = joined(on_lost=lambda cs, ts: lost.append((cs, ts)))
    exchange(w, 1.0, reply(4, code=Errors.COMPUTE_ASSIGNMENT))
    exchange(w, 1.0, prepared())
    assert w.job == "ready"
    w.poll(1.0)  # the install goes out...
    w.on_response(1.0, m.ConnectGroupInstallAssignmentResponse())
    exchange(w, 1.5, m.ConnectGroupHeartbeatResponse(error_code=code))
    assert lost == [(["sink"], [("sink", 0), ("sink", 1)])]
    assert owned(w) == ([], []) and w.member_epoch == 0 and w.job == "idle"
    assert w.timeline[-1]["event"] == "lost"
    rejoin = w.poll(1.5)
    assert (rejoin.member_id, rejoin.member_epoch) == ("w1", 0)
    assert rejoin.client_assignors is not None and rejoin.rebalance_timeout_ms > 0


def test_fencing_abandons_a_computed_assignment_not_yet_installed():
    w = joined()
    exchange(w, 1.0, reply(4, ["sink"], [("sink", 0)], code=Errors.COMPUTE_ASSIGNMENT))
    exchange(w, 1.0, m.ConnectGroupHeartbeatResponse(error_code=Errors.FENCED_MEMBER_EPOCH))
    assert w.job == "idle"
    assert isinstance(w.poll(1.0), m.ConnectGroupHeartbeatRequest)


def test_worker_without_replies_gives_up_its_work_at_the_session_deadline():
    w = joined()
    deadline = w.ownership_deadline
    assert deadline == pytest.approx(SESSION_MS / 1000)
    assert w.poll(0.5) is not None  # sent; the reply never comes
    assert w.poll(deadline) is None
    assert w.timeline[-1]["event"] == "lost" and w.timeline[-1]["t"] == deadline
    assert owned(w) == ([], []) and w.member_epoch == 0
    w.on_response(deadline + 1, reply(3))  # the late reply means nothing now
    assert owned(w) == ([], [])


def test_unacknowledged_revocation_counts_as_lost_after_the_rebalance_timeout():
    w = joined(rebalance_timeout_ms=1_000)
    exchange(w, 0.5, reply(4, ["sink"], [("sink", 0)]))  # revokes (sink, 1)
    w.poll(0.5)
    w.on_failure(0.5)  # the acknowledgement never arrives
    assert w.ownership_deadline == pytest.approx(1.5)
    while w.poll(1.4) is not None:
        w.on_failure(1.4)
    assert owned(w) == (["sink"], [("sink", 0)])
    w.poll(1.5)
    assert owned(w) == ([], []) and w.timeline[-1]["event"] == "lost"


def test_retriable_errors_back_off_keep_the_work_and_restate_everything():
    w = joined()
    exchange(w, 0.5, m.ConnectGroupHeartbeatResponse(error_code=Errors.COORDINATOR_NOT_AVAILABLE))
    assert owned(w) == (["sink"], [("sink", 0), ("sink", 1)])
    assert w.poll(0.55) is None
    full = w.poll(0.6)
    assert full.client_assignors is not None and full.rebalance_timeout_ms > 0


def test_unsupported_assignor_fails_the_worker():
    w = worker()
    exchange(w, 0.0, m.ConnectGroupHeartbeatResponse(error_code=Errors.UNSUPPORTED_ASSIGNOR))
    assert w.state == "failed" and w.error == Errors.UNSUPPORTED_ASSIGNOR
    assert w.poll(10.0) is None and w.next_due() is None


# -------------------------------------------------------------- scheduled rebalances


def schedule_at(ms: int) -> tuple[int, bytes]:
    return (2, encode(WorkerMetadata(next_rebalance_ms=ms), 2))


def test_when_the_scheduled_delay_is_over_the_worker_asks_for_a_rebalance_once():
    w = worker()
    exchange(w, 0.0, reply(3, ["sink"], [("sink", 0)], metadata=schedule_at(2_000)))
    exchange(w, 0.0, reply(3))
    assert w.next_due() == pytest.approx(0.5)
    exchange(w, 0.5, reply(3))
    assert w.next_due() == pytest.approx(1.0)
    exchange(w, 1.0, reply(3))
    assert w.next_due() == pytest.approx(1.5)
    exchange(w, 1.5, reply(3))
    assert w.next_due() == pytest.approx(2.0)
    ask = exchange(w, 2.0, reply(3))
    (advert,) = ask.client_assignors
    assert advert.reason == REASON_REBALANCE_DUE
    assert (advert.metadata_version, advert.metadata_bytes) == schedule_at(2_000)
    quiet = exchange(w, 2.5, reply(3))
    assert quiet.client_assignors is None, "asked once, not on every heartbeat"
    # The new assignment schedules nothing more: the reason goes back to none, once.
    exchange(w, 3.0, reply(5, ["sink"], [("sink", 0)], metadata=(2, encode(WorkerMetadata(), 2))))
    back = w.poll(3.0)
    assert back.client_assignors[0].reason == REASON_NONE
    w.on_response(3.0, reply(5))
    assert w.poll(3.5).client_assignors is None


def test_a_worker_told_of_a_delay_already_over_asks_at_once():
    w = worker(wall_offset_s=100.0)
    exchange(w, 0.0, reply(3, [], [], metadata=schedule_at(99_000)))
    ask = w.poll(0.0)
    assert ask.client_assignors[0].reason == REASON_REBALANCE_DUE


# -------------------------------------------------------------------------- leaving


def test_dynamic_worker_leaves_with_epoch_minus_one_after_stopping_everything():
    stopped = []
    w = joined(on_revoked=lambda cs, ts: stopped.append((cs, ts)))
    w.leave()
    bye = w.poll(0.1)
    assert (bye.member_epoch, bye.instance_id) == (-1, None)
    assert stopped == [(["sink"], [("sink", 0), ("sink", 1)])]
    w.on_response(0.1, m.ConnectGroupHeartbeatResponse(member_id="w1", member_epoch=-1))
    assert w.state == "stopped" and w.next_due() is None


def test_static_worker_leaves_with_epoch_minus_two():
    w = joined(instance_id="host-1")
    w.leave()
    bye = w.poll(0.1)
    assert (bye.member_epoch, bye.instance_id) == (-2, "host-1")


def test_a_worker_that_never_joined_just_stops():
    w = worker()
    w.leave()
    assert w.state == "stopped" and w.poll(0.0) is None


def test_leaving_drops_a_pending_assignment_job():
    w = joined()
    exchange(w, 1.0, reply(4, code=Errors.COMPUTE_ASSIGNMENT))
    w.leave()
    bye = w.poll(1.0)
    assert isinstance(bye, m.ConnectGroupHeartbeatRequest) and bye.member_epoch == -1
    assert w.job == "idle"


def test_a_reply_read_after_the_session_could_have_ended_is_not_trusted():
    w = worker()
    req = w.poll(0.0)
    assert req.member_epoch == 0
    w.on_response(0.0, reply(3, ["sink"], [("sink", 0)]))  # joined; now the ack goes out...
    w.poll(0.0)
    late = reply(3, ["sink"], [("sink", 0), ("sink", 1)])
    w.on_response(SESSION_MS / 1000 + 0.5, late)  # ...and its reply is read too late
    assert owned(w) == ([], []) and w.member_epoch == 0
    assert w.timeline[-1]["event"] == "lost"
    assert w.timeline[-1]["t"] == pytest.approx(SESSION_MS / 1000)
