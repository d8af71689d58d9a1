"""Classic consumers on Ray: a static bounce without a rebalance, and a rolling upgrade of a
classic group to the new protocol and back, checked from the consumers' own timelines."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import ray

from actors.tools.chaos import _read_timeline
from actors.tools.invariants import check_exclusive_ownership
from protocol import messages as m
from tests.actors.ray_helpers import eventually, wait_whole

pytestmark = pytest.mark.ray

CLASSIC = {"session_timeout_ms": 4_000, "rebalance_timeout_ms": 8_000,
           "heartbeat_interval_ms": 300}


def generation(cluster, group: str) -> int:
    return cluster.call(m.DescribeGroupsRequest([group])).groups[0].generation_id


def test_a_static_member_bounced_with_restart_causes_no_rebalance(cluster, tmp_path):
    cluster.create_topic("static-bounce", 4)
    group = "static-bounce-g"
    # The bounce (stop, kill, a new actor that joins) must fit in the session: 4 s did not on a
    # loaded machine (the member expired and the group rebalanced).
    bounce = {**CLASSIC, "session_timeout_ms": 30_000}
    handles = [
        cluster.spawn_consumer(group, ["static-bounce"], protocol="classic",
                               instance_id=f"sb-{i}", **bounce)
        for i in range(2)
    ]
    wait_whole(handles, 4)
    time.sleep(1.0)
    gen = generation(cluster, group)
    before = sorted(ray.get(handles[1].assignment.remote()))
    ray.get(handles[1].stop.remote(leave=False))  # a static member does not leave
    ray.kill(handles[1])
    handles[1] = cluster.spawn_consumer(group, ["static-bounce"], protocol="classic",
                                        instance_id="sb-1", join_reason="restart", **bounce)
    wait_whole(handles, 4)
    assert sorted(ray.get(handles[1].assignment.remote())) == before
    assert generation(cluster, group) == gen
    described = cluster.call(m.DescribeGroupsRequest([group])).groups[0]
    assert described.group_state == "stable"
    ray.get([h.stop.remote(leave=True) for h in handles])


def test_rolling_upgrade_to_the_new_protocol_and_back_never_double_owns(cluster, tmp_path):
    topic, group, n, parts = "rolling-up", "rolling-up-g", 4, 8
    cluster.create_topic(topic, parts)
    paths: list[Path] = []

    def classic(i: int, restart: bool = False):
        paths.append(tmp_path / f"classic-{i}-{len(paths)}.jsonl")
        extra = {"join_reason": "restart"} if restart else {}
        return cluster.spawn_consumer(group, [topic], protocol="classic", instance_id=f"ru-{i}",
                                      timeline_path=str(paths[-1]), **CLASSIC, **extra)

    def new(i: int):
        paths.append(tmp_path / f"new-{i}-{len(paths)}.jsonl")
        return cluster.spawn_consumer(group, [topic], instance_id=f"ru-{i}",
                                      timeline_path=str(paths[-1]))

    handles = [classic(i) for i in range(n)]
    stopped: dict[str, float] = {}  # member id -> when its process stopped

    def stop(i: int, leave: bool) -> None:
        ray.get(handles[i].stop.remote(leave=leave))
        at = time.monotonic()
        for e in ray.get(handles[i].timeline.remote()):
            stopped.setdefault(e["member_id"], at)
        ray.kill(handles[i])

    wait_whole(handles, parts)
    # Upgrade: each static classic member restarts with the new protocol under its instance id.
    for i in range(n):
        stop(i, leave=False)  # a static classic member just goes away
        handles[i] = new(i)
        # The new process converts the group once the classic group is settled (a rebalance
        # in progress is answered REBALANCE_IN_PROGRESS and retried); until then the classic
        # members can own every partition between them, so wait for the conversion itself.
        eventually(lambda: cluster.describe(group).error_code == 0, timeout_s=90)
        wait_whole(handles, parts)
        assert any(g.group_id == group for g in cluster.list_groups(types=["consumer"]))
    assert cluster.wait_stable(group, members=n).group_state == "stable"
    # Downgrade: each member leaves for a while (a static leave keeps its place) and restarts as
    # a classic consumer under its instance id; the last one converts the group back.
    for i in range(n):
        stop(i, leave=True)
        handles[i] = classic(i, restart=True)
        wait_whole(handles, parts)
    described = cluster.call(m.DescribeGroupsRequest([group])).groups[0]
    assert described.protocol_type == "consumer"
    assert any(g.group_id == group for g in cluster.list_groups(types=["classic"]))
    end = time.monotonic()
    ray.get([h.stop.remote(leave=True) for h in handles])
    events = [e for p in paths for e in _read_timeline(p)]
    assert events, "the consumers wrote no timelines"
    assert check_exclusive_ownership(events, stopped, end) == []
