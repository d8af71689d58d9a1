"""ClassicMemberClient against the real coordinator shard, a simulated clock and a network.

The clock counts whole milliseconds (the shard's unit); clients get it as seconds. The shard
may hold a JoinGroup or SyncGroup and answer it in a later event's ``replies``: the network
routes each reply to the client whose request it answers.

The fault model is the Ray runtime's: a request reaches the coordinator or fails; a reply the
coordinator *held* (JoinGroup, SyncGroup) is read as soon as it is sent; the coordinator may
die, losing the replies it held, and come back from its records with its timers restarted.
On top of that, heartbeats may sit in the network, and their replies may be lost or read late
(a stalled process). ``CHAOS_EXAMPLES=1000`` runs the state machines longer.
"""

from __future__ import annotations

import itertools
import math
import os
import sys
from collections import Counter

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from protocol import messages as m
from protocol.classic.consumer_protocol import decode_assignment
from protocol.client.classic import ClassicMemberClient
from protocol.client.consumer import ConsumerMemberClient
from protocol.config import CoordinatorConfig
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard

GROUP = "g"
SESSION_MS = 3_000
REBALANCE_MS = 5_000
HEARTBEAT_MS = 200
CONFIG = CoordinatorConfig(
    group_min_session_timeout_ms=1_000,
    group_initial_rebalance_delay_ms=300,
    # For the KIP-848 members of an upgraded group.
    group_consumer_session_timeout_ms=SESSION_MS,
    group_consumer_min_session_timeout_ms=1_000,
    group_consumer_heartbeat_interval_ms=HEARTBEAT_MS,
    group_consumer_min_heartbeat_interval_ms=100,
)
EAGER, COOPERATIVE = ["range"], ["cooperative-sticky"]
HELD = (m.JoinGroupRequest, m.SyncGroupRequest)
MAX_EXCHANGES_PER_INSTANT = 200  # a handful per client per rebalance; more is a livelock
EPSILON_S = 1e-9  # times are ms / 1000 and sums of floats


class Sim:
    """A shard, a clock, a network and the clients."""

    def __init__(self, partitions: int = 6) -> None:
        self.counts = {"foo": partitions}
        self.shard = GroupCoordinatorShard(CONFIG, self._image())
        self.records: list = []
        self.failovers = 0
        self.reverse_replies = False
        self.now_ms = 0
        self.clients: dict[str, ClassicMemberClient] = {}
        self.sent: dict[str, object] = {}  # the request each client has out
        self.outbox: dict[str, object] = {}  # sent heartbeats and leaves not delivered yet
        self.inbox: dict[str, object] = {}  # heartbeat and leave replies not read yet

    def _image(self) -> MetadataImage:
        return MetadataImage([TopicMetadata("foo-id", "foo", self.counts["foo"])])

    @property
    def now(self) -> float:
        return self.now_ms / 1000

    @property
    def all_partitions(self) -> list[tuple[str, int]]:
        return [("foo", p) for p in range(self.counts["foo"])]

    def add(self, name: str, **kwargs) -> ClassicMemberClient:
        kwargs = {
            "topics": ["foo"],
            "session_timeout_ms": SESSION_MS,
            "rebalance_timeout_ms": REBALANCE_MS,
            "heartbeat_interval_ms": HEARTBEAT_MS,
            "partitions_per_topic": self.counts,
            **kwargs,
        }
        self.clients[name] = ClassicMemberClient(GROUP, **kwargs)
        return self.clients[name]

    # ------------------------------------------------------------------ the network

    def _apply(self, result) -> None:
        """Route an event's replies; held ones are read at once, one client after another
        (in the shard's order, or the reverse), ownership checked after each."""
        self.records += result.records
        replies = result.replies[::-1] if self.reverse_replies else result.replies
        for request, reply in replies:
            name = next((n for n, r in self.sent.items() if r is request), None)
            if name is None or name not in self.clients:
                continue  # its client gave up on it, or is dead
            if isinstance(request, HELD):
                del self.sent[name]
                self.clients[name].on_response(self.now, reply)  # read as soon as sent
                check(self)
            else:
                self.inbox[name] = reply

    def send(self, name: str) -> object | None:
        """The client's due request, if any: a held kind reaches the coordinator at once."""
        req = self.clients[name].poll(self.now)
        if req is None:
            return None
        self.sent[name] = req
        if isinstance(req, HELD):
            self._deliver(req)
        else:
            self.outbox[name] = req
        return req

    def deliver(self, name: str) -> None:
        req = self.outbox.pop(name, None)
        if req is not None:
            self._deliver(req)

    def _deliver(self, req: object) -> None:
        self._apply(self.shard.tick(self.now_ms))
        self._apply(self.shard.handle(req))

    def read(self, name: str, lose: bool = False) -> None:
        reply = self.inbox.pop(name, None)
        if reply is None:
            return
        del self.sent[name]
        if lose:
            self.clients[name].on_failure(self.now)
        else:
            self.clients[name].on_response(self.now, reply)

    def drop(self, name: str) -> None:
        """A request lost on the way (before the coordinator saw it)."""
        if self.outbox.pop(name, None) is not None:
            del self.sent[name]
            self.clients[name].on_failure(self.now)

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        self._apply(self.shard.tick(self.now_ms))

    def fail_over(self) -> None:
        """The coordinator dies and a new one loads its records: held requests fail."""
        for name, req in list(self.sent.items()):
            if isinstance(req, HELD):
                del self.sent[name]
                self.clients[name].on_failure(self.now)
        self.failovers += 1  # a new process: a new seed for member ids, as the runtime's pid
        self.shard = GroupCoordinatorShard(
            CONFIG, self._image(), now_ms=self.now_ms, seed=self.failovers
        )
        for record in self.records:
            self.shard.replay(record)
        # As the partition actor does once loaded (actors/runtime/partition.py): apply the
        # controller's image, so a change made before the failover that no generation has
        # seen yet (partitions added) starts its rebalance now.
        self._apply(self.shard.update_metadata(self._image()))

    def grow(self, partitions: int) -> None:
        self.counts["foo"] = partitions  # the clients' view, as the actor refreshes it
        self._apply(self.shard.update_metadata(self._image()))

    # ------------------------------------------------------------------ driving

    def exchange_all(self, stalled: str | None = None) -> None:
        """Everything every client (but a stalled one) has to do now, answered at once."""
        for _ in range(MAX_EXCHANGES_PER_INSTANT):
            busy = False
            for name, c in list(self.clients.items()):
                if name == stalled:
                    continue
                if isinstance(c, ClassicMemberClient):
                    c.check_metadata()
                if name in self.inbox:
                    self.read(name)
                    busy = True
                if self.send(name) is not None:
                    busy = True
                    self.deliver(name)
                    self.read(name)
            if not busy:
                return
            check(self)
        raise AssertionError(f"clients kept sending at {self.now}")

    def run(self, ms: int, step_ms: int = 50, stalled: str | None = None) -> None:
        end = self.now_ms + ms
        while True:
            self.exchange_all(stalled)
            check(self)
            if self.now_ms >= end:
                return
            self.advance(min(step_ms, end - self.now_ms))

    def run_until_settled(self, max_ms: int = 30_000) -> None:
        why = None
        for _ in range(max_ms // HEARTBEAT_MS):
            self.run(HEARTBEAT_MS)
            why = unsettled(self)
            if why is None:
                assert_intervals_disjoint(self.clients.values())
                return
        raise AssertionError(f"not settled: {why}")

    def add_upgraded(self, name: str) -> ConsumerMemberClient:
        """A member restarted with the new protocol (KIP-848) in the same group."""
        self.clients[name] = ConsumerMemberClient(
            GROUP,
            f"{name}-id",
            topics=["foo"],
            topic_names={"foo-id": "foo"},
            session_timeout_ms=SESSION_MS,
        )
        return self.clients[name]

    def coordinator_assignment(self, c: ClassicMemberClient) -> list[tuple[str, int]]:
        member = self.shard.groups[GROUP].members[c.member_id]
        assignment = decode_assignment(member.assignment).assigned_partitions
        return sorted((t, p) for t, ps in assignment for p in ps)


# ---------------------------------------------------------------------------- checks


def lapsed(c: ClassicMemberClient, now: float) -> bool:
    deadline = c.ownership_deadline
    return deadline is not None and now >= deadline - EPSILON_S


def check(sim: Sim) -> None:
    """No partition is owned by two clients now; an owner the coordinator removed must be
    past its deadline (it just has not noticed yet)."""
    owners: dict[tuple[str, int], str] = {}
    group = sim.shard.groups.get(GROUP)
    for name, c in sim.clients.items():
        if lapsed(c, sim.now) or not c.assignment:
            continue
        for tp in c.assignment:
            assert tp not in owners, f"{tp} owned by {owners[tp]} and {name} at {sim.now}"
            owners[tp] = name
        assert group is not None and c.member_id in group.members, (
            f"{name} ({c.member_id}) owns {c.assignment} at {sim.now} but was removed"
        )


def ownership_intervals(clients) -> dict[tuple[str, int], list[tuple[float, float, str]]]:
    """(start, end, member) per partition, from the timelines; still owned means end = inf."""
    out: dict[tuple[str, int], list[tuple[float, float, str]]] = {}
    for i, c in enumerate(clients):
        start: dict[tuple[str, int], float] = {}
        for e in c.timeline:
            for tp in e["partitions"]:
                if e["event"] == "assigned":
                    assert tp not in start, f"client {i} assigned {tp} twice"
                    start[tp] = e["t"]
                else:
                    out.setdefault(tp, []).append((start.pop(tp), e["t"], f"client {i}"))
        for tp, t in start.items():
            out.setdefault(tp, []).append((t, math.inf, f"client {i}"))
    return out


def assert_intervals_disjoint(clients) -> None:
    for tp, spans in ownership_intervals(clients).items():
        spans.sort()
        for (s0, end, a), (start, _, b) in itertools.pairwise(spans):
            assert end >= s0 - EPSILON_S, f"{tp}: {a} lost it before it got it"
            assert start >= end - EPSILON_S, f"{tp}: {a} owned it until {end}, {b} from {start}"


def unsettled(sim: Sim) -> str | None:
    live = [c for c in sim.clients.values() if c.state not in ("stopped", "fenced", "failed")]
    assert not [c for c in sim.clients.values() if c.state == "failed"]
    if not live:
        return None
    group = sim.shard.groups.get(GROUP)
    if group is None or sorted(group.members) != sorted(c.member_id for c in live):
        return f"members {sorted(group.members) if group else None}"
    if group.state != "stable" or any(c.state != "stable" for c in live):
        return f"group {group.state}, clients {[c.state for c in live]}"
    used = Counter(tp for c in live for tp in c.assignment)
    if sorted(used) != sim.all_partitions or max(used.values()) > 1:
        return f"used {used}"
    sizes = [len(c.assignment) for c in live]
    if max(sizes) - min(sizes) > 1:
        return f"unbalanced {sizes}"
    if group.group_type == "classic":
        for c in live:
            assert c.assignment == sim.coordinator_assignment(c)
            assert c.generation == group.generation_id
    return None


# ---------------------------------------------------------------------------- scenarios


@pytest.mark.parametrize("assignors", [EAGER, COOPERATIVE], ids=["eager", "cooperative"])
def test_three_members_converge_to_two_partitions_each(assignors):
    sim = Sim()
    for name in "abc":
        sim.add(name, assignors=assignors)
    sim.run_until_settled()
    assert sorted(len(c.assignment) for c in sim.clients.values()) == [2, 2, 2]
    leaders = [c for c in sim.clients.values() if c.is_leader]
    assert len(leaders) == 1 and leaders[0].member_id == sim.shard.groups[GROUP].leader_id


@pytest.mark.parametrize("assignors", [EAGER, COOPERATIVE], ids=["eager", "cooperative"])
def test_a_member_joining_later_takes_its_share_without_overlap(assignors):
    sim = Sim()
    a, b = sim.add("a", assignors=assignors), sim.add("b", assignors=assignors)
    sim.run_until_settled()
    generation = sim.shard.groups[GROUP].generation_id
    sim.add("c", assignors=assignors)
    sim.run_until_settled()
    assert sim.shard.groups[GROUP].generation_id > generation
    if assignors == COOPERATIVE:
        # Sticky: a and b each kept two of their three partitions all along.
        for c in (a, b):
            assert not [e for e in c.timeline if e["event"] == "lost"]
            assert len([e for e in c.timeline if e["event"] == "revoked"]) == 1
    else:
        assert all(e["event"] != "lost" for c in (a, b) for e in c.timeline)


@pytest.mark.parametrize("assignors", [EAGER, COOPERATIVE], ids=["eager", "cooperative"])
def test_a_dead_members_partitions_move_only_after_its_deadline(assignors):
    sim = Sim()
    a, b = sim.add("a", assignors=assignors), sim.add("b", assignors=assignors)
    sim.run_until_settled()
    deadline = b.ownership_deadline
    del sim.clients["b"]  # b's process stops dead: no leave, no more calls
    sim.run_until_settled()
    assert a.assignment == sim.all_partitions
    taken = [e["t"] for e in a.timeline if e["event"] == "assigned"][-1]
    assert taken >= deadline - EPSILON_S
    b.poll(sim.now)  # were its process to resume, it would record the loss at its deadline
    assert b.timeline[-1]["event"] == "lost" and b.timeline[-1]["t"] == deadline
    assert_intervals_disjoint([a, b])


@pytest.mark.parametrize("assignors", [EAGER, COOPERATIVE], ids=["eager", "cooperative"])
def test_a_member_missing_a_rebalance_gives_up_its_partitions_before_its_session_ends(assignors):
    """With a rebalance timeout shorter than the session, the join phase drops a member that
    does not rejoin before its session would have: its deadline counts the shorter one."""
    sim = Sim()
    a, b = (sim.add(n, assignors=assignors, rebalance_timeout_ms=1_500) for n in "ab")
    sim.run_until_settled()
    sim.add("c", assignors=assignors, rebalance_timeout_ms=1_500)
    sim.run(2_000, stalled="a")  # a's process stalls; the others rebalance without it
    assert a.member_id not in sim.shard.groups[GROUP].members
    assert sorted(tp for c in (b, sim.clients["c"]) for tp in c.assignment) == sim.all_partitions
    assert a.ownership_deadline < sim.now < a.ownership_deadline + SESSION_MS / 1000
    sim.run_until_settled()
    assert_intervals_disjoint(sim.clients.values())


@pytest.mark.parametrize("assignors", [EAGER, COOPERATIVE], ids=["eager", "cooperative"])
def test_a_dynamic_member_leaving_hands_its_partitions_over(assignors):
    sim = Sim()
    a, b = sim.add("a", assignors=assignors), sim.add("b", assignors=assignors)
    sim.run_until_settled()
    b.leave()
    sim.run_until_settled()
    assert b.state == "stopped" and a.assignment == sim.all_partitions
    assert len(sim.shard.groups[GROUP].members) == 1


def test_static_member_restarting_with_restart_reason_gets_its_partitions_back_without_rebalance():
    sim = Sim()
    a = sim.add("a", assignors=EAGER, instance_id="i-a")
    b = sim.add("b", assignors=EAGER, instance_id="i-b")
    sim.run_until_settled()
    owned, generation = b.assignment, sim.shard.groups[GROUP].generation_id
    b.leave()  # static: no LeaveGroup, the coordinator keeps its place
    sim.run(500)
    assert b.state == "stopped" and len(sim.shard.groups[GROUP].members) == 2
    b2 = sim.add("b2", assignors=EAGER, instance_id="i-b", join_reason="restart")
    sim.run_until_settled()
    assert b2.assignment == owned
    assert sim.shard.groups[GROUP].generation_id == generation
    assert a.timeline[1:] == [], "a never noticed"
    assert_intervals_disjoint([a, b, b2])


@pytest.mark.parametrize("assignors", [EAGER, COOPERATIVE], ids=["eager", "cooperative"])
def test_new_partitions_reach_the_members_after_the_leader_notices(assignors):
    sim = Sim()
    for name in "ab":
        sim.add(name, assignors=assignors)
    sim.run_until_settled()
    sim.grow(8)
    sim.run_until_settled()
    assert sorted(len(c.assignment) for c in sim.clients.values()) == [4, 4]


@pytest.mark.parametrize("assignors", [EAGER, COOPERATIVE], ids=["eager", "cooperative"])
def test_members_regain_a_balanced_assignment_after_a_coordinator_failover(assignors):
    sim = Sim()
    for name in "abc":
        sim.add(name, assignors=assignors)
    sim.run_until_settled()
    sim.fail_over()
    sim.add("d", assignors=assignors)
    sim.run_until_settled()


@pytest.mark.parametrize("assignors", [EAGER, COOPERATIVE], ids=["eager", "cooperative"])
def test_rolling_upgrade_to_the_new_protocol_never_double_owns_a_partition(assignors):
    """Seed 002's online migration: one classic member restarts as a KIP-848 member; the
    group converts, the classic members stay in it as followers (no leader) and give up
    what the new member's share needs."""
    sim = Sim()
    for name in "abc":
        sim.add(name, assignors=assignors)
    sim.run_until_settled()
    sim.clients["c"].leave()
    sim.run(100)
    new = sim.add_upgraded("new")
    for _ in range(100):
        sim.run(HEARTBEAT_MS)
        used = Counter(tp for c in sim.clients.values() for tp in c.assignment)
        if (
            sorted(used) == sim.all_partitions
            and new.state == "stable"
            and len(new.assignment) == 2
        ):
            break
    else:
        raise AssertionError({n: c.assignment for n, c in sim.clients.items()})
    group = sim.shard.groups[GROUP]
    assert group.group_type == "consumer" and group.state == "stable"
    for name in "ab":
        assert not sim.clients[name].is_leader and len(sim.clients[name].assignment) == 2
    assert_intervals_disjoint(sim.clients.values())


# ---------------------------------------------------------------------------- chaos

MAX_CLIENTS = 6
STATIC = "static-1"


class Chaos(RuleBasedStateMachine):
    """Random interleavings of sends, deliveries, lost and late heartbeat replies, time,
    leaves, joins, static restarts, partition growth and coordinator failovers."""

    assignors = EAGER

    def __init__(self) -> None:
        super().__init__()
        self.sim = Sim()
        for i in range(3):
            self._spawn(instance_id=STATIC if i == 1 else None)

    @initialize(settled=st.booleans())
    def start(self, settled: bool) -> None:
        """From a group still forming, or from a stable one whose members own partitions."""
        if settled:
            self.sim.run_until_settled()

    def _spawn(self, **kwargs) -> None:
        n = len(self.sim.clients)
        rebalance_ms = 2_000 if n % 2 else REBALANCE_MS  # both of the group's timers fence
        self.sim.add(f"m{n}", assignors=self.assignors, rebalance_timeout_ms=rebalance_ms, **kwargs)

    def _name(self, i: int) -> str:
        return list(self.sim.clients)[i % len(self.sim.clients)]

    @rule(i=st.integers(0, MAX_CLIENTS - 1))
    def send(self, i: int) -> None:
        self.sim.send(self._name(i))

    @rule(i=st.integers(0, MAX_CLIENTS - 1), fate=st.sampled_from(["answer", "lose", "hold"]))
    def deliver(self, i: int, fate: str) -> None:
        name = self._name(i)
        self.sim.deliver(name)
        if fate != "hold":
            self.sim.read(name, lose=fate == "lose")

    @rule(i=st.integers(0, MAX_CLIENTS - 1), lose=st.booleans())
    def hand_over_held_reply(self, i: int, lose: bool) -> None:
        self.sim.read(self._name(i), lose=lose)

    @rule(i=st.integers(0, MAX_CLIENTS - 1))
    def drop_request(self, i: int) -> None:
        self.sim.drop(self._name(i))

    @rule()
    def everyone_runs(self) -> None:
        self.sim.exchange_all()

    @rule(i=st.integers(0, MAX_CLIENTS - 1))
    def everyone_but_one_runs(self, i: int) -> None:
        """One process stalls: it reads and sends nothing while the others go on."""
        self.sim.exchange_all(stalled=self._name(i))

    @rule(ms=st.sampled_from([10, 100, 300, 1_000, 2_500, 4_000]))
    def advance(self, ms: int) -> None:
        self.sim.advance(ms)

    @rule(i=st.integers(0, MAX_CLIENTS - 1), force=st.booleans())
    def leave(self, i: int, force: bool) -> None:
        live = [c for c in self.sim.clients.values() if c.state not in ("leaving", "stopped")]
        if len(live) > 2:
            c = self.sim.clients[self._name(i)]
            if isinstance(c, ClassicMemberClient):
                c.leave(force=force)
            else:
                c.leave()

    @precondition(lambda self: len(self.sim.clients) < MAX_CLIENTS)
    @rule()
    def new_client(self) -> None:
        self._spawn()

    @precondition(lambda self: len(self.sim.clients) < MAX_CLIENTS)
    @rule(restart=st.booleans())
    def static_member_restarts(self, restart: bool) -> None:
        """The static member's process comes back (new member id, same instance id)."""
        last = [c for c in self.sim.clients.values() if c.instance_id == STATIC][-1]
        if last.state == "stopped":
            self._spawn(instance_id=STATIC, join_reason="restart" if restart else None)

    @precondition(lambda self: self.sim.counts["foo"] < 9)
    @rule()
    def partitions_are_added(self) -> None:
        self.sim.grow(self.sim.counts["foo"] + 1)

    @rule()
    def replies_of_one_event_arrive_in_the_other_order(self) -> None:
        self.sim.reverse_replies = not self.sim.reverse_replies

    @rule(dice=st.integers(0, 4))
    def coordinator_fails_over(self, dice: int) -> None:
        if dice == 0:  # rarer than the other faults: each one restarts every timer
            self.sim.fail_over()

    @invariant()
    def exclusive(self) -> None:
        check(self.sim)

    def teardown(self) -> None:
        if sys.exc_info()[0] is None:  # after a failed step, let that failure be the report
            settle(self.sim)


def settle(sim: Sim) -> None:
    """Stop the chaos: every request is delivered; the group must converge, balanced."""
    for name in list(sim.outbox):
        sim.deliver(name)
    for name in list(sim.inbox):
        sim.read(name)
    sim.run_until_settled(max_ms=60_000)


class CooperativeChaos(Chaos):
    assignors = COOPERATIVE


class UpgradeChaos(Chaos):
    """The same, while members restart with the new protocol (and may leave again, which
    converts the group back when only classic members remain)."""

    assignors = COOPERATIVE

    @precondition(lambda self: len(self.sim.clients) < MAX_CLIENTS)
    @rule()
    def member_restarts_with_the_new_protocol(self) -> None:
        self.sim.add_upgraded(f"m{len(self.sim.clients)}")


CHAOS_SETTINGS = settings(
    max_examples=int(os.environ.get("CHAOS_EXAMPLES", "100")),
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestEagerChaos = Chaos.TestCase
TestEagerChaos.settings = CHAOS_SETTINGS
TestCooperativeChaos = CooperativeChaos.TestCase
TestCooperativeChaos.settings = CHAOS_SETTINGS
TestUpgradeChaos = UpgradeChaos.TestCase
TestUpgradeChaos.settings = CHAOS_SETTINGS
