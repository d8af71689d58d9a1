"""Ray share consumers (``cluster.spawn_share_consumer``): two members of one share group
acquire and acknowledge the synthetic stream through the partition actor, their timelines say
what each acquired and had acknowledged, and no acknowledged record is acquired again."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import ray

from actors.tools import admin_groups
from protocol import messages as m
from tests.actors.ray_helpers import eventually

pytestmark = pytest.mark.ray


def _acked_ranges(events: list[dict]) -> list[tuple[str, int, int, int, float]]:
    return [(e["topic"], e["partition"], first, last, e["t"])
            for e in events if e["event"] == "acknowledged"
            for first, last, _ in e["ranges"]]


def test_two_share_consumers_acquire_and_acknowledge_the_stream_and_leave(cluster):
    cluster.create_topic("share-ray", 2)
    group = "share-ray-g"
    consumers = [cluster.spawn_share_consumer(group, topics=["share-ray"]) for _ in range(2)]

    def both_acknowledged():
        timelines = ray.get([c.timeline.remote() for c in consumers])
        return all(_acked_ranges(t) for t in timelines) and timelines

    timelines = eventually(both_acknowledged, timeout_s=90)
    described = cluster.call(m.ShareGroupDescribeRequest(group_ids=[group])).groups[0]
    assert len(described.members) == 2
    # cohort groups --describe: the share-partitions' start offsets, in-flight records and lag
    # (a partition has a start offset once a member fetched it: wait for both)
    def described():
        rows = admin_groups.describe_detail(cluster, group, "offsets").rows
        started = len(rows) == 2 and all(r["start_offset"] is not None for r in rows)
        return started and rows

    rows = eventually(described, timeout_s=60)
    assert [(r["topic"], r["partition"]) for r in rows] == [("share-ray", 0), ("share-ray", 1)]
    assert all(0 <= r["lag"] <= r["log_end_offset"] and r["in_flight"] >= 0 for r in rows), rows
    (state,), _ = admin_groups.describe_state(cluster, group)
    assert state["type"] == "share" and state["members"] == 2
    acked = [r for t in timelines for r in _acked_ranges(t)]
    for t in timelines:
        for e in t:
            if e["event"] != "acquired":
                continue
            for topic, p, first, last, at in acked:
                overlap = (topic == e["topic"] and p == e["partition"]
                           and first <= e["last_offset"] and e["first_offset"] <= last)
                assert not (overlap and e["t"] > at), f"{e} acquired after its acknowledgement"
    ray.get([c.stop.remote(leave=True) for c in consumers])
    eventually(lambda: cluster.call(
        m.ShareGroupDescribeRequest(group_ids=[group])).groups[0].members == [], timeout_s=30)
    rows = admin_groups.describe_detail(cluster, group, "offsets").rows
    assert [r["in_flight"] for r in rows] == [0, 0], "a member that left still holds records"


OWNER_DRIVER = """
import sys, time
import ray
from actors.cluster import Cluster

cluster = Cluster.connect(sys.argv[1])
share = cluster.spawn_share_consumer(sys.argv[2], topics=[sys.argv[3]])
deadline = time.monotonic() + 90
while not ray.get(share.assignment.remote()):
    assert time.monotonic() < deadline, "no assignment"
    time.sleep(0.2)
print("joined", flush=True)
"""
SESSION_TIMEOUT_MS = 60_000


def test_a_share_consumer_leaves_its_group_when_the_driver_that_spawned_it_exits(cluster):
    group, topic = "share-owner-g", "share-owner"
    cluster.create_topic(topic, 1)
    cluster.set_group_config(group, share_session_timeout_ms=SESSION_TIMEOUT_MS)
    done = subprocess.run([sys.executable, "-c", OWNER_DRIVER,
                           ray.get_runtime_context().gcs_address, group, topic],
                          capture_output=True, text=True, timeout=180)
    exited_at = time.monotonic()
    assert done.returncode == 0 and "joined" in done.stdout, done.stderr[-3000:]

    def members():
        return cluster.call(m.ShareGroupDescribeRequest(group_ids=[group])).groups[0].members

    # Ray notices the driver gone in seconds, more with three test lanes at once; still well
    # within the session, so the member left rather than expired.
    eventually(lambda: members() == [], timeout_s=45)
    assert time.monotonic() - exited_at < SESSION_TIMEOUT_MS / 1000  # left; did not expire
