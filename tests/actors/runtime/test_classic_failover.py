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

    def start_join(self):
        """Send a JoinGroup; returns the ref of its (maybe delayed) reply."""
        if not self.member_id and self.instance_id is None:
            resp = send(self.actor, self.join_request())
            assert resp.error_code == Errors.MEMBER_ID_REQUIRED
            self.member_id = resp.member_id
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
    """A stable classic group of two at generation 1."""
    cluster.create_topic(name, partitions)
    a, b = Raw(cluster, f"{name}-g", name), Raw(cluster, f"{name}-g", name)
    ra, rb = a.start_join(), b.start_join()
    ja, jb = a.joined(ra), b.joined(rb)
    leader = a if ja.leader == a.member_id else b
    follower = b if leader is a else a
    sync_f = follower.sync_ref()
    assignments = [m.SyncGroupRequestAssignment(x.member_id, x.member_id.encode()) for x in (a, b)]
    ray.get(leader.sync_ref(assignments), timeout=60)
    assert ray.get(sync_f, timeout=60).assignment == follower.member_id.encode()
    assert describe(cluster, a.group).group_state == "stable"
    assert ja.generation_id == jb.generation_id == 1
    return leader, follower


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
    assert (after.group_state, after.generation_id) == ("stable", 1)
    assert sorted(mm.member_id for mm in after.members) == sorted(
        [leader.member_id, follower.member_id]
    )
    # The follower that was told to rebalance rejoins with its id and unchanged metadata.
    resp = follower.joined(follower.start_join())
    assert resp.generation_id == 1
    assert describe(cluster, leader.group).group_state == "stable"
    # A member the new coordinator does not know triggers a rebalance.
    stranger = Raw(cluster, leader.group, "fo-2")
    stranger.start_join()  # Ray does not order calls: wait for it to land
    eventually(lambda: describe(cluster, leader.group).group_state == "preparing_rebalance")


def test_point_3_some_joins_arrived_then_the_rebalance_restarts_on_membership_change(cluster):
    leader, follower = stable_pair(cluster, "fo-3")
    newcomer = Raw(cluster, leader.group, "fo-3")
    newcomer.start_join()
    leader.start_join()  # arrived; the follower's never did
    kill_and_wait(cluster, leader.group)
    assert describe(cluster, leader.group).group_state == "stable"
    assert follower.heartbeat() == Errors.NONE  # the old generation is still current
    # The newcomer's id was never persisted: the new coordinator does not know it...
    assert ray.get(newcomer.start_join(), timeout=60).error_code == Errors.UNKNOWN_MEMBER_ID
    # ...so it joins afresh, as a new member: a rebalance for everyone.
    newcomer.member_id = ""
    ref = newcomer.start_join()
    eventually(lambda: leader.heartbeat() == Errors.REBALANCE_IN_PROGRESS)
    refs = [leader.start_join(), follower.start_join()]
    newcomer.joined(ref)
    leader.joined(refs[0])
    follower.joined(refs[1])
    assert leader.generation == follower.generation == newcomer.generation == 2


def test_point_4_a_persisted_generation_answers_stale_heartbeats_with_illegal_generation(
    cluster,
):
    leader, follower = stable_pair(cluster, "fo-4")
    stale = follower.generation
    ra, rb = leader.start_join(), follower.start_join()  # the leader's rejoin: generation 2
    leader.joined(ra)
    follower.joined(rb)
    kill_and_wait(cluster, leader.group)
    follower.generation = stale  # as if its JoinGroup reply had been lost
    assert follower.heartbeat() == Errors.ILLEGAL_GENERATION
    assert describe(cluster, leader.group).generation_id == 2


def test_point_5_members_with_the_reply_carry_on_and_one_without_it_forces_a_rebalance(
    cluster,
):
    leader, follower = stable_pair(cluster, "fo-5")
    ra, rb = leader.start_join(), follower.start_join()
    leader.joined(ra)
    follower.joined(rb)  # both got generation 2, then the coordinator died before SyncGroup
    kill_and_wait(cluster, leader.group)
    assert describe(cluster, leader.group).group_state == "completing_rebalance"
    assert leader.heartbeat() == Errors.NONE  # it has the new generation: fine
    # The follower behaves as if it never got its reply: it sends JoinGroup again.
    follower.start_join()
    eventually(lambda: describe(cluster, leader.group).group_state == "preparing_rebalance")
    assert leader.heartbeat() == Errors.REBALANCE_IN_PROGRESS
