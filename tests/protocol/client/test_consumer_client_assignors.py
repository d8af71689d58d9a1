"""ConsumerMemberClient running client-side assignors against the real shard (seeds 000, 004):
should_compute_assignment -> PrepareAssignment -> its own PartitionAssignor -> Install."""

from __future__ import annotations

from collections import Counter

import pytest

from assignors.client.sticky import StickyPartitionAssignor
from protocol import messages as m
from protocol.client.consumer import ConsumerMemberClient
from protocol.errors import Errors
from tests.protocol.client.test_consumer_client import (
    ALL,
    GROUP,
    HEARTBEAT_MS,
    SESSION_MS,
    Sim,
    assert_intervals_disjoint,
)


def add(sim: Sim, mid: str, lo: int = 0, hi: int = 0, **kw) -> ConsumerMemberClient:
    return sim.add(mid, client_assignors=[StickyPartitionAssignor(minimum_version=lo,
                                                                  maximum_version=hi)], **kw)


def settle(sim: Sim, limit_ms: int = 5_000) -> None:
    waited = 0
    while True:
        live = list(sim.clients.values())
        used = Counter(tp for c in live for tp in c.assignment)
        g = sim.shard.groups.get(GROUP)
        whole = used and sorted(used) == ALL and max(used.values()) == 1
        if whole and g is not None and g.state == "stable" and all(
            c.state == "stable" for c in live
        ):
            return
        assert waited <= limit_ms, {c.member_id: (c.state, c.assignment) for c in live}
        sim.run(HEARTBEAT_MS)
        waited += HEARTBEAT_MS


def test_the_member_whose_range_covers_everyones_computes_and_everyone_converges():
    sim = Sim()
    add(sim, "a", 1, 5)
    add(sim, "b", 3, 4)
    add(sim, "c", 2, 4)
    settle(sim)
    assert sorted(len(c.assignment) for c in sim.clients.values()) == [2, 2, 2]
    stats = {mid: c.job_stats for mid, c in sim.clients.items()}
    assert stats["a"].installed >= 1
    assert stats["b"].computed == stats["c"].computed == 0
    assert sim.shard.groups[GROUP].assignor(sim.shard.config).name == "sticky"
    assert_intervals_disjoint(sim.clients.values())


def test_the_join_advertises_the_assignors_and_never_a_server_assignor():
    sim = Sim()
    a = add(sim, "a", 1, 3)
    join = a.poll(sim.now)
    (advert,) = join.client_assignors
    assert (advert.name, advert.minimum_version, advert.maximum_version) == ("sticky", 1, 3)
    assert join.server_assignor is None
    with pytest.raises(ValueError, match="cannot be used together"):
        ConsumerMemberClient(GROUP, "x", topics=["foo"], server_assignor="range",
                             client_assignors=[StickyPartitionAssignor()])


def test_compute_prepare_install_runs_in_order_for_the_prepared_epoch():
    sim = Sim()
    a = add(sim, "a")
    sent = sim.exchange(a)
    kinds = [type(r).__name__ for r in sent]
    assert kinds[:3] == ["ConsumerGroupHeartbeatRequest", "ConsumerGroupPrepareAssignmentRequest",
                         "ConsumerGroupInstallAssignmentRequest"]
    install = sent[2]
    assert install.group_epoch == sim.shard.groups[GROUP].assignment_epoch
    assert [mm.member_id for mm in install.members] == ["a"]
    settle(sim)
    assert a.assignment == ALL


def test_a_joiner_takes_a_share_only_after_it_was_released_and_stickily():
    sim = Sim()
    a = add(sim, "a")
    settle(sim)
    add(sim, "b")
    settle(sim)
    b = sim.clients["b"]
    assert len(a.assignment) == len(b.assignment) == 3
    revoked = {tp for e in a.timeline if e["event"] == "revoked" for tp in e["partitions"]}
    assert revoked == set(b.assignment)
    assert_intervals_disjoint([a, b])


def test_when_the_computing_member_dies_another_takes_over():
    sim = Sim()
    add(sim, "a", 0, 2)
    add(sim, "b", 0, 1)
    settle(sim)
    del sim.clients["a"]  # its process dies
    sim.run(SESSION_MS + 500)
    settle(sim)
    assert sim.clients["b"].assignment == ALL
    assert sim.clients["b"].job_stats.installed >= 1


def test_a_member_that_is_not_chosen_is_refused_and_goes_on_heartbeating():
    sim = Sim()
    add(sim, "a", 0, 2)
    b = add(sim, "b", 0, 1)
    settle(sim)
    owned = b.assignment
    b._job.ask()  # as if a stale reply had asked it
    prepare = b.poll(sim.now)
    b.on_response(sim.now, sim.handle(prepare))
    assert b.job == "idle" and "UNKNOWN_MEMBER_ID" in b.job_stats.last_error
    assert b.assignment == owned
    sim.run(HEARTBEAT_MS * 2)
    assert b.state == "stable" and b.assignment == owned


def test_fencing_abandons_the_job():
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"], topic_names={"foo-id": "foo"},
                             client_assignors=[StickyPartitionAssignor()])
    a.poll(0.0)
    a.on_response(0.0, m.ConsumerGroupHeartbeatResponse(
        member_id="a", member_epoch=2, heartbeat_interval_ms=100, should_compute_assignment=True,
        assignment=m.HeartbeatAssignment(assigned_topic_partitions=[m.TopicPartitions("foo-id",
                                                                                      [0])])))
    assert a.job == "asked"
    ack = a.poll(0.0)
    assert isinstance(ack, m.ConsumerGroupHeartbeatRequest), "the acknowledgement goes first"
    a.on_response(0.0, m.ConsumerGroupHeartbeatResponse(error_code=Errors.FENCED_MEMBER_EPOCH))
    assert a.job == "idle" and a.member_epoch == 0 and a.assignment == []
    rejoin = a.poll(0.0)
    assert rejoin.member_epoch == 0 and rejoin.client_assignors is not None
