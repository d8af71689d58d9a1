"""Random Connect group lifecycles against one shard, checking the design's invariants.

Simulated workers join, heartbeat, stop work slowly, lose replies, leave, leave for a while
(static) and come back, are killed (they just stop: only the session timeout finds out),
switch between the server-side and a client-side assignor; a chosen worker computes the
assignment at once, late, or never; connectors appear, vanish and change task counts; time
jumps. After every step: no connector or task is held by two workers, in the coordinator's
view and in the workers' own; epochs never go back nor pass the group's. At the end, once
changes stop, every configured connector and task runs on exactly one worker within a bounded
number of heartbeats.

The worker model keeps its own clock, as a real worker must: once the coordinator *could*
have removed it (no reply for a session timeout; a revocation it has not confirmed for a
rebalance timeout), it stops everything and rejoins. A client-side worker echoes the assignor
metadata of its last assignment and sets reason 1 once that metadata says a rebalance is due.
"""

from __future__ import annotations

from dataclasses import dataclass

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from assignors.connect import remaining_delay_ms
from protocol import messages as m
from protocol.config import CoordinatorConfig
from protocol.connect import units as u
from protocol.connect.group import ConnectGroup
from protocol.errors import Errors
from protocol.metadata import ConnectorMetadata, MetadataImage
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard
from tests.protocol.connect.workers import ICA, compute_with

GROUP = "cg"
# The workers' scheduled.rebalance.max.delay.ms (client side) and the coordinator's.
MAX_DELAY_MS = 3_000
CONFIG = CoordinatorConfig(group_connect_scheduled_rebalance_max_delay_ms=MAX_DELAY_MS)
SESSION_MS = CONFIG.group_connect_session_timeout_ms
REBALANCE_MS = 20_000
MAX_WORKERS = 5
RANGES = ((1, 2), (1, 2), (2, 2), (1, 1))
TIME_STEPS_MS = (50, 1_000, 3_000, 8_000, SESSION_MS, REBALANCE_MS)
CONNECTOR_NAMES = ("src", "sink", "jdbc")

IN, OUT, AWAY, DEAD = "in", "out", "away", "dead"
OK = (Errors.NONE, Errors.COMPUTE_ASSIGNMENT)


@dataclass
class SimWorker:
    member_id: str
    instance_id: str | None
    versions: tuple[int, int] | None  # None: the server-side assignor
    status: str = OUT
    epoch: int = 0
    runs: u.Units = u.EMPTY
    assigned: u.Units = u.EMPTY  # what the coordinator last said it may run
    meta: tuple[int, bytes] = (0, b"")  # the assignor metadata of its last assignment
    last_reply_ms: int = 0
    clean_ms: int = 0  # the coordinator last confirmed it had nothing to revoke
    dirty: bool = False
    must_compute: bool = False
    names_server_assignor: bool = False  # says so (after using a client assignor), or not

    def assignors(self, now_ms: int) -> list[m.Assignor] | None:
        if self.versions is None:
            return None
        version, data = self.meta
        lo, hi = self.versions
        version = version if lo <= version <= hi else hi
        due = remaining_delay_ms(data, version, now_ms) == 0
        return [m.Assignor(ICA, lo, hi, 1 if due else 0, version, data)]


class ConnectGroupEvents(RuleBasedStateMachine):
    """The rules drive workers and the world; ``journal`` keeps every record written."""

    def __init__(self) -> None:
        super().__init__()
        self.shard = GroupCoordinatorShard(config=CONFIG, metadata=MetadataImage())
        self.workers: list[SimWorker] = []
        self.connectors: dict[str, int] = {}
        self.journal: list[list[Record]] = []
        self.epochs: dict[str, int] = {}
        self.group_epoch = 0

    # ------------------------------------------------------------------ plumbing

    def handle(self, req: object) -> object:
        result = self.shard.handle(req)
        self.journal.append(result.records)
        return result.response

    def tick(self, now_ms: int) -> None:
        self.journal.append(self.shard.tick(now_ms).records)
        for w in self.workers:
            self.own_clock(w)

    def own_clock(self, w: SimWorker) -> None:
        """Stop everything once the coordinator could have removed this worker."""
        now = self.shard.now_ms
        if w.status != IN:
            return
        if now - w.last_reply_ms >= SESSION_MS or (w.dirty and now - w.clean_ms >= REBALANCE_MS):
            w.runs, w.status, w.epoch, w.must_compute = u.EMPTY, OUT, 0, False

    def image(self) -> MetadataImage:
        return MetadataImage(
            [], [ConnectorMetadata(GROUP, n, t) for n, t in sorted(self.connectors.items())]
        )

    def group(self) -> ConnectGroup | None:
        g = self.shard.groups.get(GROUP)
        return g if isinstance(g, ConnectGroup) else None

    # ------------------------------------------------------------------ one heartbeat

    def beat(self, w: SimWorker, acknowledge: bool = True, lost: bool = False) -> Errors:
        if w.status in (AWAY, DEAD):
            return Errors.NONE
        now = self.shard.now_ms
        if w.status == OUT or w.epoch == 0:  # not given an epoch yet: each beat is a join
            req = m.ConnectGroupHeartbeatRequest(
                GROUP, w.member_id, 0, instance_id=w.instance_id,
                rebalance_timeout_ms=REBALANCE_MS, client_assignors=w.assignors(now),
                server_assignor=ICA if w.versions is None and w.names_server_assignor else None,
                connectors_and_tasks=m.ConnectorsAndTasks(),
            )
            w.runs, w.meta = u.EMPTY, (0, b"")
        else:
            req = m.ConnectGroupHeartbeatRequest(
                GROUP, w.member_id, w.epoch, client_assignors=w.assignors(now),
                connectors_and_tasks=u.to_wire(w.runs),
            )
        reported = w.runs
        resp = self.handle(req)
        if resp.error_code in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            w.runs, w.status, w.epoch, w.must_compute = u.EMPTY, OUT, 0, False
            return resp.error_code
        if resp.error_code not in OK:
            assert resp.error_code in (Errors.UNSUPPORTED_ASSIGNOR, Errors.UNRELEASED_INSTANCE_ID)
            return resp.error_code
        if lost and req.member_epoch != 0:
            w.dirty = True  # the coordinator may now be waiting for a revocation
            return resp.error_code
        w.status, w.epoch, w.last_reply_ms = IN, resp.member_epoch, now
        if resp.error_code == Errors.COMPUTE_ASSIGNMENT:
            w.must_compute = True
        if resp.assignment is None:
            w.clean_ms, w.dirty = now, False  # nothing changed: nothing to revoke
            return resp.error_code
        w.assigned = u.from_wire(resp.assignment.connectors_and_tasks)
        w.meta = (resp.assignment.metadata_version, resp.assignment.metadata_bytes)
        taken = reported - w.assigned  # a reply either takes work away or adds it, never both
        if taken:
            w.dirty = True  # the coordinator waits for it to stop them (rebalance timeout)
        else:
            w.clean_ms, w.dirty = now, False
        w.runs = w.assigned if acknowledge else w.assigned | taken  # slow: still stopping
        return resp.error_code

    def compute(self, w: SimWorker) -> None:
        if w.status == IN and w.must_compute and w.versions is not None:
            w.must_compute = False
            self.journal.append(
                compute_with(self.shard, w.member_id, w.epoch, w.versions, MAX_DELAY_MS)
            )

    # ------------------------------------------------------------------ rules

    @initialize(tasks=st.dictionaries(st.sampled_from(CONNECTOR_NAMES), st.integers(1, 4)))
    def start(self, tasks: dict[str, int]) -> None:
        self.connectors = dict(tasks)
        self.journal.append(self.shard.update_metadata(self.image()).records)

    @precondition(lambda self: len(self.workers) < MAX_WORKERS)
    @rule(static=st.booleans(), versions=st.sampled_from((None, None, *RANGES)))
    def add_worker(self, static: bool, versions: tuple[int, int] | None) -> None:
        i = len(self.workers)
        w = SimWorker(f"w{i}", f"i{i}" if static else None, versions)
        self.workers.append(w)
        self.beat(w)

    @rule(i=st.integers(0, MAX_WORKERS - 1), acknowledge=st.booleans(), lost=st.booleans())
    def heartbeat(self, i: int, acknowledge: bool, lost: bool) -> None:
        if i < len(self.workers):
            self.beat(self.workers[i], acknowledge, lost)

    @rule(i=st.integers(0, MAX_WORKERS - 1))
    def computes(self, i: int) -> None:
        if i < len(self.workers):
            self.compute(self.workers[i])

    @rule(i=st.integers(0, MAX_WORKERS - 1))
    def never_computes(self, i: int) -> None:
        if i < len(self.workers):
            self.workers[i].must_compute = False

    @rule(i=st.integers(0, MAX_WORKERS - 1))
    def leaves(self, i: int) -> None:
        if i < len(self.workers) and self.workers[i].status == IN:
            w = self.workers[i]
            w.runs = u.EMPTY  # stops its work first
            resp = self.handle(m.ConnectGroupHeartbeatRequest(GROUP, w.member_id, -1))
            assert resp.error_code in (Errors.NONE, Errors.UNKNOWN_MEMBER_ID)
            w.status, w.epoch = OUT, 0

    @rule(i=st.integers(0, MAX_WORKERS - 1))
    def leaves_for_a_while(self, i: int) -> None:
        w = self.workers[i] if i < len(self.workers) else None
        if w is not None and w.status == IN and w.instance_id is not None:
            w.runs = u.EMPTY
            req = m.ConnectGroupHeartbeatRequest(GROUP, w.member_id, -2, instance_id=w.instance_id)
            if self.handle(req).error_code == Errors.NONE:
                w.status, w.epoch = AWAY, 0

    @rule(i=st.integers(0, MAX_WORKERS - 1), new_id=st.booleans(), stale=st.booleans())
    def comes_back(self, i: int, new_id: bool, stale: bool) -> None:
        """A returning worker rejoins (epoch 0), under a new member id or its own; or a killed
        one first asks at the epoch it died with (running nothing): UNKNOWN_MEMBER_ID or
        FENCED_MEMBER_EPOCH unless nothing moved since."""
        if i < len(self.workers) and self.workers[i].status in (AWAY, DEAD):
            w = self.workers[i]
            if stale and w.status == DEAD and w.epoch > 0 and not new_id:
                w.status = IN
            else:
                if new_id:
                    w.member_id += "+"
                w.status, w.epoch = OUT, 0
            self.beat(w)

    @rule(i=st.integers(0, MAX_WORKERS - 1), delta=st.sampled_from([-1, 1, 7]))
    def zombie_heartbeat(self, i: int, delta: int) -> None:
        """A heartbeat at a wrong epoch (a delayed retry, a confused client): fenced, unless
        it is the previous epoch and claims nothing beyond the assignment (a lost reply)."""
        if i < len(self.workers) and self.workers[i].status == IN and self.workers[i].epoch > 0:
            w = self.workers[i]
            w.epoch = max(1, w.epoch + delta)
            self.beat(w)

    @rule(i=st.integers(0, MAX_WORKERS - 1))
    def killed(self, i: int) -> None:
        if i < len(self.workers) and self.workers[i].status == IN:
            w = self.workers[i]
            w.runs, w.status, w.must_compute = u.EMPTY, DEAD, False

    @rule(i=st.integers(0, MAX_WORKERS - 1), versions=st.sampled_from((None, *RANGES)))
    def switches_assignor(self, i: int, versions: tuple[int, int] | None) -> None:
        if i < len(self.workers) and self.workers[i].status == IN:
            w = self.workers[i]
            old, w.versions, w.must_compute = w.versions, versions, False
            w.names_server_assignor = versions is None
            if versions is None and w.epoch > 0:
                req = m.ConnectGroupHeartbeatRequest(
                    GROUP, w.member_id, w.epoch, server_assignor=ICA,
                    connectors_and_tasks=u.to_wire(w.runs),
                )
                resp = self.handle(req)
                if resp.error_code in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
                    w.runs, w.status, w.epoch = u.EMPTY, OUT, 0
            elif self.beat(w) == Errors.UNSUPPORTED_ASSIGNOR:
                w.versions = old  # refused: the worker keeps the assignor it had

    @rule(ms=st.sampled_from(TIME_STEPS_MS))
    def time_passes(self, ms: int) -> None:
        self.tick(self.shard.now_ms + ms)

    @rule(name=st.sampled_from(CONNECTOR_NAMES), tasks=st.integers(0, 5))
    def connector_changes(self, name: str, tasks: int) -> None:
        if tasks == 0:
            self.connectors.pop(name, None)
        else:
            self.connectors[name] = tasks
        self.journal.append(self.shard.update_metadata(self.image()).records)

    # ------------------------------------------------------------------ invariants

    @invariant()
    def no_unit_is_held_by_two_workers(self) -> None:
        group = self.group()
        seen: dict[u.Unit, str] = {}
        for mid, mem in (group.members.items() if group else ()):
            for unit in mem.held:
                assert unit not in seen, f"{unit} held by {seen[unit]} and {mid}"
                seen[unit] = mid
        running: dict[u.Unit, str] = {}
        for w in self.workers:
            for unit in w.runs:
                assert unit not in running, f"{unit} run by {running[unit]} and {w.member_id}"
                running[unit] = w.member_id

    @invariant()
    def a_worker_runs_only_what_the_coordinator_lets_it_hold(self) -> None:
        group = self.group()
        for w in self.workers:
            if w.runs:
                assert group is not None and w.member_id in group.members, w
                assert w.runs <= group.members[w.member_id].held, w

    @invariant()
    def epochs_never_go_back_nor_pass_the_groups(self) -> None:
        group = self.group()
        if group is None:
            return
        assert group.group_epoch >= self.group_epoch
        assert group.assignment_epoch <= group.group_epoch
        self.group_epoch = group.group_epoch
        seen = {}
        for mid, mem in group.members.items():
            assert mem.member_epoch <= group.group_epoch
            if mem.member_epoch >= 0:
                assert mem.member_epoch >= self.epochs.get(mid, 0), (mid, mem.member_epoch)
                seen[mid] = mem.member_epoch
        self.epochs = seen

    # ------------------------------------------------------------------ convergence

    def teardown(self) -> None:
        group = self.group()
        live = [w for w in self.workers]
        for w in live:
            if w.status in (AWAY, DEAD):
                w.status = OUT
        wanted = u.configured(self.connectors)
        for _ in range(80):
            for w in live:
                self.beat(w)
                self.compute(w)
            group = self.group()
            members = [w for w in live if w.status == IN]
            running = [unit for w in members for unit in w.runs]
            if (
                group is not None
                and group.state == "stable"
                and sorted(running) == sorted(wanted)
                and all(w.runs == group.members[w.member_id].assigned for w in members)
            ) or not members:
                return
            self.tick(self.shard.now_ms + 500)
        raise AssertionError(
            f"no convergence: {group.state if group else None}, "
            f"missing {sorted(wanted - {x for w in live for x in w.runs})}"
        )


SETTINGS = settings(
    max_examples=200,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_connect_groups_keep_single_ownership_monotonic_epochs_and_converge():
    run_state_machine_as_test(ConnectGroupEvents, settings=SETTINGS)
