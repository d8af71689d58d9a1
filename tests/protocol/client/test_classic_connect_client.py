"""ClassicConnectWorkerClient (JoinGroup/SyncGroup, protocol type "connect") against the real
classic coordinator of a shard, a simulated clock and a network that routes held replies."""

from __future__ import annotations

import sys
from collections import Counter

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from assignors.connect import IncrementalCooperativeAssignor
from protocol import messages as m
from protocol.classic.connect_protocol import (
    ConnectAssignment,
    Work,
    WorkerState,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
)
from protocol.client.classic_connect import ClassicConnectWorkerClient
from protocol.client.classic_connect_leader import ConnectLeader
from protocol.config import CoordinatorConfig
from protocol.metadata import MetadataImage
from protocol.shard import GroupCoordinatorShard

GROUP = "connect-classic"
SESSION_MS = 3_000
HEARTBEAT_MS = 200
CONFIG = CoordinatorConfig(group_min_session_timeout_ms=1_000,
                           group_initial_rebalance_delay_ms=100)
HELD = (m.JoinGroupRequest, m.SyncGroupRequest)


class ClassicSim:
    def __init__(self, connectors: dict[str, int], max_delay_ms: int = 0) -> None:
        self.shard = GroupCoordinatorShard(CONFIG, MetadataImage())
        self.connectors = dict(connectors)
        self.offset = 1
        self.max_delay_ms = max_delay_ms
        self.now_ms = 0
        self.clients: dict[str, ClassicConnectWorkerClient] = {}
        self.sent: dict[str, object] = {}

    @property
    def now(self) -> float:
        return self.now_ms / 1000

    def config(self) -> tuple[int, dict[str, int]]:
        return self.offset, dict(self.connectors)

    def set_connectors(self, connectors: dict[str, int]) -> None:
        self.connectors, self.offset = dict(connectors), self.offset + 1
        for c in self.clients.values():
            c.config_changed()

    def add(self, name: str, mode: str = "sessioned", **kw) -> ClassicConnectWorkerClient:
        kw = {"session_timeout_ms": SESSION_MS, "rebalance_timeout_ms": 5_000,
              "heartbeat_interval_ms": HEARTBEAT_MS, **kw}
        assignor = IncrementalCooperativeAssignor(self.max_delay_ms)
        self.clients[name] = ClassicConnectWorkerClient(
            GROUP, name, config=self.config, connect_protocol=mode, assignor=assignor, **kw)
        return self.clients[name]

    def _apply(self, result) -> None:
        for request, reply in result.replies:
            name = next((n for n, r in self.sent.items() if r is request), None)
            if name is None or name not in self.clients:
                continue
            del self.sent[name]
            self.clients[name].on_response(self.now, reply)
            assert_exclusive(self)

    def step(self) -> None:
        for name, c in list(self.clients.items()):
            for _ in range(20):
                if name in self.sent:
                    break
                req = c.poll(self.now)
                if req is None:
                    break
                self.sent[name] = req
                self._apply(self.shard.handle(req))
        self._apply(self.shard.tick(self.now_ms))

    def run(self, ms: int, step_ms: int = 50) -> None:
        end = self.now_ms + ms
        while True:
            self.step()
            if self.now_ms >= end:
                return
            self.now_ms += min(step_ms, end - self.now_ms)

    def all_units(self) -> list[tuple[str, int]]:
        return sorted([(c, -1) for c in self.connectors]
                      + [(c, t) for c, n in self.connectors.items() for t in range(n)])

    def settle(self, limit_ms: int = 10_000) -> None:
        waited = 0
        while True:
            live = [c for c in self.clients.values() if c.state != "stopped"]
            used = sorted(u for c in live for u in units(c))
            if used == self.all_units() and all(c.state == "stable" for c in live) and not any(
                c._rejoin_at is not None for c in live
            ):
                return
            assert waited <= limit_ms, {n: (c.state, units(c)) for n, c in self.clients.items()}
            self.run(HEARTBEAT_MS)
            waited += HEARTBEAT_MS


def units(c: ClassicConnectWorkerClient) -> list[tuple[str, int]]:
    return [(n, -1) for n in c.owned.connectors] + list(c.owned.tasks)


def running(c: ClassicConnectWorkerClient, now_s: float) -> list[tuple[str, int]]:
    """What ``c`` runs at ``now_s``: its units, none once its ownership deadline passed. A
    host polls at ``next_due()`` and so stops the work at that deadline; a worker its host has
    not polled since (stalled, or polled later in the same step) has stopped in fact even if
    its ``owned`` still lists the work, and its next poll records the loss at the deadline."""
    deadline = c.ownership_deadline
    return [] if deadline is not None and now_s >= deadline else units(c)


def assert_exclusive(sim: ClassicSim) -> None:
    seen = Counter(u for c in sim.clients.values() for u in running(c, sim.now))
    assert not [u for u, n in seen.items() if n > 1], seen


CONNECTORS = {"sink": 4, "source": 2}


@pytest.mark.parametrize("mode", ["sessioned", "compatible", "eager"])
def test_three_workers_share_every_connector_and_task(mode):
    sim = ClassicSim(CONNECTORS)
    for w in "abc":
        sim.add(w, mode=mode)
    sim.settle()
    protocol = {"sessioned": "sessioned", "compatible": "compatible", "eager": "default"}[mode]
    assert {c.protocol_name for c in sim.clients.values()} == {protocol}
    assert sum(c.is_leader for c in sim.clients.values()) == 1
    assert sorted(len(c.owned.tasks) for c in sim.clients.values()) == [2, 2, 2]


def test_one_eager_worker_makes_the_group_eager():
    sim = ClassicSim(CONNECTORS)
    sim.add("a")
    sim.add("b", mode="eager")
    sim.settle()
    assert {c.protocol_name for c in sim.clients.values()} == {"default"}


def test_incremental_joiner_gets_work_only_after_the_others_released_it():
    sim = ClassicSim(CONNECTORS)
    a = sim.add("a")
    sim.settle()
    assert len(units(a)) == 8
    b = sim.add("b")
    sim.settle()
    assert sorted(len(units(c)) for c in (a, b)) == [4, 4]
    revoked = {u for e in a.timeline if e["event"] == "revoked"
               for u in [(c, -1) for c in e["connectors"]] + [tuple(t) for t in e["tasks"]]}
    assert revoked == set(units(b))
    # a never stopped everything: incremental keeps the rest running through the rebalance
    assert all(e["event"] != "revoked" or len(e["tasks"]) + len(e["connectors"]) < 8
               for e in a.timeline)


def test_eager_workers_stop_everything_at_each_rebalance():
    sim = ClassicSim(CONNECTORS)
    a = sim.add("a", mode="eager")
    sim.settle()
    sim.add("b", mode="eager")
    sim.settle()
    assert any(e["event"] == "revoked" and len(e["tasks"]) == 6 for e in a.timeline)


def test_connector_changes_rebalance_through_the_leader():
    sim = ClassicSim(CONNECTORS)
    for w in "ab":
        sim.add(w)
    sim.settle()
    sim.set_connectors({"sink": 6})
    sim.settle()
    assert sorted(len(c.owned.tasks) for c in sim.clients.values()) == [3, 3]


def test_a_departed_worker_s_work_is_held_then_reassigned_after_the_delay():
    sim = ClassicSim(CONNECTORS, max_delay_ms=2_000)
    for w in "abc":
        sim.add(w)
    sim.settle()
    gone = set(units(sim.clients["c"]))
    sim.clients["c"].leave()
    sim.run(HEARTBEAT_MS)
    del sim.clients["c"]
    sim.run(1_000)
    running = {u for c in sim.clients.values() for u in units(c)}
    assert gone and not gone & running, "held for the delay"
    sim.settle(limit_ms=5_000)
    assert sorted(len(c.owned.tasks) for c in sim.clients.values()) == [3, 3]


def test_a_leaving_worker_sends_leave_group_after_stopping_its_work():
    sim = ClassicSim(CONNECTORS)
    a = sim.add("a")
    sim.settle()
    a.leave()
    req = a.poll(sim.now)
    assert isinstance(req, m.LeaveGroupRequest) and req.members[0].member_id == a.member_id
    assert units(a) == [] and a.timeline[-1]["event"] == "revoked"


def test_join_metadata_reports_what_the_worker_runs():
    sim = ClassicSim(CONNECTORS)
    a = sim.add("a")
    sim.settle()
    a._rejoin_at = -1.0
    join = a.poll(sim.now + 1)
    assert join.protocol_type == "connect" and join.group_instance_id is None
    assert [p.name for p in join.protocols] == ["sessioned", "compatible", "default"]
    version, state = decode_metadata(join.protocols[0].metadata)
    assert version == 2 and state.url == "http://a:8083/" and state.config_offset == 1
    assert state.allocation.assigned == a.owned


def test_config_mismatch_makes_everyone_rejoin_without_assigning():
    leader = ConnectLeader(IncrementalCooperativeAssignor())
    mine, ahead = encode_metadata(WorkerState("u", 3), 1), encode_metadata(WorkerState("u2", 9), 1)
    members = [m.JoinGroupResponseMember("w1", None, mine),
               m.JoinGroupResponseMember("w2", None, ahead)]
    resp = m.JoinGroupResponse(generation_id=1, protocol_name="compatible", leader="w1",
                               member_id="w1", members=members)
    led = leader.lead(resp, "u", 3, CONNECTORS, 0)
    assert led.mismatch
    for a in led.assignments:
        got = decode_assignment(a.assignment)
        assert got.error == 1 and got.assigned == Work()


def test_the_incremental_leader_never_hands_over_work_someone_still_runs():
    leader = ConnectLeader(IncrementalCooperativeAssignor())
    alloc = ConnectAssignment(version=1, assigned=Work.of(["sink", "source"],
                                                          [("sink", t) for t in range(4)]
                                                          + [("source", 0), ("source", 1)]))
    running = encode_metadata(WorkerState("u", 1, alloc), 1)
    members = [m.JoinGroupResponseMember("w1", None, running),
               m.JoinGroupResponseMember("w2", None, encode_metadata(WorkerState("u", 1), 1))]
    resp = m.JoinGroupResponse(generation_id=2, protocol_name="compatible", leader="w1",
                               member_id="w1", members=members)
    led = leader.lead(resp, "u", 1, CONNECTORS, 0)
    got = {a.member_id: decode_assignment(a.assignment) for a in led.assignments}
    assert got["w1"].revoked and got["w1"].assigned == Work()
    assert got["w2"].assigned == Work(), "w1 must stop it first"
    # Next round: w1 reports what it still runs; w2 now gets what w1 released.
    still = alloc.assigned - got["w1"].revoked
    alloc2 = ConnectAssignment(version=1, assigned=still)
    members[0] = m.JoinGroupResponseMember("w1", None,
                                           encode_metadata(WorkerState("u", 1, alloc2), 1))
    led2 = leader.lead(resp, "u", 1, CONNECTORS, 0)
    got2 = {a.member_id: decode_assignment(a.assignment) for a in led2.assignments}
    assert got2["w2"].assigned == got["w1"].revoked
    assert got2["w1"].revoked == Work()


# ---------------------------------------------------------------------------- chaos

MAX_CLASSIC_WORKERS = 5


class ClassicConnectChaos(RuleBasedStateMachine):
    """Classic Connect workers of mixed modes join, leave, die and stall while connectors
    change; held JoinGroup and SyncGroup replies are read as soon as they are sent. No unit
    ever runs on two live workers; once the changes stop, every unit runs once."""

    def __init__(self) -> None:
        super().__init__()
        self.sim = ClassicSim(CONNECTORS)
        self.spawned = 0
        self.stalled: set[str] = set()
        self.reverse = False  # clients polled and held replies read in order, or the reverse
        for _ in range(2):
            self._spawn("sessioned")

    def _spawn(self, mode: str) -> None:
        self.sim.add(f"w{self.spawned}", mode=mode)
        self.spawned += 1

    def _pick(self, i: int) -> str:
        names = sorted(self.sim.clients)
        return names[i % len(names)]

    @rule(mode=st.sampled_from(["sessioned", "sessioned", "compatible", "eager"]))
    def new_worker(self, mode: str) -> None:
        if len(self.sim.clients) < MAX_CLASSIC_WORKERS:
            self._spawn(mode)

    def _others_stay(self, name: str) -> bool:
        """Some worker other than ``name`` is still meant to stay in the group (not leaving,
        stopped or failed), so the group has someone to converge on."""
        return any(c.state not in ("leaving", "stopped", "failed")
                   for n, c in self.sim.clients.items() if n != name)

    @rule(i=st.integers(0, MAX_CLASSIC_WORKERS - 1))
    def leave(self, i: int) -> None:
        name = self._pick(i)
        if self._others_stay(name):
            self.sim.clients[name].leave()

    @rule(i=st.integers(0, MAX_CLASSIC_WORKERS - 1))
    def kill(self, i: int) -> None:
        name = self._pick(i)
        if self._others_stay(name):
            del self.sim.clients[name]
            self.sim.sent.pop(name, None)

    @rule(i=st.integers(0, MAX_CLASSIC_WORKERS - 1))
    def stall(self, i: int) -> None:
        self.stalled.add(self._pick(i))

    @rule()
    def resume(self) -> None:
        self.stalled.clear()

    @rule()
    def flip_reply_order(self) -> None:
        self.reverse = not self.reverse

    @rule(k=st.integers(0, 2))
    def change_connectors(self, k: int) -> None:
        self.sim.set_connectors([CONNECTORS, {"sink": 5}, {"sink": 1, "other": 3}][k])

    @rule(ms=st.sampled_from([50, 200, 1_000, 3_500]))
    def advance(self, ms: int) -> None:
        end = self.sim.now_ms + ms
        while self.sim.now_ms < end:
            self._step()
            self.sim.now_ms = min(end, self.sim.now_ms + 50)

    def _step(self) -> None:
        clients = list(self.sim.clients.items())
        for name, c in clients[::-1] if self.reverse else clients:
            if name in self.stalled:
                continue
            for _ in range(20):
                if name in self.sim.sent or name not in self.sim.clients:
                    break
                req = c.poll(self.sim.now)
                if req is None:
                    break
                self.sim.sent[name] = req
                self._apply(self.sim.shard.handle(req))
        self._apply(self.sim.shard.tick(self.sim.now_ms))

    def _apply(self, result) -> None:
        replies = result.replies[::-1] if self.reverse else result.replies
        for request, reply in replies:
            name = next((n for n, r in self.sim.sent.items() if r is request), None)
            if name is None or name not in self.sim.clients:
                continue
            del self.sim.sent[name]
            self.sim.clients[name].on_response(self.sim.now, reply)
            self.check()

    @invariant()
    def check(self) -> None:
        assert_exclusive(self.sim)

    def teardown(self) -> None:
        if sys.exc_info()[0] is not None:
            return
        self.stalled.clear()
        self.sim.run(500)  # leaves in progress finish
        self.sim.clients = {n: c for n, c in self.sim.clients.items() if c.state != "stopped"}
        if self.sim.clients:
            self.sim.settle(limit_ms=30_000)


def test_random_classic_connect_histories_keep_work_exclusive_and_converge():
    run_state_machine_as_test(
        ClassicConnectChaos,
        settings=settings(max_examples=60, stateful_step_count=30, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow]),
    )


# Histories the state machine once failed on, replayed on every run whatever the Hypothesis
# database holds.

def replay(*steps: tuple[str, dict], teardown: bool = True) -> ClassicConnectChaos:
    machine = ClassicConnectChaos()
    for rule_name, args in steps:
        getattr(machine, rule_name)(**args)
        machine.check()
    if teardown:
        machine.teardown()
    return machine


def test_leaves_and_kills_always_leave_a_worker_for_the_group_to_converge_on():
    # w0 leaves and stops; killing w1 would leave no worker, so it is refused.
    steps = [("leave", {"i": 0}), ("advance", {"ms": 50}), ("kill", {"i": 1})]
    machine = replay(*steps, teardown=False)
    assert machine.sim.clients["w0"].state == "stopped" and "w1" in machine.sim.clients
    # w1 may leave once w2 is there to stay, and w2 ends up running everything.
    machine = replay(*steps, ("new_worker", {"mode": "sessioned"}), ("advance", {"ms": 1_000}),
                     ("leave", {"i": 1}))
    assert list(machine.sim.clients) == ["w2"]
    assert sorted(units(machine.sim.clients["w2"])) == machine.sim.all_units()


def test_a_stalled_worker_s_work_moves_only_after_its_deadline_and_it_records_the_loss():
    # w1 stalls (its host stops polling) past its session; the coordinator removes it and w0
    # takes its work. w1's polled again only after w0 got it, yet the loss is recorded at its
    # deadline, which came before w0's SyncGroup, and it rejoins with nothing.
    machine = replay(("advance", {"ms": 1_000}), ("stall", {"i": 1}), ("advance", {"ms": 3_500}),
                     ("change_connectors", {"k": 0}))
    w0, w1 = machine.sim.clients["w0"], machine.sim.clients["w1"]
    lost = next(e for e in w1.timeline if e["event"] == "lost")
    taken = next(e for e in w0.timeline if e["event"] == "assigned" and e["epoch"] > lost["epoch"])
    assert set(taken["tasks"]) == set(lost["tasks"]) and taken["connectors"] == lost["connectors"]
    assert lost["t"] < taken["t"]
    assert {n: c.state for n, c in machine.sim.clients.items()} == {"w0": "stable", "w1": "stable"}


# ------------------------------------------------------- one classic client core, both halves
# The classic consumer's rules, now the classic Connect worker's too (docs/decisions.md, "One
# classic client core"); the consumer's own tests are in test_classic_client.py.

SESSION_S = SESSION_MS / 1000
WORK = Work.of(["c"], [("c", 0)])


def lone_worker() -> ClassicConnectWorkerClient:
    return ClassicConnectWorkerClient(
        GROUP, "w", config=lambda: (1, {"c": 1}), session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=5_000, heartbeat_interval_ms=HEARTBEAT_MS,
    )


def join_reply(generation: int) -> m.JoinGroupResponse:
    return m.JoinGroupResponse(generation_id=generation, protocol_name="sessioned",
                               leader="other", member_id="w-1")


def sync_reply(work: Work) -> m.SyncGroupResponse:
    return m.SyncGroupResponse(assignment=encode_assignment(ConnectAssignment(2, assigned=work)))


def test_a_repeated_join_reply_of_the_same_generation_restarts_no_clock_for_a_worker():
    w = lone_worker()
    w.poll(0.0)
    w.on_response(0.0, join_reply(5))
    w.poll(0.0)
    w.on_response(0.0, sync_reply(WORK))
    assert w.owned == WORK and w.ownership_deadline == SESSION_S
    w._rejoin_at = -1.0  # the leader scheduled a rebalance
    assert isinstance(w.poll(1.0), m.JoinGroupRequest)
    w.on_response(1.5, join_reply(6))
    assert w.ownership_deadline == 1.5 + SESSION_S
    assert isinstance(w.poll(1.5), m.SyncGroupRequest)
    w.on_failure(1.6)  # the SyncGroup never arrived; the rebalance timeout runs on
    again = w.next_due()
    assert again < 2.5 and isinstance(w.poll(again), m.JoinGroupRequest)
    w.on_response(2.5, join_reply(6))  # the coordinator repeats its reply
    assert w.ownership_deadline == 1.5 + SESSION_S


def test_a_workers_sync_reply_read_after_the_session_could_have_ended_is_not_trusted():
    w = lone_worker()
    w.poll(0.0)
    w.on_response(0.0, join_reply(5))
    w.poll(0.0)
    w.on_response(SESSION_S + 1, sync_reply(WORK))
    assert w.owned == Work() and w.timeline == [] and w.state == "unjoined"


def test_a_worker_leaving_while_its_join_is_held_stops_its_work_when_the_round_forms():
    # A history the state machine found: sessioned workers rejoin keeping their work; an eager
    # joiner makes the round eager, whose leader hands out everything at once. A worker told
    # to leave meanwhile must stop when the round forms, not at its next poll (after others
    # may have started its work).
    chaos = ClassicConnectChaos()
    chaos.new_worker("sessioned")
    chaos.advance(50)
    chaos.new_worker("sessioned")
    chaos.advance(1_000)
    chaos.kill(0)
    chaos.new_worker("eager")
    chaos.advance(50)
    chaos.kill(0)
    chaos.advance(50)
    chaos.leave(1)
    chaos.teardown()  # settles; every reply read checks that no unit runs on two workers
