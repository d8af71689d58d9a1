"""Consumer actors against the Ray runtime: balance, failover, fencing, growth, no overlap."""

import time

import pytest
import ray

from actors.tools.invariants import check_converged, check_exclusive_ownership
from tests.actors.ray_helpers import eventually, owned

pytestmark = pytest.mark.ray


def balanced(consumers, topic: str, n: int) -> bool:
    sets = owned(consumers)
    everything = sorted(tp for s in sets for tp in s)
    sizes = [len(s) for s in sets]
    return everything == [(topic, p) for p in range(n)] and max(sizes) - min(sizes) <= 1


def no_overlap(consumers, ends: dict | None = None) -> None:
    events = [e for tl in ray.get([c.timeline.remote() for c in consumers]) for e in tl]
    violations = check_exclusive_ownership(events, ends or {}, time.monotonic())
    assert violations == [], violations


def stop_all(consumers) -> None:
    ray.get([c.stop.remote(leave=True) for c in consumers])


def test_consumers_converge_to_a_balanced_assignment(cluster):
    cluster.create_topic("cons-basic", 6)
    consumers = [cluster.spawn_consumer("cons-basic-g", topics=["cons-basic"]) for _ in range(3)]
    eventually(lambda: balanced(consumers, "cons-basic", 6))
    cluster.wait_stable("cons-basic-g", members=3)
    no_overlap(consumers)
    stop_all(consumers)
    assert owned(consumers) == [[], [], []]
    assert cluster.describe("cons-basic-g").members == []


def test_consumers_regain_a_balanced_assignment_after_their_coordinator_is_killed(cluster):
    cluster.create_topic("cons-failover", 6)
    group = "cons-failover-g"
    consumers = [cluster.spawn_consumer(group, topics=["cons-failover"]) for _ in range(2)]
    eventually(lambda: balanced(consumers, "cons-failover", 6))
    cluster.kill_partition(cluster.partition_for(group))
    consumers.append(cluster.spawn_consumer(group, topics=["cons-failover"]))
    eventually(lambda: balanced(consumers, "cons-failover", 6))
    cluster.wait_stable(group, members=3)
    no_overlap(consumers)
    stop_all(consumers)


def test_a_killed_consumers_partitions_move_after_its_session_timeout(cluster):
    cluster.create_topic("cons-killed", 4)
    group = "cons-killed-g"
    a, b = (cluster.spawn_consumer(group, topics=["cons-killed"]) for _ in range(2))
    eventually(lambda: balanced([a, b], "cons-killed", 4))
    victim_partitions = set(owned([b])[0])
    ray.kill(b)
    killed_at = time.monotonic()
    eventually(lambda: len(owned([a])[0]) == 4, timeout_s=30)
    moved_at = max(
        e["t"] for e in ray.get(a.timeline.remote())
        if e["event"] == "assigned" and set(map(tuple, e["partitions"])) & victim_partitions
    )
    session_s = cluster.config.group_consumer_session_timeout_ms / 1000
    heartbeat_s = cluster.config.group_consumer_heartbeat_interval_ms / 1000
    # Fenced a session timeout after its last heartbeat, which came at most one interval
    # before the kill; never earlier.
    assert moved_at >= killed_at + session_s - heartbeat_s - 0.5
    stop_all([a])


def test_new_partitions_of_a_subscribed_topic_reach_the_running_consumers(cluster):
    cluster.create_topic("cons-grow", 2)
    group = "cons-grow-g"
    consumers = [cluster.spawn_consumer(group, topics=["cons-grow"]) for _ in range(2)]
    eventually(lambda: balanced(consumers, "cons-grow", 2))
    cluster.add_partitions("cons-grow", 6)
    eventually(lambda: balanced(consumers, "cons-grow", 6))
    no_overlap(consumers)
    stop_all(consumers)


def test_one_actor_hosts_many_members_that_share_the_topic_evenly(cluster):
    cluster.create_topic("cons-many", 60)
    group = "cons-many-g"
    host = cluster.spawn_consumers(group, 30, topics=["cons-many"])
    single = cluster.spawn_consumer(group, topics=["cons-many"])

    def converged() -> bool:
        per_member = dict(ray.get(host.assignments.remote()))
        per_member["single"] = ray.get(single.assignment.remote())
        assignments = {(group, mid): [tuple(tp) for tp in tps] for mid, tps in per_member.items()}
        expected = {group: [("cons-many", p) for p in range(60)]}
        sizes = {len(tps) for tps in per_member.values()}
        return not check_converged(assignments, expected) and sizes <= {1, 2, 3}

    eventually(converged)
    stats = ray.get(host.stats.remote())
    described = cluster.wait_stable(group, members=31)
    assert len(described.members) == 31
    # The 30 members' heartbeats travel together: far fewer Ray calls than requests.
    assert stats["requests"] >= 10 * stats["calls"] > 0
    no_overlap([host, single])
    stop_all([host, single])


def test_a_deleted_topic_is_taken_from_its_consumers(cluster):
    cluster.create_topic("cons-keep", 2)
    cluster.create_topic("cons-doomed", 2)
    group = "cons-delete-g"
    consumers = [
        cluster.spawn_consumer(group, topics=["cons-keep", "cons-doomed"]) for _ in range(2)
    ]
    eventually(lambda: sorted(tp for s in owned(consumers) for tp in s) == [
        ("cons-doomed", 0), ("cons-doomed", 1), ("cons-keep", 0), ("cons-keep", 1)
    ])
    cluster.delete_topic("cons-doomed")
    eventually(lambda: sorted(tp for s in owned(consumers) for tp in s) == [
        ("cons-keep", 0), ("cons-keep", 1)
    ])
    no_overlap(consumers)
    stop_all(consumers)


def test_a_topic_created_later_that_matches_the_regex_reaches_the_consumers(cluster):
    group = "cons-regex-g"
    consumers = [
        cluster.spawn_consumer(group, topic_regex="cons-rx-.*") for _ in range(2)
    ]
    cluster.create_topic("cons-rx-a", 2)
    cluster.create_topic("cons-other", 2)
    eventually(lambda: sorted(tp for s in owned(consumers) for tp in s) == [
        ("cons-rx-a", 0), ("cons-rx-a", 1)
    ])
    cluster.create_topic("cons-rx-b", 2)
    eventually(lambda: sorted(tp for s in owned(consumers) for tp in s) == [
        ("cons-rx-a", 0), ("cons-rx-a", 1), ("cons-rx-b", 0), ("cons-rx-b", 1)
    ])
    no_overlap(consumers)
    stop_all(consumers)
