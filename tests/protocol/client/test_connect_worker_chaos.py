"""A Hypothesis state machine: Connect worker client halves against the real shard.

Workers join, leave, are killed or stall; requests sit in the network, replies are lost or
read late; the chosen worker's assignment arrives late or never (its InstallAssignment is
lost); connectors are added, removed and resized. Throughout, no connector or task runs on
two workers (a worker past its ownership deadline counts as running nothing), a worker runs
only what the coordinator holds for it, and epochs never go down nor pass the group epoch.
Once the changes stop, the group converges: every unit runs once, balanced.
"""

from __future__ import annotations

import sys
from collections import Counter

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from actors.tools.invariants import check_connect_exclusive
from protocol import messages as m
from protocol.errors import Errors
from tests.protocol.client.connect_sim import GROUP, HEARTBEAT_MS, ConnectSim, lapsed, units

MAX_WORKERS = 6
CONNECTOR_SETS = [
    {"sink": 4, "source": 2},
    {"sink": 6},
    {"sink": 2, "source": 3, "mirror": 1},
    {"source": 5},
]
SETTLE_ROUNDS = 80  # of one heartbeat interval each: past every rebalance timeout below


class ConnectChaos(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.sim = ConnectSim(CONNECTOR_SETS[0])
        self.requests: dict[str, object] = {}
        self.replies: dict[str, object] = {}
        self.epochs: dict[str, int] = {}
        self.dead: dict[str, float] = {}  # killed worker -> when
        self.timelines: list[dict] = []
        self.mute: str | None = None  # its InstallAssignments never arrive
        self.spawned = 0
        for _ in range(3):
            self._spawn()

    def _spawn(self, versions: tuple[int, int] = (1, 2)) -> None:
        wid = f"w{self.spawned}"
        rebalance_ms = 2_000 if self.spawned % 2 else 4_000
        self.spawned += 1
        self.sim.add(wid, versions=versions, rebalance_timeout_ms=rebalance_ms)

    def _client(self, i: int):
        return list(self.sim.clients.values())[i % len(self.sim.clients)]

    def _answer(self, wid: str, req: object) -> object | None:
        """The shard's reply, or None when the request is lost on the way (a mute worker's
        InstallAssignment)."""
        if wid == self.mute and isinstance(req, m.ConnectGroupInstallAssignmentRequest):
            return None
        return self.sim.handle(req)

    # ------------------------------------------------------------------ the network

    @rule(i=st.integers(0, MAX_WORKERS - 1))
    def send(self, i: int) -> None:
        c = self._client(i)
        req = c.poll(self.sim.now)
        if req is not None:
            self.requests[c.member_id] = req

    @rule(i=st.integers(0, MAX_WORKERS - 1), fate=st.sampled_from(["answer", "lose", "hold"]))
    def deliver(self, i: int, fate: str) -> None:
        c = self._client(i)
        req = self.requests.pop(c.member_id, None)
        if req is None:
            return
        resp = self._answer(c.member_id, req)
        if resp is None or fate == "lose":
            c.on_failure(self.sim.now)
        elif fate == "answer" or resp.error_code not in (Errors.NONE,
                                                         Errors.COMPUTE_ASSIGNMENT):
            c.on_response(self.sim.now, resp)
        else:
            self.replies[c.member_id] = resp

    @rule(i=st.integers(0, MAX_WORKERS - 1), lose=st.booleans())
    def hand_over_held_reply(self, i: int, lose: bool) -> None:
        c = self._client(i)
        resp = self.replies.pop(c.member_id, None)
        if resp is not None and lose:
            c.on_failure(self.sim.now)
        elif resp is not None:
            c.on_response(self.sim.now, resp)

    @rule()
    def everyone_exchanges(self) -> None:
        for c in self.sim.clients.values():
            if c.member_id not in self.requests and c.member_id not in self.replies:
                self._exchange(c)
            self.check()

    def _exchange(self, c) -> None:
        for _ in range(12):
            req = c.poll(self.sim.now)
            if req is None:
                return
            resp = self._answer(c.member_id, req)
            if resp is None:
                c.on_failure(self.sim.now)
            else:
                c.on_response(self.sim.now, resp)

    @rule(ms=st.sampled_from([10, 100, 300, 1_000, 2_500, 4_000]))
    def advance(self, ms: int) -> None:
        self.sim.advance(ms)

    # ------------------------------------------------------------------ the workers

    @rule(versions=st.sampled_from([(1, 2), (2, 2)]))
    def new_worker(self, versions) -> None:
        if len(self.sim.clients) < MAX_WORKERS:
            self._spawn(versions)

    @rule(i=st.integers(0, MAX_WORKERS - 1))
    def leave(self, i: int) -> None:
        if len(self.sim.clients) > 2:
            self._client(i).leave()

    @rule(i=st.integers(0, MAX_WORKERS - 1))
    def kill(self, i: int) -> None:
        """The worker's process dies: its tasks stop with it, nothing is said."""
        if len(self.sim.clients) <= 2:
            return
        c = self._client(i)
        # A worker's own ownership deadline fires whether or not anything calls it: work it
        # lost before dying stopped then (the client half records that, backdated to the
        # deadline, on its next call; a dead worker has no next call, so make it now).
        c.poll(self.sim.now)
        self.dead[c.member_id] = self.sim.now
        self.timelines += [dict(e, group_id=GROUP) for e in c.timeline]
        del self.sim.clients[c.member_id]
        self.requests.pop(c.member_id, None)
        self.replies.pop(c.member_id, None)

    @rule(i=st.integers(0, MAX_WORKERS - 1))
    def mute_assignor(self, i: int) -> None:
        self.mute = self._client(i).member_id

    @rule()
    def unmute_assignor(self) -> None:
        self.mute = None

    @rule(k=st.integers(0, len(CONNECTOR_SETS) - 1))
    def change_connectors(self, k: int) -> None:
        self.sim.set_connectors(CONNECTOR_SETS[k])

    # ------------------------------------------------------------------ invariants

    @invariant()
    def check(self) -> None:
        now, clients = self.sim.now, list(self.sim.clients.values())
        seen: dict[tuple[str, int], str] = {}
        group = self.sim.shard.groups.get(GROUP)
        for c in clients:
            last = self.epochs.get(c.member_id, 0)
            assert c.member_epoch >= last or c.member_epoch <= 0, (c.member_id, last)
            self.epochs[c.member_id] = c.member_epoch
            if lapsed(c, now) or not units(c):
                continue
            for unit in units(c):
                assert unit not in seen, f"{unit} runs on {seen[unit]} and {c.member_id}"
                seen[unit] = c.member_id
            member = group.members.get(c.member_id) if group is not None else None
            assert member is not None, f"{c.member_id} runs {units(c)} but was removed"
            assert set(units(c)) <= member.assigned | member.pending_revocation
            assert 0 < c.member_epoch <= group.group_epoch

    def teardown(self) -> None:
        if sys.exc_info()[0] is None:
            settle(self)


def settle(machine: ConnectChaos) -> None:
    """Stop the chaos: deliver everything, unmute, and wait for a balanced group."""
    sim = machine.sim
    machine.mute = None
    for wid, resp in machine.replies.items():
        sim.clients[wid].on_response(sim.now, resp)
    for wid, req in machine.requests.items():
        sim.clients[wid].on_response(sim.now, sim.handle(req))
    machine.replies.clear()
    machine.requests.clear()
    why = "no rounds"
    for _ in range(SETTLE_ROUNDS):
        sim.advance(HEARTBEAT_MS)
        for c in sim.clients.values():
            machine._exchange(c)
            machine.check()
        why = unsettled(sim)
        if why is None:
            break
    else:
        raise AssertionError(f"not settled: {why}")
    events = machine.timelines + [
        dict(e, group_id=GROUP) for c in sim.clients.values() for e in c.timeline
    ]
    events.sort(key=lambda e: e["t"])
    assert check_connect_exclusive(events, machine.dead, sim.now) == []


def unsettled(sim: ConnectSim) -> str | None:
    live = [c for c in sim.clients.values() if c.state not in ("stopped", "failed")]
    assert not [c for c in sim.clients.values() if c.state == "failed"]
    if not live:
        return None
    group = sim.shard.groups[GROUP]
    if sorted(group.members) != sorted(c.member_id for c in live):
        return f"members {sorted(group.members)}"
    if any(c.state != "stable" for c in live) or group.group_epoch != group.assignment_epoch:
        return f"epochs {group.group_epoch}/{group.assignment_epoch}, {[c.state for c in live]}"
    used = Counter(u for c in live for u in units(c))
    if set(used) != sim.all_units() or max(used.values()) > 1:
        return f"used {sorted(used)}"
    for sizes in ([len(c.owned.tasks) for c in live], [len(c.owned.connectors) for c in live]):
        if max(sizes) - min(sizes) > 1:
            return f"unbalanced {sizes}"
    return None


def test_random_worker_histories_keep_work_exclusive_and_converge():
    run_state_machine_as_test(
        ConnectChaos,
        settings=settings(
            max_examples=120,
            stateful_step_count=50,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
