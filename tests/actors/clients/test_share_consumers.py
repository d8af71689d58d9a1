"""Ray share consumers (``cluster.spawn_share_consumer``): two members of one share group
acquire and acknowledge the synthetic stream through the partition actor, their timelines say
what each acquired and had acknowledged, and no acknowledged record is acquired again."""

from __future__ import annotations

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
    # cohort groups --describe: the share-partitions' start offsets and lag, the group's type
    rows, _ = admin_groups.describe_share_offsets(cluster, group)
    assert [(r["topic"], r["partition"]) for r in rows] == [("share-ray", 0), ("share-ray", 1)]
    assert all(r["start_offset"] is not None and 0 <= r["lag"] <= r["log_end_offset"]
               for r in rows)
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
