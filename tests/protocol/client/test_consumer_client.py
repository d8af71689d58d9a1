"""ConsumerMemberClient against a real, in-process coordinator shard and a simulated clock.

The clock counts whole milliseconds (the shard's unit); clients get it as seconds. Before the
shard handles a request it is ticked to the current time, as the runtime does, so its session
timers count from when a request arrives.
"""

from __future__ import annotations

import itertools
import math
import sys
from collections import Counter

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from protocol import messages as m
from protocol import partitions as pm
from protocol.client.consumer import ConsumerMemberClient
from protocol.config import CoordinatorConfig
from protocol.consumer.member import MemberState
from protocol.errors import Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard

GROUP = "g"
SESSION_MS = 3_000
HEARTBEAT_MS = 200
CONFIG = CoordinatorConfig(
    group_consumer_session_timeout_ms=SESSION_MS,
    group_consumer_min_session_timeout_ms=1_000,
    group_consumer_heartbeat_interval_ms=HEARTBEAT_MS,
    group_consumer_min_heartbeat_interval_ms=100,
    group_consumer_assignment_interval_ms=0,  # each join assigned in its own turn
)
NAMES = {"foo-id": "foo"}
ALL = [("foo", p) for p in range(6)]
MAX_EXCHANGES_PER_INSTANT = 10  # join, acks of revocation and of assignment: a handful at most
EPSILON_S = 1e-9  # times are ms / 1000 and sums of floats


class Sim:
    """A coordinator shard, a clock and clients whose requests are answered at once."""

    def __init__(self) -> None:
        image = MetadataImage([TopicMetadata("foo-id", "foo", 6)])
        self.shard = GroupCoordinatorShard(CONFIG, image)
        self.now_ms = 0
        self.clients: dict[str, ConsumerMemberClient] = {}

    @property
    def now(self) -> float:
        return self.now_ms / 1000

    def add(self, member_id: str, **kwargs) -> ConsumerMemberClient:
        kwargs = {
            "topics": ["foo"],
            "session_timeout_ms": SESSION_MS,
            "topic_names": NAMES,
            **kwargs,
        }
        client = self.clients[member_id] = ConsumerMemberClient(GROUP, member_id, **kwargs)
        return client

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        self.shard.tick(self.now_ms)

    def advance_to(self, t: float) -> None:
        """Move the clock to the first whole millisecond at or after ``t`` seconds."""
        self.advance(max(0, math.ceil(t * 1000) - self.now_ms))

    def handle(self, req: m.ConsumerGroupHeartbeatRequest) -> m.ConsumerGroupHeartbeatResponse:
        self.shard.tick(self.now_ms)
        return self.shard.handle(req).response

    def exchange(self, client: ConsumerMemberClient) -> list[m.ConsumerGroupHeartbeatRequest]:
        """Everything the client has to send now, each answered at once."""
        sent = []
        for _ in range(MAX_EXCHANGES_PER_INSTANT):
            req = client.poll(self.now)
            if req is None:
                return sent
            sent.append(req)
            client.on_response(self.now, self.handle(req))
        raise AssertionError(f"{client.member_id} kept sending at {self.now}")

    def run(self, ms: int, only: list[str] | None = None, step_ms: int = 50) -> None:
        """Let time pass; the chosen clients (all by default) heartbeat as they are due."""
        end = self.now_ms + ms
        while True:
            for mid in only if only is not None else list(self.clients):
                self.exchange(self.clients[mid])
                assert_exclusive(self.clients.values(), self.now)
            if self.now_ms >= end:
                return
            self.advance(min(step_ms, end - self.now_ms))

    def member(self, member_id: str):
        return self.shard.groups[GROUP].members.get(member_id)

    def coordinator_assignment(self, member_id: str) -> list[tuple[str, int]]:
        member = self.member(member_id)
        return sorted((NAMES[t], p) for t, p in pm.pairs(member.assigned_partitions))


def lapsed(client: ConsumerMemberClient, now: float) -> bool:
    """Past its ownership deadline: the coordinator may have fenced it (the shard counts whole
    ms, the client float seconds: a deadline of 4.3100000000000005 is the shard's 4310)."""
    deadline = client.ownership_deadline
    return deadline is not None and now >= deadline - EPSILON_S


def assert_exclusive(clients, now: float) -> None:
    """No partition is owned by two clients now (one past its ownership deadline owns none)."""
    seen: dict[tuple[str, int], str] = {}
    for c in clients:
        if lapsed(c, now):
            continue  # lapsed: the coordinator may have fenced it; its next call records it
        for tp in c.assignment:
            assert tp not in seen, f"{tp} owned by {seen[tp]} and {c.member_id} at {now}"
            seen[tp] = c.member_id


def ownership_intervals(clients) -> dict[tuple[str, int], list[tuple[float, float, str]]]:
    """(start, end, member) per partition, from the timelines; still owned means end = inf."""
    out: dict[tuple[str, int], list[tuple[float, float, str]]] = {}
    for c in clients:
        start: dict[tuple[str, int], float] = {}
        for e in c.timeline:
            for tp in e["partitions"]:
                if e["event"] == "assigned":
                    assert tp not in start, f"{c.member_id} assigned {tp} twice"
                    start[tp] = e["t"]
                else:
                    out.setdefault(tp, []).append((start.pop(tp), e["t"], c.member_id))
        for tp, t in start.items():
            out.setdefault(tp, []).append((t, math.inf, c.member_id))
    return out


def assert_intervals_disjoint(clients) -> None:
    for tp, spans in ownership_intervals(clients).items():
        spans.sort()
        for (_, end, a), (start, _, b) in itertools.pairwise(spans):
            assert start >= end - EPSILON_S, f"{tp}: {a} owned it until {end}, {b} from {start}"


def reply(
    epoch: int,
    assigned: list[int] | None = None,
    pending: tuple[int, ...] = (),
    error: Errors = Errors.NONE,
) -> m.ConsumerGroupHeartbeatResponse:
    """A hand-made coordinator reply (for errors the shard does not produce on demand)."""
    assignment = None
    if assigned is not None:
        assignment = m.HeartbeatAssignment(
            assigned_topic_partitions=pm.to_wire(pm.normalize({"foo-id": assigned})),
            pending_topic_partitions=pm.to_wire(pm.normalize({"foo-id": pending})),
        )
    if error != Errors.NONE:
        return m.ConsumerGroupHeartbeatResponse(error_code=error)
    return m.ConsumerGroupHeartbeatResponse(
        member_id="a", member_epoch=epoch, heartbeat_interval_ms=HEARTBEAT_MS, assignment=assignment
    )


def joined_alone() -> tuple[Sim, ConsumerMemberClient]:
    sim = Sim()
    a = sim.add("a")
    sim.run(0)
    assert a.assignment == ALL
    return sim, a


# ---------------------------------------------------------------------------- joining


def test_three_members_converge_to_two_partitions_each_matching_the_coordinator():
    sim = Sim()
    for mid in "abc":
        sim.add(mid)
    rounds = 0
    while not all(c.state == "stable" and len(c.assignment) == 2 for c in sim.clients.values()):
        rounds += 1
        assert rounds <= 10, {mid: c.assignment for mid, c in sim.clients.items()}
        sim.run(HEARTBEAT_MS)
    assert sorted(tp for c in sim.clients.values() for tp in c.assignment) == ALL
    for mid, c in sim.clients.items():
        assert c.assignment == sim.coordinator_assignment(mid)
        assert c.member_epoch == sim.member(mid).member_epoch
        assert sim.member(mid).state is MemberState.STABLE
    assert sim.shard.groups[GROUP].state == "stable"
    assert_intervals_disjoint(sim.clients.values())


def test_join_restates_the_subscription_and_later_heartbeats_only_acknowledge():
    sim = Sim()
    a = sim.add("a", rack_id="r1", server_assignor="range", rebalance_timeout_ms=30_000)
    join, ack = sim.exchange(a)
    assert (join.member_id, join.member_epoch, join.topic_partitions) == ("a", 0, [])
    assert join.subscribed_topic_names == ["foo"] and join.subscribed_topic_regex is None
    assert (join.rack_id, join.server_assignor, join.rebalance_timeout_ms) == (
        "r1",
        "range",
        30_000,
    )
    # The join's reply assigned everything; the immediate ack says what the member owns now.
    assert ack.member_epoch == a.member_epoch > 0
    assert pm.from_wire(ack.topic_partitions) == {"foo-id": (0, 1, 2, 3, 4, 5)}
    assert (ack.subscribed_topic_names, ack.rack_id, ack.rebalance_timeout_ms) == (None, None, -1)
    assert a.timeline[0] == {
        "t": 0.0,
        "event": "assigned",
        "partitions": ALL,
        "epoch": a.member_epoch,
        "member_id": "a",
    }


def test_regex_subscription_is_sent_on_join_and_gets_the_matching_topics():
    sim = Sim()
    a = sim.add("a", topics=None, topic_regex="fo.*")
    join = sim.exchange(a)[0]
    assert (join.subscribed_topic_regex, join.subscribed_topic_names) == ("fo.*", None)
    assert a.assignment == ALL


def test_heartbeats_follow_the_interval_the_coordinator_gives():
    sim, a = joined_alone()
    assert a.heartbeat_interval_ms == HEARTBEAT_MS
    assert a.next_due() == pytest.approx(sim.now + HEARTBEAT_MS / 1000)
    assert a.poll(sim.now + 0.199) is None
    assert a.poll(sim.now + 0.2) is not None
    assert a.poll(sim.now + 0.2) is None, "one request in flight at a time"
    assert a.next_due() == a.ownership_deadline


def test_coordinator_chosen_member_id_is_adopted():
    sim = Sim()
    a = sim.add("")
    sim.exchange(a)
    assert a.member_id and a.member_id in sim.shard.groups[GROUP].members
    assert a.timeline[-1]["member_id"] == a.member_id


# ------------------------------------------------------------------------ reconciliation


def test_partitions_move_only_after_the_old_owner_revoked_them():
    sim, a = joined_alone()
    sim.advance(100)
    sim.add("b")
    sim.run(2 * HEARTBEAT_MS)
    b = sim.clients["b"]
    assert len(a.assignment) == len(b.assignment) == 3
    revoked = {tp: e["t"] for e in a.timeline if e["event"] == "revoked" for tp in e["partitions"]}
    assigned = {
        tp: e["t"] for e in b.timeline if e["event"] == "assigned" for tp in e["partitions"]
    }
    assert set(revoked) == set(assigned) == set(b.assignment)
    assert all(assigned[tp] >= revoked[tp] for tp in assigned)
    assert_intervals_disjoint([a, b])


def test_revocation_callback_runs_before_the_acknowledgement_is_sent():
    calls = []
    sim = Sim()
    a = sim.add("a", on_revoke=lambda ps: calls.append(("revoke", ps)))
    sim.run(0)
    sim.add("b", on_assign=lambda ps: calls.append(("assign", ps)))
    sim.exchange(sim.clients["b"])  # b joins; the target gives it half of a's partitions
    sim.advance(HEARTBEAT_MS)
    reqs = sim.exchange(a)
    assert calls[0][0] == "revoke" and len(calls[0][1]) == 3
    assert set(pm.pairs(pm.from_wire(reqs[-1].topic_partitions))).isdisjoint(
        {("foo-id", p) for _, p in calls[0][1]}
    )
    sim.run(2 * HEARTBEAT_MS)
    assert calls[1] == ("assign", calls[0][1])


def test_pending_partitions_are_shown_but_not_owned():
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"], topic_names=NAMES)
    a.poll(0.0)
    a.on_response(0.0, reply(1, assigned=[0, 1], pending=(2,)))
    assert a.assignment == [("foo", 0), ("foo", 1)]
    assert a.pending == [("foo", 2)]
    assert a.state == "reconciling"


# -------------------------------------------------------------------- sessions & fencing


def test_member_silent_past_its_session_gives_up_its_partitions_at_the_deadline():
    sim = Sim()
    a, b = sim.add("a"), sim.add("b")
    sim.run(1_000)
    deadline = a.ownership_deadline  # a's last answered heartbeat + the session timeout
    assert sim.now < deadline <= sim.now + SESSION_MS / 1000
    sim.run(5_000, only=["b"])  # a's process stalls; the coordinator fences it
    assert "a" not in sim.shard.groups[GROUP].members
    assert b.assignment == ALL
    assert a.assignment != []  # a has not noticed yet: it has not been called
    req = a.poll(sim.now)
    lost = a.timeline[-1]
    assert lost["event"] == "lost"
    assert lost["t"] == deadline < sim.now
    assert (req.member_id, req.member_epoch, req.topic_partitions) == ("a", 0, [])
    assert req.subscribed_topic_names == ["foo"]
    a.on_response(sim.now, sim.handle(req))
    sim.run(1_000)
    assert len(a.assignment) == len(b.assignment) == 3
    assert_intervals_disjoint([a, b])


def test_member_whose_reply_never_comes_records_lost_at_the_deadline():
    sim = Sim()
    a, b = sim.add("a"), sim.add("b")
    sim.run(1_000)
    sim.advance(HEARTBEAT_MS)
    stuck = a.poll(sim.now)  # sent, but the reply never arrives
    deadline = a.ownership_deadline
    assert a.next_due() == deadline < sim.now + SESSION_MS / 1000
    sim.run(5_000, only=["b"])
    assert b.assignment == ALL
    assert a.poll(sim.now) is None  # still in flight, but the partitions are gone
    assert a.timeline[-1]["event"] == "lost" and a.timeline[-1]["t"] == deadline
    assert a.assignment == [] and a.member_epoch == 0 and a.next_due() is None
    a.on_response(sim.now, sim.handle(stuck))  # the late reply (UNKNOWN_MEMBER_ID) is moot
    assert a.poll(sim.now).member_epoch == 0
    assert_intervals_disjoint([a, b])


def test_member_cut_off_from_the_coordinator_retries_then_loses_at_the_deadline():
    sim = Sim()
    a, b = sim.add("a"), sim.add("b")
    sim.run(1_000)
    deadline = a.ownership_deadline
    while sim.now_ms < 1_000 + SESSION_MS + 500:
        if a.poll(sim.now) is not None:
            a.on_failure(sim.now)
        sim.run(50, only=["b"])
    assert [e["event"] for e in a.timeline][-1] == "lost"
    assert a.timeline[-1]["t"] == deadline
    assert_intervals_disjoint([a, b])


def test_late_reply_does_not_stretch_the_session_past_the_send_time():
    sim = Sim()
    a, b = sim.add("a"), sim.add("b")
    sim.run(1_000)
    sim.advance_to(a.next_due())
    sent = sim.now
    reply_to_a = sim.handle(a.poll(sim.now))  # answered at once, but a reads it 2.5 s later
    sim.run(2_500, only=["b"])
    a.on_response(sim.now, reply_to_a)
    assert a.ownership_deadline == pytest.approx(sent + SESSION_MS / 1000)
    sim.run(1_000, only=["b"])  # a stalls again; the coordinator last heard of it at `sent`
    assert b.assignment == ALL
    a.poll(sim.now)
    assert a.timeline[-1]["event"] == "lost"
    assert a.timeline[-1]["t"] == pytest.approx(sent + SESSION_MS / 1000)
    assert_intervals_disjoint([a, b])


def test_join_reply_read_after_the_session_could_have_ended_is_not_trusted():
    """Found by the chaos test: a stalled joiner took partitions already given to others."""
    sim = Sim()
    a = sim.add("a")
    reply_to_a = sim.handle(a.poll(sim.now))  # a joins and gets everything; it reads it late
    sim.advance(SESSION_MS + 1_000)  # the coordinator fences a meanwhile
    b = sim.add("b")
    sim.run(0, only=["b"])
    assert b.assignment == ALL
    a.on_response(sim.now, reply_to_a)
    assert a.assignment == [] and a.member_epoch == 0
    sim.run(1_000)
    assert len(a.assignment) == len(b.assignment) == 3
    assert_intervals_disjoint([a, b])


def test_unacknowledged_revocation_counts_as_lost_after_the_rebalance_timeout():
    sim = Sim()
    a = sim.add("a", rebalance_timeout_ms=1_000)  # shorter than the 3 s session
    sim.run(0)
    sim.advance(100)
    b = sim.add("b")
    sim.exchange(b)  # the target now takes three partitions from a
    sim.advance_to(a.next_due())
    sent = sim.now
    sim.handle(a.poll(sim.now))  # the coordinator starts waiting for a's revocation...
    a.on_failure(sim.now)  # ...but a never hears of it, and cannot get through again
    while sim.now_ms < 2_000:
        if a.poll(sim.now) is not None:
            a.on_failure(sim.now)
        sim.run(50, only=["b"])
    assert "a" not in sim.shard.groups[GROUP].members  # fenced well before its session ended
    assert b.assignment == ALL
    assert a.timeline[-1]["event"] == "lost"
    assert a.timeline[-1]["t"] == pytest.approx(sent + 1.0)
    assert_intervals_disjoint([a, b])


def test_member_fenced_by_the_coordinator_loses_its_partitions_and_rejoins():
    calls = []
    sim = Sim()
    # The client believes in a longer session than the coordinator keeps: it gets fenced.
    a = sim.add(
        "a",
        session_timeout_ms=60_000,
        on_revoke=lambda ps: calls.append(("revoke", ps)),
        on_lost=lambda ps: calls.append(("lost", ps)),
    )
    sim.run(0)
    epoch = a.member_epoch
    sim.advance(SESSION_MS + 1)
    assert "a" not in sim.shard.groups[GROUP].members
    sent = sim.now
    req = a.poll(sim.now)
    a.on_response(sim.now, sim.handle(req))
    assert calls == [("lost", ALL)]
    assert a.timeline[-1] == {
        "t": sent,
        "event": "lost",
        "partitions": ALL,
        "epoch": epoch,
        "member_id": "a",
    }
    assert a.assignment == [] and a.member_epoch == 0
    rejoin = a.poll(sim.now)
    assert (rejoin.member_id, rejoin.member_epoch, rejoin.subscribed_topic_names) == (
        "a",
        0,
        ["foo"],
    )
    a.on_response(sim.now, sim.handle(rejoin))
    sim.run(0)
    assert a.assignment == ALL and a.member_epoch > 0


@pytest.mark.parametrize("error", [Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID])
def test_fencing_reply_drops_everything_and_rejoins_with_the_same_id(error):
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"], topic_names=NAMES)
    a.poll(0.0)
    a.on_response(0.0, reply(3, [0, 1]))
    a.poll(0.0)
    a.on_response(0.0, reply(3))
    a.poll(1.0)
    a.on_response(1.5, reply(0, error=error))
    assert a.timeline[-1]["event"] == "lost" and a.timeline[-1]["t"] == 1.0
    assert a.state == "joining" and a.error is None
    rejoin = a.poll(1.5)
    assert (rejoin.member_id, rejoin.member_epoch, rejoin.topic_partitions) == ("a", 0, [])


def test_member_whose_group_became_classic_while_away_rejoins_instead_of_failing():
    # The last new-protocol member left a mixed group, which became classic; a heartbeat
    # that is not a join is answered GROUP_ID_NOT_FOUND (Kafka's answer). The member is out.
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"], topic_names=NAMES)
    a.poll(0.0)
    a.on_response(0.0, reply(3, [0, 1]))
    a.poll(0.0)
    a.on_response(0.0, reply(3))
    a.poll(1.0)
    a.on_response(1.5, reply(0, error=Errors.GROUP_ID_NOT_FOUND))
    assert a.timeline[-1]["event"] == "lost"
    assert a.state == "joining" and a.error is None
    assert a.poll(1.5).member_epoch == 0


def test_join_refused_with_group_id_not_found_is_a_failure():
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"], topic_names=NAMES)
    a.poll(0.0)
    a.on_response(0.0, reply(0, error=Errors.GROUP_ID_NOT_FOUND))
    assert a.state == "failed" and a.error == Errors.GROUP_ID_NOT_FOUND


# ---------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "error",
    [
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_COORDINATOR,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.UNKNOWN_SERVER_ERROR,
        Errors.UNRELEASED_INSTANCE_ID,
    ],
)
def test_retriable_errors_back_off_exponentially_and_keep_the_assignment(error):
    sim, a = joined_alone()
    epoch = a.member_epoch
    t = sim.now
    delays = []
    for _ in range(5):
        t = a.next_due()
        assert a.poll(t - 0.001) is None
        assert a.poll(t) is not None
        a.on_response(t, reply(0, error=error))
        delays.append(round(a.next_due() - t, 6))
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.0]
    assert (a.assignment, a.member_epoch, a.state, a.error) == (ALL, epoch, "stable", None)
    # The retry restates everything, and success resets the backoff.
    sim.advance_to(a.next_due())
    req = a.poll(sim.now)
    assert req.subscribed_topic_names == ["foo"] and req.rebalance_timeout_ms == 60_000
    a.on_response(sim.now, sim.handle(req))
    assert a.next_due() == pytest.approx(sim.now + HEARTBEAT_MS / 1000)


def test_backoff_never_waits_past_the_ownership_deadline():
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"], session_timeout_ms=1_000)
    a.poll(0.0)
    a.on_response(0.0, reply(1, [0]))
    a.poll(0.0)
    a.on_response(0.0, reply(1))  # last answered heartbeat: sent at 0.0
    for _ in range(4):
        t = a.next_due()
        a.poll(t)
        a.on_failure(t)
    assert a.next_due() == a.ownership_deadline == 1.0  # backoff alone would say 1.7
    rejoin = a.poll(1.0)
    assert rejoin.member_epoch == 0 and a.timeline[-1]["event"] == "lost"
    assert a.timeline[-1]["t"] == 1.0


def test_lost_reply_is_retried_with_a_full_heartbeat_that_recovers_the_assignment():
    sim, a = joined_alone()
    b = sim.add("b")
    sim.exchange(b)  # the target now takes three partitions from a
    sim.advance(HEARTBEAT_MS)
    req = a.poll(sim.now)
    sim.handle(req)  # the coordinator asks a to revoke; the reply is lost
    a.on_failure(sim.now)
    assert a.assignment == ALL and a.state == "stable"
    sim.advance_to(a.next_due())
    retry = a.poll(sim.now)
    assert retry.subscribed_topic_names == ["foo"] and retry.rebalance_timeout_ms == 60_000
    a.on_response(sim.now, sim.handle(retry))
    assert len(a.assignment) == 3 and a.timeline[-1]["event"] == "revoked"
    sim.run(2 * HEARTBEAT_MS)
    assert len(b.assignment) == 3
    assert_intervals_disjoint([a, b])


@pytest.mark.parametrize(
    "error",
    [Errors.INVALID_REQUEST, Errors.GROUP_AUTHORIZATION_FAILED, Errors.FENCED_INSTANCE_ID],
)
def test_fatal_error_fails_the_member_and_stops_its_requests(error):
    lost = []
    a = ConsumerMemberClient(
        GROUP, "a", topics=["foo"], topic_names=NAMES, on_lost=lambda ps: lost.append(ps)
    )
    a.poll(0.0)
    a.on_response(0.0, reply(1, [0, 1]))
    a.poll(0.0)
    a.on_response(0.0, reply(1))
    a.poll(0.2)
    a.on_response(0.3, reply(0, error=error))
    assert (a.state, a.error, a.assignment) == ("failed", error, [])
    assert lost == [[("foo", 0), ("foo", 1)]] and a.timeline[-1]["event"] == "lost"
    assert a.poll(10.0) is None and a.next_due() is None


def test_unsupported_server_assignor_fails_the_join():
    sim = Sim()
    a = sim.add("a", server_assignor="no-such-assignor")
    sim.run(1_000)
    assert (a.state, a.error) == ("failed", Errors.UNSUPPORTED_ASSIGNOR)
    assert a.timeline == [] and GROUP not in sim.shard.groups


# ---------------------------------------------------------------------------- leaving


@pytest.mark.parametrize(("instance_id", "epoch"), [(None, -1), ("i-1", -2)])
def test_leave_revokes_everything_sends_the_leave_epoch_and_stops(instance_id, epoch):
    revoked = []
    sim = Sim()
    a = sim.add("a", instance_id=instance_id, on_revoke=revoked.append)
    b = sim.add("b")
    sim.run(1_000)
    owned = a.assignment
    a.leave()
    assert a.state == "leaving"
    req = a.poll(sim.now)
    assert (req.member_id, req.member_epoch, req.instance_id) == ("a", epoch, instance_id)
    assert revoked[-1] == owned and a.assignment == []
    assert a.timeline[-1]["event"] == "revoked" and a.timeline[-1]["t"] == sim.now
    a.on_response(sim.now, sim.handle(req))
    assert a.state == "stopped" and a.poll(sim.now + 100) is None and a.next_due() is None
    if instance_id is None:
        assert "a" not in sim.shard.groups[GROUP].members
        sim.run(1_000)
        assert b.assignment == ALL
    else:  # a temporary leave: the static member keeps its place and its partitions
        assert sim.member("a").member_epoch == -2
        assert sim.coordinator_assignment("a") == owned
    assert_intervals_disjoint([a, b])


def test_leave_before_joining_sends_nothing():
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"])
    a.leave()
    assert a.state == "stopped" and a.poll(0.0) is None


def test_leave_while_a_heartbeat_is_in_flight_waits_for_its_reply():
    sim, a = joined_alone()
    sim.advance(HEARTBEAT_MS)
    req = a.poll(sim.now)
    a.leave()
    assert a.poll(sim.now) is None
    a.on_response(sim.now, sim.handle(req))
    leave = a.poll(sim.now)
    assert leave.member_epoch == -1 and a.assignment == []
    a.on_failure(sim.now)  # even unanswered, the member is done
    assert a.state == "stopped"


# -------------------------------------------------------------------------- bookkeeping


def test_topic_ids_show_until_the_caller_names_them():
    names: dict[str, str] = {}
    sim = Sim()
    a = sim.add("a", topic_names=names)
    sim.run(0)
    assert a.assignment == [("foo-id", p) for p in range(6)]
    assert a.partitions_unresolved == ["foo-id"]
    names["foo-id"] = "foo"
    assert a.assignment == ALL and a.partitions_unresolved == []


def test_timeline_keeps_only_the_newest_events():
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"], timeline_max_events=3)
    for i in range(5):
        a.poll(float(i))
        a.on_response(float(i), reply(i + 1, [i]))
    events = a.timeline
    assert len(events) == 3
    assert [e["epoch"] for e in events] == [4, 5, 5]
    assert [e["event"] for e in events] == ["assigned", "revoked", "assigned"]


def test_member_epoch_going_down_is_refused():
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"])
    a.poll(0.0)
    a.on_response(0.0, reply(5, [0]))
    a.poll(0.0)
    with pytest.raises(AssertionError):
        a.on_response(0.0, reply(4))


def test_reply_without_a_request_is_a_caller_bug():
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"])
    with pytest.raises(RuntimeError):
        a.on_response(0.0, reply(1))


# ---------------------------------------------------------------------------- chaos

CLIENTS = 4
MAX_CLIENTS = 7
STATIC = "static-1"  # m1's instance id; a leave of it is temporary (epoch -2)


class Chaos(RuleBasedStateMachine):
    """Random interleavings of sends, deliveries, lost and late replies, time and leaves.

    A request sits in the network until the shard handles it or it is dropped. A *successful*
    reply may then be lost, or held back and handed to the client later (a stalled process
    reading it late); an error reply comes back at once (a lost fencing reply makes a zombie
    in any protocol). Half the clients use a rebalance timeout shorter than the session, so
    both of the coordinator's timers can fence.
    """

    def __init__(self) -> None:
        super().__init__()
        self.sim = Sim()
        self.requests: dict[str, m.ConsumerGroupHeartbeatRequest] = {}
        self.replies: dict[str, m.ConsumerGroupHeartbeatResponse] = {}
        self.epochs: dict[str, int] = {}
        for i in range(CLIENTS):
            self._spawn(f"m{i}", instance_id=STATIC if i == 1 else None)

    def _spawn(self, mid: str, instance_id: str | None = None) -> None:
        rebalance_ms = 2_000 if len(self.sim.clients) % 2 else 60_000
        self.sim.add(mid, rebalance_timeout_ms=rebalance_ms, instance_id=instance_id)

    def _client(self, i: int) -> ConsumerMemberClient:
        return list(self.sim.clients.values())[i % len(self.sim.clients)]

    @rule(i=st.integers(0, MAX_CLIENTS - 1))
    def send(self, i: int) -> None:
        c = self._client(i)
        req = c.poll(self.sim.now)
        if req is not None:
            self.requests[c.member_id] = req

    @rule(i=st.integers(0, MAX_CLIENTS - 1), fate=st.sampled_from(["answer", "lose", "hold"]))
    def deliver(self, i: int, fate: str) -> None:
        c = self._client(i)
        req = self.requests.pop(c.member_id, None)
        if req is None:
            return
        resp = self.sim.handle(req)
        if fate == "answer" or resp.error_code != Errors.NONE:
            c.on_response(self.sim.now, resp)
        elif fate == "lose":
            c.on_failure(self.sim.now)
        else:
            self.replies[c.member_id] = resp

    @rule(i=st.integers(0, MAX_CLIENTS - 1), lose=st.booleans())
    def hand_over_held_reply(self, i: int, lose: bool) -> None:
        c = self._client(i)
        resp = self.replies.pop(c.member_id, None)
        if resp is not None and lose:
            c.on_failure(self.sim.now)
        elif resp is not None:
            c.on_response(self.sim.now, resp)

    @rule(i=st.integers(0, MAX_CLIENTS - 1))
    def drop_request(self, i: int) -> None:
        c = self._client(i)
        if self.requests.pop(c.member_id, None) is not None:
            c.on_failure(self.sim.now)

    @rule()
    def everyone_heartbeats(self) -> None:
        for c in self.sim.clients.values():
            self.sim.exchange(c)  # a client with a request out sends nothing more
            self.check()

    @rule(ms=st.sampled_from([10, 100, 300, 1_000, 2_500, 4_000]))
    def advance(self, ms: int) -> None:
        self.sim.advance(ms)

    @rule(i=st.integers(0, MAX_CLIENTS - 1))
    def leave(self, i: int) -> None:
        live = [c for c in self.sim.clients.values() if c.state not in ("leaving", "stopped")]
        if len(live) > 2:
            self._client(i).leave()

    @rule()
    def new_client(self) -> None:
        if len(self.sim.clients) < MAX_CLIENTS:
            self._spawn(f"m{len(self.sim.clients)}")

    @rule()
    def static_member_restarts(self) -> None:
        """The static member's process comes back (new member id, same instance id)."""
        last = [c for c in self.sim.clients.values() if c.instance_id == STATIC][-1]
        if last.state == "stopped" and len(self.sim.clients) < MAX_CLIENTS:
            self._spawn(f"m{len(self.sim.clients)}", instance_id=STATIC)

    @invariant()
    def check(self) -> None:
        now, clients = self.sim.now, list(self.sim.clients.values())
        assert_exclusive(clients, now)
        group = self.sim.shard.groups.get(GROUP)
        for c in clients:
            # Epochs never go down, except to 0 (rejoin) or below (leave).
            last = self.epochs.get(c.member_id, 0)
            assert c.member_epoch >= last or c.member_epoch <= 0, (c.member_id, last)
            self.epochs[c.member_id] = c.member_epoch
            # A client owns only what the coordinator holds for it, until its deadline.
            if c.assignment and not lapsed(c, now):
                member = group.members.get(c.member_id) if group is not None else None
                assert member is not None, f"{c.member_id} owns {c.assignment} but was removed"
                held = pm.pairs(member.assigned_partitions) | pm.pairs(
                    member.partitions_pending_revocation
                )
                assert {("foo-id", p) for _, p in c.assignment} <= held

    def teardown(self) -> None:
        # After a failed step, let that failure be the report.
        if sys.exc_info()[0] is None:
            settle(self)


def settle(machine: Chaos) -> None:
    """Stop the chaos: every request is delivered; the group must converge, balanced."""
    sim = machine.sim
    for mid, resp in machine.replies.items():
        sim.clients[mid].on_response(sim.now, resp)
    for mid, req in machine.requests.items():
        sim.clients[mid].on_response(sim.now, sim.handle(req))
    machine.replies.clear()
    machine.requests.clear()
    why = "no rounds"
    for _ in range(60):
        sim.advance(HEARTBEAT_MS)
        for c in sim.clients.values():
            sim.exchange(c)
            machine.check()
        why = unsettled(sim)
        if why is None:
            break
    else:
        raise AssertionError(f"not settled: {why}")
    assert_intervals_disjoint(sim.clients.values())


def unsettled(sim: Sim) -> str | None:
    live = [c for c in sim.clients.values() if c.state not in ("stopped", "failed")]
    assert not [c for c in sim.clients.values() if c.state == "failed"]
    if not live:
        return None
    group = sim.shard.groups[GROUP]
    if sorted(group.members) != sorted(c.member_id for c in live):
        return f"members {sorted(group.members)}"
    if group.state != "stable" or any(c.state != "stable" for c in live):
        return f"group {group.state}, clients {[c.state for c in live]}"
    used = Counter(tp for c in live for tp in c.assignment)
    if sorted(used) != ALL or max(used.values()) > 1:
        return f"used {used}"
    sizes = [len(c.assignment) for c in live]
    if max(sizes) - min(sizes) > 1:
        return f"unbalanced {sizes}"
    for c in live:
        assert c.assignment == sim.coordinator_assignment(c.member_id)
    return None


def test_random_interleavings_keep_ownership_exclusive_and_converge():
    run_state_machine_as_test(
        Chaos,
        settings=settings(
            max_examples=150,
            stateful_step_count=50,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )


def test_a_wake_up_makes_the_next_heartbeat_due_at_once_and_nothing_else():
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"], topic_names=NAMES)
    a.poll(0.0)
    a.on_response(0.0, reply(1, assigned=[0, 1, 2]))
    assert a.poll(0.0) is not None  # the acknowledgement
    a.on_response(0.0, reply(1, assigned=[0, 1, 2]))
    assert a.poll(0.01) is None  # stable: the next heartbeat is an interval away
    assert a.heartbeat_now() is True
    assert a.heartbeat_now() is False  # already due
    req = a.poll(0.01)
    assert isinstance(req, m.ConsumerGroupHeartbeatRequest)
    assert a.assignment == [("foo", 0), ("foo", 1), ("foo", 2)]  # a hint changes no state
    a.leave()
    assert a.heartbeat_now() is False  # leaving: nothing to hurry


def test_a_wake_up_during_a_heartbeat_in_flight_sends_the_next_one_right_after_its_reply():
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"], topic_names=NAMES)
    a.poll(0.0)
    a.on_response(0.0, reply(1, assigned=[0, 1, 2]))
    a.poll(0.0)
    a.on_response(0.0, reply(1, assigned=[0, 1, 2]))  # stable
    assert a.poll(10.0) is not None  # its own heartbeat, in flight
    assert a.heartbeat_now() is True  # the reply on its way may predate the change
    assert a.heartbeat_now() is False  # once is enough
    a.on_response(10.0, reply(1, assigned=[0, 1, 2]))
    assert a.poll(10.0) is not None  # at once, not an interval later
    a.on_response(10.0, reply(1, assigned=[0, 1, 2]))
    assert a.poll(10.01) is None  # and then back to its interval
