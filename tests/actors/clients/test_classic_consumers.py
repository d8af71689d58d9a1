"""Classic (JoinGroup/SyncGroup) consumer actors against the Ray runtime: they converge, every
partition owned exactly once, and no two of them ever own one partition at the same time."""

import time

import pytest
import ray

from actors.clients.classic_consumer import ClassicConsumer
from actors.tools.invariants import check_exclusive_ownership
from protocol import messages as m
from tests.actors.ray_helpers import eventually, owned

pytestmark = pytest.mark.ray

# Short enough for a test's patience; the session is the broker's classic minimum (6 s).
OPTIONS = {
    "session_timeout_ms": 6_000,
    "rebalance_timeout_ms": 10_000,
    "heartbeat_interval_ms": 300,
}


def spawn(cluster, group: str, topics: list[str], **options):
    return ClassicConsumer.options(name=None).remote(
        group, cluster.num_partitions, topics=topics, **{**OPTIONS, **options}
    )


def converged(consumers, topic: str, n: int) -> bool:
    """Every partition owned exactly once, evenly, and every member stable."""
    sets = owned(consumers)
    everything = sorted(tp for s in sets for tp in s)
    sizes = [len(s) for s in sets]
    states = ray.get([c.state.remote() for c in consumers])
    return (
        everything == [(topic, p) for p in range(n)]
        and max(sizes) - min(sizes) <= 1
        and set(states) == {"stable"}
    )


def no_overlap(consumers) -> None:
    events = [e for tl in ray.get([c.timeline.remote() for c in consumers]) for e in tl]
    violations = check_exclusive_ownership(events, {}, time.monotonic())
    assert violations == [], violations


def describe_classic(cluster, group: str) -> m.DescribeGroupsResponseGroup:
    return cluster.call(m.DescribeGroupsRequest(groups=[group])).groups[0]


def stop_all(consumers) -> None:
    ray.get([c.stop.remote(leave=True) for c in consumers])


@pytest.mark.parametrize(
    ("assignors", "group"),
    [(["range"], "classic-eager-g"), (["cooperative-sticky"], "classic-coop-g")],
    ids=["eager", "cooperative"],
)
def test_three_classic_consumers_converge_owning_every_partition_once(cluster, assignors, group):
    topic = f"{group}-t"
    cluster.create_topic(topic, 6)
    consumers = [spawn(cluster, group, [topic], assignors=assignors) for _ in range(3)]
    eventually(lambda: converged(consumers, topic, 6))
    described = describe_classic(cluster, group)
    assert (described.group_state, len(described.members)) == ("stable", 3)
    generations = set(ray.get([c.generation.remote() for c in consumers]))
    assert generations == {described.generation_id}
    no_overlap(consumers)
    stop_all(consumers)
    assert owned(consumers) == [[], [], []]
    eventually(lambda: describe_classic(cluster, group).members == [])


def test_a_cooperative_member_joining_later_takes_its_share_without_a_stop(cluster):
    group, topic = "classic-coop-grow-g", "classic-coop-grow-t"
    cluster.create_topic(topic, 6)
    consumers = [spawn(cluster, group, [topic], assignors=["cooperative-sticky"]) for _ in range(2)]
    eventually(lambda: converged(consumers, topic, 6))
    # (The first two may have joined in one rebalance or in two: count from here.)
    before = [len(t) for t in ray.get([c.timeline.remote() for c in consumers])]
    consumers.append(spawn(cluster, group, [topic], assignors=["cooperative-sticky"]))
    eventually(lambda: converged(consumers, topic, 6))
    first_two = ray.get([c.timeline.remote() for c in consumers[:2]])
    # Each of the first two gave up exactly one partition; nothing was ever lost.
    for timeline, seen in zip(first_two, before, strict=True):
        revoked = [tp for e in timeline[seen:] if e["event"] == "revoked" for tp in e["partitions"]]
        assert len(revoked) == 1 and all(e["event"] != "lost" for e in timeline)
    no_overlap(consumers)
    stop_all(consumers)


def test_new_partitions_reach_classic_consumers_through_their_leader(cluster):
    group, topic = "classic-grow-g", "classic-grow-t"
    cluster.create_topic(topic, 2)
    consumers = [spawn(cluster, group, [topic]) for _ in range(2)]
    eventually(lambda: converged(consumers, topic, 2))
    cluster.add_partitions(topic, 6)
    eventually(lambda: converged(consumers, topic, 6))
    no_overlap(consumers)
    stop_all(consumers)


def test_classic_consumers_recover_after_their_coordinator_is_killed(cluster):
    group, topic = "classic-failover-g", "classic-failover-t"
    cluster.create_topic(topic, 6)
    consumers = [spawn(cluster, group, [topic]) for _ in range(2)]
    eventually(lambda: converged(consumers, topic, 6))
    cluster.kill_partition(cluster.partition_for(group))
    consumers.append(spawn(cluster, group, [topic]))
    eventually(lambda: converged(consumers, topic, 6), timeout_s=90)
    no_overlap(consumers)
    stop_all(consumers)


def test_a_killed_classic_consumers_partitions_move_after_its_session(cluster):
    group, topic = "classic-killed-g", "classic-killed-t"
    cluster.create_topic(topic, 4)
    a, b = (spawn(cluster, group, [topic]) for _ in range(2))
    eventually(lambda: converged([a, b], topic, 4))
    ray.kill(b)
    killed_at = time.monotonic()
    eventually(lambda: converged([a], topic, 4), timeout_s=30)
    moved_at = [e["t"] for e in ray.get(a.timeline.remote()) if e["event"] == "assigned"][-1]
    heartbeat_s = OPTIONS["heartbeat_interval_ms"] / 1000
    # Removed a session after its last heartbeat, at most one interval before the kill.
    assert moved_at >= killed_at + OPTIONS["session_timeout_ms"] / 1000 - heartbeat_s - 0.5
    stop_all([a])


def test_a_static_member_bounced_with_reason_restart_gets_its_partitions_back_at_once(cluster):
    group, topic = "classic-static-g", "classic-static-t"
    cluster.create_topic(topic, 4)
    # Sessions outlast a replacement actor's start on a loaded machine (seconds): the test
    # is about the restart reason, not about a static member expiring while it is away.
    static = {"session_timeout_ms": 30_000}
    a = spawn(cluster, group, [topic], instance_id="static-a", **static)
    b = spawn(cluster, group, [topic], instance_id="static-b", **static)
    eventually(lambda: converged([a, b], topic, 4))
    generation = describe_classic(cluster, group).generation_id
    before = owned([b])[0]
    # a may have had a generation of its own before b joined (b's actor started after the
    # initial delay on a loaded machine): what matters is a's history from here on.
    a_events = len(ray.get(a.timeline.remote()))
    ray.get(b.stop.remote(leave=True))  # static: no LeaveGroup; the group keeps b's place
    assert len(describe_classic(cluster, group).members) == 2
    b2 = spawn(cluster, group, [topic], instance_id="static-b", join_reason="restart", **static)
    eventually(lambda: converged([a, b2], topic, 4))
    assert owned([b2])[0] == before
    assert describe_classic(cluster, group).generation_id == generation, "no rebalance"
    assert ray.get(a.timeline.remote())[a_events:] == [], "a kept its partitions throughout"
    no_overlap([a, b, b2])
    ray.get([c.stop.remote(leave=True, force=True) for c in (a, b2)])
