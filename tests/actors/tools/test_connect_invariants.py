"""The Connect invariant checks: a clean worker history passes, double running is named."""

from __future__ import annotations

from typing import Any

from actors.tools.invariants import (
    check_connect_converged,
    check_connect_exclusive,
    check_connect_work,
    check_epochs,
)
from protocol.client.task_work import TaskWork


def ev(t: float, event: str, worker: str, connectors=(), tasks=(), epoch: int = 1) -> dict:
    return {"t": t, "event": event, "connectors": list(connectors),
            "tasks": [list(x) for x in tasks], "epoch": epoch, "member_id": worker,
            "group_id": "cg"}


def ran(worker: str, unit: tuple[str, int], lo: float, hi: float) -> dict[str, Any]:
    return {"t": hi, "event": "ran", "connector": unit[0], "task": unit[1], "from": lo,
            "to": hi, "work": 1, "member_id": worker, "group_id": "cg"}


def test_a_clean_handover_passes():
    events = [
        ev(0.0, "assigned", "a", ["sink"], [("sink", 0)]),
        ev(1.0, "revoked", "a", [], [("sink", 0)]),
        ev(1.0, "assigned", "b", [], [("sink", 0)], epoch=2),
    ]
    assert check_connect_exclusive(events, {}, 5.0) == []
    assert check_epochs(events, {"cg": 2}) == []


def test_a_task_on_two_workers_at_once_is_reported_by_name():
    events = [
        ev(0.0, "assigned", "a", [], [("sink", 3)]),
        ev(0.5, "assigned", "b", [], [("sink", 3)]),
        ev(1.0, "revoked", "a", [], [("sink", 3)]),
    ]
    (v,) = check_connect_exclusive(events, {}, 5.0)
    assert v.invariant == 1 and "task sink-3" in v.message and "a" in v.message


def test_a_connector_on_two_workers_is_reported_as_a_connector():
    events = [ev(0.0, "assigned", "a", ["sink"]), ev(0.5, "assigned", "b", ["sink"])]
    (v,) = check_connect_exclusive(events, {}, 5.0)
    assert "connector sink" in v.message


def test_a_killed_worker_owns_until_its_end_time_only():
    events = [ev(0.0, "assigned", "a", [], [("sink", 0)]),
              ev(3.0, "assigned", "b", [], [("sink", 0)])]
    assert check_connect_exclusive(events, {"a": 2.0}, 5.0) == []
    assert len(check_connect_exclusive(events, {"a": 4.0}, 5.0)) == 1


def test_convergence_wants_every_unit_once():
    connectors = {"cg": {"sink": 2}}
    good = {("cg", "a"): {"connectors": ["sink"], "tasks": [("sink", 0)]},
            ("cg", "b"): {"connectors": [], "tasks": [("sink", 1)]}}
    assert check_connect_converged(good, connectors) == []
    bad = {("cg", "a"): {"connectors": [], "tasks": [("sink", 0), ("sink", 1)]},
           ("cg", "b"): {"connectors": [], "tasks": [("sink", 1)]}}
    messages = sorted(v.message for v in check_connect_converged(bad, connectors))
    assert messages == ["group cg connector sink: owned by no member",
                        "group cg task sink-1: owned by 2 members: a, b"]


def test_overlapping_work_ranges_on_two_workers_are_double_running():
    assert check_connect_work([ran("a", ("sink", 0), 0, 1), ran("b", ("sink", 0), 1, 2)]) == []
    (v,) = check_connect_work([ran("a", ("sink", 0), 0, 1.5), ran("b", ("sink", 0), 1, 2)])
    assert "task sink-0" in v.message and "ran on a and b" in v.message


def test_task_work_reports_contiguous_ranges_and_counts_records():
    work = TaskWork("w1", records_per_s=10, report_interval_s=1.0)
    work.start(TaskWork.units(["sink"], [("sink", 0)]), 0.0)
    work.advance(0.5)
    assert work.events == []
    work.advance(1.2)
    work.stop([("sink", 0)], 2.0)
    ranges = [(e["connector"], e["task"], e["from"], e["to"]) for e in work.events]
    assert ranges == [("sink", -1, 0.0, 1.2), ("sink", 0, 0.0, 1.2), ("sink", 0, 1.2, 2.0)]
    assert work.records[("sink", 0)] == 20
    assert list(work.running) == [("sink", -1)]
    assert check_connect_work([dict(e, group_id="cg") for e in work.events]) == []
