"""A rolling migration of classic Connect workers to the new protocol and back, on Ray (seed
004, "Migration To the New Protocol"), with the coordinator killed once while the group is
mixed: every connector and task has one owner throughout, as the workers' timelines and the
tasks' own work logs show, and all work runs at the end."""

from __future__ import annotations

import time

import pytest
import ray

from actors.tools.invariants import (
    check_connect_converged,
    check_connect_exclusive,
    check_connect_work,
)
from protocol import messages as m
from tests.actors.ray_helpers import eventually

pytestmark = pytest.mark.ray

GROUP = "cw-migration"
CONNECTORS = {"sink": 6, "src": 2}


def group_type(cluster) -> str | None:
    return next((g.group_type for g in cluster.list_groups() if g.group_id == GROUP), None)


def converged(cluster, workers) -> bool:
    assignments = ray.get([w.assignment.remote() for w in workers])
    by_worker = {(GROUP, str(i)): a for i, a in enumerate(assignments)}
    return check_connect_converged(by_worker, {GROUP: cluster.list_connectors(GROUP)}) == []


def unit_names(assignment: dict) -> list[str]:
    return list(assignment["connectors"]) + [f"{c}-{t}" for c, t in assignment["tasks"]]


def all_running(workers, before: list[dict[str, int]]) -> bool:
    """Every connector and task processed records on its owner since ``before``."""
    now = ray.get([w.records.remote() for w in workers])
    owned = ray.get([w.assignment.remote() for w in workers])
    progressed = [
        name for a, b, mine in zip(now, before, owned, strict=True)
        for name in unit_names(mine) if a.get(name, 0) > b.get(name, 0)
    ]
    expected = len(CONNECTORS) + sum(CONNECTORS.values())
    return len(progressed) == len(set(progressed)) == expected


def test_rolling_classic_connect_workers_to_the_new_protocol_and_back(cluster):
    # A leaver's work moves at once, whoever assigns (the coordinator while classic workers
    # are in the group, the workers' own assignor once all speak the new protocol).
    cluster.set_group_config(GROUP, connect_scheduled_rebalance_max_delay_ms=0)
    for name, tasks in CONNECTORS.items():
        cluster.create_connector(GROUP, name, tasks=tasks)
    everyone = []

    def spawn(protocol: str):
        w = cluster.spawn_worker(GROUP, protocol=protocol)
        everyone.append(w)
        return w

    workers = [spawn("classic") for _ in range(3)]
    eventually(lambda: converged(cluster, workers), timeout_s=90)
    assert group_type(cluster) == "classic"
    # Upgrade: each classic worker leaves and a new-protocol worker takes its place; the first
    # one converts the group once the classic group is stable again.
    for i in range(3):
        ray.get(workers[i].stop.remote(leave=True))
        workers[i] = spawn("connect")
        eventually(lambda: group_type(cluster) == "connect", timeout_s=90)
        eventually(lambda: converged(cluster, workers), timeout_s=90)
        if i == 0:
            # The mixed group survives its coordinator: the partition reloads it from its log.
            cluster.kill_partition(cluster.partition_for(GROUP))
            eventually(lambda: group_type(cluster) == "connect", timeout_s=90)

    def stable():
        g = cluster.describe_connect(GROUP)
        return g if g.group_state == "stable" and len(g.members) == 3 else None

    described = eventually(stable, timeout_s=60)
    assert all(w.member_epoch == described.group_epoch for w in described.members)
    # Downgrade: each new-protocol worker leaves and a classic one takes its place; the group
    # is classic again once the last new-protocol worker has left.
    for i in range(3):
        ray.get(workers[i].stop.remote(leave=True))
        workers[i] = spawn("classic")
        eventually(lambda: converged(cluster, workers), timeout_s=90)
    eventually(lambda: group_type(cluster) == "classic", timeout_s=30)
    classic = cluster.call(m.DescribeGroupsRequest([GROUP])).groups[0]
    assert classic.protocol_type == "connect" and len(classic.members) == 3
    eventually(lambda: converged(cluster, workers), timeout_s=90)
    before = ray.get([w.records.remote() for w in workers])
    eventually(lambda: all_running(workers, before), timeout_s=30)
    # Invariant 1, from the timelines and from the tasks' own work logs, over the whole run.
    ray.get([w.stop.remote(leave=True) for w in workers])
    end = time.monotonic()
    events = [e for tl in ray.get([w.timeline.remote() for w in everyone]) for e in tl]
    events.sort(key=lambda e: e["t"])
    assert events, "the workers recorded no timelines"
    assert check_connect_exclusive(events, {}, end) == []
    work = [e for log in ray.get([w.work_log.remote() for w in everyone]) for e in log]
    assert check_connect_work(work) == []
    for w in everyone:
        ray.kill(w)
