"""Seed 003's five coordinator failure points, through a killed ``OffsetsPartition``.

Each test brings a classic group to one step of a rebalance by speaking JoinGroup / SyncGroup /
Heartbeat to the partition actor directly (delayed replies are Ray object refs that resolve
later), kills the actor, lets Ray restart it from its log, and checks that the group behaves
as the seed says a new coordinator must.
"""

from __future__ import annotations

import time

import pytest
import ray

from protocol import messages as m
from protocol.classic.consumer_protocol import Subscription, encode_subscription
from protocol.errors import COORDINATOR_UNAVAILABLE, Errors
from tests.actors.ray_helpers import eventually
from tests.actors.runtime.test_partition import wait_restarted

pytestmark = pytest.mark.ray

SESSION_MS = 20_000  # long: no member may expire by accident while the actor restarts
REBALANCE_MS = 20_000


class Raw:
    """A classic member speaking straight to its coordinator actor."""

    def __init__(self, cluster, group: str, topic: str, instance_id: str | None = None) -> None:
        self.cluster, self.group, self.topic = cluster, group, topic
        self.instance_id = instance_id
        self.member_id = ""
        self.generation = -1

    @property
    def actor(self):
        return self.cluster.coordinator(self.group)

    def join_request(self) -> m.JoinGroupRequest:
        sub = encode_subscription(Subscription([self.topic]))
        return m.JoinGroupRequest(
            self.group, SESSION_MS, REBALANCE_MS, self.member_id, self.instance_id, "consumer",
            [m.JoinGroupRequestProtocol("range", sub)],
        )

    def take_member_id(self) -> None:
        """KIP-394's first round trip: the coordinator hands out an id (pending until used)."""
        if not self.member_id and self.instance_id is None:
            resp = send(self.actor, self.join_request())
            assert resp.error_code == Errors.MEMBER_ID_REQUIRED
            self.member_id = resp.member_id

    def start_join(self):
        """Send a JoinGroup; returns the ref of its (maybe delayed) reply."""
        self.take_member_id()
        return self.actor.handle.remote(self.join_request())

    def joined(self, ref) -> m.JoinGroupResponse:
        resp = ray.get(ref, timeout=60)
        assert resp.error_code == Errors.NONE, resp
        self.member_id, self.generation = resp.member_id, resp.generation_id
        return resp

    def heartbeat(self) -> Errors:
        req = m.HeartbeatRequest(self.group, self.generation, self.member_id, self.instance_id)
        return Errors(send(self.actor, req).error_code)

    def sync_ref(self, assignments: list | None = None):
        req = m.SyncGroupRequest(self.group, self.generation, self.member_id, self.instance_id,
                                 assignments=assignments or [])
        return self.actor.handle.remote(req)


def send(actor, req):
    """One request, retried while the coordinator restarts or loads."""
    deadline = time.monotonic() + 60
    while True:
        try:
            resp = ray.get(actor.handle.remote(req), timeout=30)
            if resp.error_code not in COORDINATOR_UNAVAILABLE:
                return resp
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            pass
        assert time.monotonic() < deadline, f"no reply to {req}"
        time.sleep(0.1)


def describe(cluster, group: str) -> m.DescribeGroupsResponseGroup:
    return cluster.call(m.DescribeGroupsRequest([group])).groups[0]


def stable_pair(cluster, name: str, partitions: int = 4) -> tuple[Raw, Raw]:
    """A stable classic group of two at generation 2: one member forms generation 1 alone,
    then the second joins and the first rejoins.

    Built one step at a time, each step seen before the next is sent: two JoinGroups sent
    together to an empty group may land more than its initial delay apart on a loaded machine
    (one member would form generation 1 alone), and Ray does not promise that an async actor
    runs two calls in the order they were sent.
    """
    cluster.create_topic(name, partitions)
    a, b = Raw(cluster, f"{name}-g", name), Raw(cluster, f"{name}-g", name)
    a.joined(a.start_join())
    sync(cluster, a, [a])
    rb = b.start_join()  # a new member: generation 2's join phase
    eventually(lambda: describe(cluster, a.group).group_state == "preparing_rebalance")
    ja, jb = a.joined(a.start_join()), b.joined(rb)
    assert ja.generation_id == jb.generation_id == 2
    assert ja.leader == a.member_id  # the leader stays while it is a member
    sync(cluster, a, [a, b])
    return a, b


def sync(cluster, leader: Raw, members: list[Raw]) -> None:
    """The SyncGroup round of a generation: each member gets its own id as assignment."""
    followers = [(x, x.sync_ref()) for x in members if x is not leader]
    assignments = [m.SyncGroupRequestAssignment(x.member_id, x.member_id.encode()) for x in members]
    done = ray.get(leader.sync_ref(assignments), timeout=60)
    assert (done.error_code, done.assignment) == (Errors.NONE, leader.member_id.encode()), done
    for x, ref in followers:
        synced = ray.get(ref, timeout=60)
        assert (synced.error_code, synced.assignment) == (Errors.NONE, x.member_id.encode()), (
            synced
        )
    assert describe(cluster, leader.group).group_state == "stable"


def both_rejoin(cluster, leader: Raw, follower: Raw) -> None:
    """The leader's rejoin starts the next generation's join phase, then the follower joins.

    The follower's JoinGroup is sent only once the phase has begun: a follower rejoining a
    Stable group with unchanged metadata is answered at once with the current generation
    (KIP-800), and Ray does not order two calls to an async actor.
    """
    before = leader.generation
    ra = leader.start_join()
    eventually(lambda: describe(cluster, leader.group).group_state == "preparing_rebalance")
    rb = follower.start_join()
    leader.joined(ra)
    follower.joined(rb)
    assert leader.generation == follower.generation == before + 1


def kill_and_wait(cluster, group: str) -> None:
    p = cluster.partition_for(group)
    old_pid = ray.get(cluster.partition(p).info.remote())["pid"]
    cluster.kill_partition(p)
    wait_restarted(cluster, p, old_pid)


def test_point_1_partitions_added_while_the_coordinator_was_down_trigger_a_rebalance(cluster):
    leader, _ = stable_pair(cluster, "fo-1")
    p = cluster.partition_for(leader.group)
    old_pid = ray.get(cluster.partition(p).info.remote())["pid"]
    cluster.kill_partition(p)
    cluster.add_partitions("fo-1", 6)  # the new coordinator reads it from the controller
    wait_restarted(cluster, p, old_pid)
    deadline = time.monotonic() + 30
    while leader.heartbeat() != Errors.REBALANCE_IN_PROGRESS:
        assert time.monotonic() < deadline, "the new coordinator never asked for a rebalance"
        time.sleep(0.2)
    history = describe(cluster, leader.group).rebalance_history
    assert history[-1].reason == "topic metadata changed (coordinator)"


def test_point_2_an_unpersisted_rebalance_is_forgotten_and_a_known_member_rejoins_quietly(
    cluster,
):
    leader, follower = stable_pair(cluster, "fo-2")
    newcomer = Raw(cluster, leader.group, "fo-2")
    newcomer.start_join()  # starts a rebalance: waits in the join phase
    eventually(lambda: follower.heartbeat() == Errors.REBALANCE_IN_PROGRESS)
    kill_and_wait(cluster, leader.group)
    after = describe(cluster, leader.group)
    assert (after.group_state, after.generation_id) == ("stable", leader.generation)
    assert sorted(mm.member_id for mm in after.members) == sorted(
        [leader.member_id, follower.member_id]
    )
    # The follower that was told to rebalance rejoins with its id and unchanged metadata.
    resp = follower.joined(follower.start_join())
    assert resp.generation_id == leader.generation
    assert describe(cluster, leader.group).group_state == "stable"
    # A member the new coordinator does not know triggers a rebalance.
    stranger = Raw(cluster, leader.group, "fo-2")
    stranger.start_join()  # Ray does not order calls: wait for it to land
    eventually(lambda: describe(cluster, leader.group).group_state == "preparing_rebalance")


def test_point_3_some_joins_arrived_then_the_rebalance_restarts_on_membership_change(cluster):
    leader, follower = stable_pair(cluster, "fo-3")
    newcomer = Raw(cluster, leader.group, "fo-3")
    newcomer.start_join()
    leader.start_join()  # arrived (or lost with the actor); the follower's never did
    eventually(lambda: follower.heartbeat() == Errors.REBALANCE_IN_PROGRESS)
    kill_and_wait(cluster, leader.group)
    assert describe(cluster, leader.group).group_state == "stable"
    assert follower.heartbeat() == Errors.NONE  # the old generation is still current
    # The newcomer's id was never persisted: the new coordinator does not know it...
    assert ray.get(newcomer.start_join(), timeout=60).error_code == Errors.UNKNOWN_MEMBER_ID
    # ...so it joins afresh, as a new member: a rebalance for everyone.
    newcomer.member_id = ""
    before = leader.generation
    ref = newcomer.start_join()
    eventually(lambda: leader.heartbeat() == Errors.REBALANCE_IN_PROGRESS)
    refs = [leader.start_join(), follower.start_join()]
    newcomer.joined(ref)
    leader.joined(refs[0])
    follower.joined(refs[1])
    assert leader.generation == follower.generation == newcomer.generation == before + 1


def test_point_4_a_persisted_generation_answers_stale_heartbeats_with_illegal_generation(
    cluster,
):
    leader, follower = stable_pair(cluster, "fo-4")
    stale = follower.generation
    both_rejoin(cluster, leader, follower)
    kill_and_wait(cluster, leader.group)
    follower.generation = stale  # as if its JoinGroup reply had been lost
    assert follower.heartbeat() == Errors.ILLEGAL_GENERATION
    assert describe(cluster, leader.group).generation_id == stale + 1


def test_point_5_members_with_the_reply_carry_on_and_one_without_it_forces_a_rebalance(
    cluster,
):
    leader, follower = stable_pair(cluster, "fo-5")
    both_rejoin(cluster, leader, follower)  # then the coordinator dies before SyncGroup
    kill_and_wait(cluster, leader.group)
    assert describe(cluster, leader.group).group_state == "completing_rebalance"
    assert leader.heartbeat() == Errors.NONE  # it has the new generation: fine
    # The follower behaves as if it never got its reply: it sends JoinGroup again.
    follower.start_join()
    eventually(lambda: describe(cluster, leader.group).group_state == "preparing_rebalance")
    assert leader.heartbeat() == Errors.REBALANCE_IN_PROGRESS
