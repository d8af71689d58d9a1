"""Wake-ups: the coordinator tells a consumer actor at once that a member's target changed,
so a stable member hears of a step elsewhere without waiting for its next heartbeat, and
that partitions a joining member waits for were released; a stable group is never woken."""

import pytest
import ray

from tests.actors.ray_helpers import eventually, owned, wait_whole

pytestmark = pytest.mark.ray

INTERVAL_MS = 5_000  # long, so that a survivor's own next heartbeat is far away


def _stats(handle) -> dict:
    return ray.get(handle.stats.remote())


def test_a_member_that_stays_is_woken_when_another_leaves_and_takes_its_partitions(cluster):
    cluster.create_topic("wake-848", 4)
    group = "wake-848-g"
    cluster.set_group_config(group, consumer_session_timeout_ms=20_000,
                             consumer_heartbeat_interval_ms=INTERVAL_MS)
    stays, leaves = (cluster.spawn_consumer(group, topics=["wake-848"]) for _ in range(2))
    wait_whole([stays, leaves], 4)
    cluster.wait_stable(group, members=2)
    quiet = _stats(stays)["wake_ups"]
    ray.get(leaves.stop.remote(leave=True))
    eventually(lambda: len(owned([stays])[0]) == 4)
    assert _stats(stays)["wake_ups"] > quiet  # it was told, not left to its own schedule
    ray.get(stays.stop.remote(leave=True))


def test_a_joining_member_is_woken_when_the_partitions_it_waits_for_are_released(cluster):
    cluster.create_topic("wake-join", 4)
    group = "wake-join-g"
    cluster.set_group_config(group, consumer_session_timeout_ms=20_000,
                             consumer_heartbeat_interval_ms=INTERVAL_MS)
    # The holder pays for its revocations, so the joiner waits (and polls) well before the
    # release; only the release, not a target change, can wake it. The joiner polls every
    # 300 ms (the session's reconciliation interval) from its join, and the holder acks its
    # two revocations 2 x 375 = 750 ms after it: half a poll from either neighbour, so the
    # ack does not share a turn with a poll that would take the partitions unwoken (a cost
    # of 300 put the ack on the joiner's second poll, and under load it lost the race).
    holder = cluster.spawn_consumer(group, topics=["wake-join"], revocation_cost_ms=375)
    wait_whole([holder], 4)
    cluster.wait_stable(group, members=1)
    joiner = cluster.spawn_consumer(group, topics=["wake-join"])
    eventually(lambda: len(owned([joiner])[0]) == 2)
    assert _stats(joiner)["wake_ups"] >= 1  # told of the release, not left to its schedule
    for handle in (joiner, holder):
        ray.get(handle.stop.remote(leave=True))


def test_a_consumer_without_wake_ups_is_never_woken_and_still_converges(cluster):
    cluster.create_topic("wake-off", 2)
    group = "wake-off-g"
    first = cluster.spawn_consumer(group, topics=["wake-off"], wake_ups=False)
    second = cluster.spawn_consumer(group, topics=["wake-off"], wake_ups=False)
    wait_whole([first, second], 2)
    cluster.wait_stable(group, members=2)
    ray.get(second.stop.remote(leave=True))
    eventually(lambda: len(owned([first])[0]) == 2)
    assert _stats(first)["wake_ups"] == 0
    ray.get(first.stop.remote(leave=True))
