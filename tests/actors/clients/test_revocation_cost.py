"""A simulated revocation cost (commit and flush per revoked partition): the consumer actors
pay it before telling the coordinator, without holding up anything else they do."""

import pytest
import ray

from tests.actors.ray_helpers import eventually, owned, wait_whole

pytestmark = pytest.mark.ray

COST_MS = 1_500


def _events(handle, event: str) -> list[dict]:
    return [e for e in ray.get(handle.timeline.remote()) if e["event"] == event]


def test_a_revoked_partition_reaches_its_new_owner_only_after_the_revocation_is_paid(cluster):
    """Two members in one actor: the one revoking pays, the other keeps heartbeating."""
    cluster.create_topic("cost-848", 4)
    group = "cost-848-g"
    host = cluster.spawn_consumers(group, 2, topics=["cost-848"], revocation_cost_ms=COST_MS)
    wait_whole([host], 4)
    cluster.wait_stable(group, members=2)
    newcomer = cluster.spawn_consumer(group, topics=["cost-848"])
    revoked = eventually(lambda: _events(host, "revoked"))[0]
    during = ray.get(host.stats.remote())["heartbeats"]  # the actor answers while it pays
    eventually(lambda: owned([newcomer])[0])
    taken = _events(newcomer, "assigned")[0]
    assert set(map(tuple, taken["partitions"])) <= set(map(tuple, revoked["partitions"]))
    paid_s = COST_MS / 1000 * len(revoked["partitions"])
    assert taken["t"] >= revoked["t"] + paid_s
    # The other member went on heartbeating meanwhile (the revoking one sent only its ack).
    assert ray.get(host.stats.remote())["heartbeats"] - during >= 3
    ray.get([h.stop.remote(leave=True) for h in (host, newcomer)])


def test_an_eager_classic_member_pays_for_everything_it_revokes_before_rejoining(cluster):
    cluster.create_topic("cost-eager", 4)
    group = "cost-eager-g"
    options = {"assignors": ("range",), "heartbeat_interval_ms": 300,
               "rebalance_timeout_ms": 30_000}
    first = cluster.spawn_consumer(group, topics=["cost-eager"], protocol="classic",
                                   revocation_cost_ms=COST_MS // 3, **options)
    wait_whole([first], 4)
    second = cluster.spawn_consumer(group, topics=["cost-eager"], protocol="classic", **options)
    eventually(lambda: [len(a) for a in owned([first, second])] == [2, 2])
    revoked = _events(first, "revoked")[0]
    assert len(revoked["partitions"]) == 4
    taken = _events(second, "assigned")[0]
    assert taken["t"] >= revoked["t"] + COST_MS / 3 / 1000 * 4
    ray.get([h.stop.remote(leave=True) for h in (first, second)])


def test_a_negative_revocation_cost_is_refused_at_the_spawn_call(cluster):
    cluster.create_topic("cost-bad", 1)
    spawned = len(cluster._clients)
    with pytest.raises(ValueError, match="revocation_cost_ms must not be negative"):
        cluster.spawn_consumer("cost-bad-g", topics=["cost-bad"], revocation_cost_ms=-1)
    assert len(cluster._clients) == spawned  # no actor was started
