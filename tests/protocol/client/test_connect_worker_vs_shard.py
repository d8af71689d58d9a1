"""ConnectWorkerClients against a real coordinator shard and a simulated clock."""

from __future__ import annotations

from actors.tools.invariants import check_connect_exclusive
from protocol import messages as m
from tests.protocol.client.connect_sim import GROUP, HEARTBEAT_MS, SESSION_MS, ConnectSim, units

CONNECTORS = {"sink": 4, "source": 2}


def settle(sim: ConnectSim, limit_ms: int = 5_000) -> None:
    waited = 0
    while not sim.converged():
        assert waited <= limit_ms, {w: (c.state, units(c)) for w, c in sim.clients.items()}
        sim.run(HEARTBEAT_MS)
        waited += HEARTBEAT_MS


def exclusive(sim: ConnectSim) -> None:
    events = [dict(e, group_id=GROUP) for c in sim.clients.values() for e in c.timeline]
    events.sort(key=lambda e: e["t"])
    assert check_connect_exclusive(events, {}, sim.now) == []


def test_three_workers_with_different_version_ranges_run_every_connector_and_task_once():
    sim = ConnectSim(CONNECTORS)
    sim.add("a", versions=(1, 2))
    sim.add("b", versions=(2, 2))
    sim.add("c", versions=(1, 2))
    settle(sim)
    counts = sorted(len(c.owned.tasks) for c in sim.clients.values())
    assert counts == [2, 2, 2]
    assert sorted(len(c.owned.connectors) for c in sim.clients.values()) == [0, 1, 1]
    g = sim.describe()
    assert g.group_state == "stable" and g.group_epoch == g.assignment_epoch
    computed = {w: c.job_stats.installed for w, c in sim.clients.items()}
    assert computed["b"] == 0 and computed["a"] + computed["c"] >= 1  # the widest range computes
    for c in sim.clients.values():
        member = next(mm for mm in g.members if mm.member_id == c.member_id)
        assert member.member_epoch == c.member_epoch
    exclusive(sim)


def test_a_new_worker_gets_a_share_only_after_others_released_it():
    sim = ConnectSim(CONNECTORS)
    sim.add("a")
    settle(sim)
    assert len(units(sim.clients["a"])) == 8
    sim.add("b")
    settle(sim)
    assert sorted(len(units(c)) for c in sim.clients.values()) == [4, 4]
    revoked = {u for e in sim.clients["a"].timeline if e["event"] == "revoked"
               for u in [(c, -1) for c in e["connectors"]] + [tuple(t) for t in e["tasks"]]}
    assert revoked == set(units(sim.clients["b"]))
    exclusive(sim)


def test_a_departed_worker_s_work_returns_after_the_scheduled_delay():
    sim = ConnectSim(CONNECTORS, max_delay_ms=2_000)
    for w in "abc":
        sim.add(w)
    settle(sim)
    victim = sim.clients.pop("c")  # its process dies: no leave, no more heartbeats
    held = set(units(victim))
    sim.run(SESSION_MS + 200)  # the coordinator fences it; its work is held
    assert held and not held & {u for c in sim.clients.values() for u in units(c)}
    sim.run(2_500)  # the delay is over: a worker asks for a rebalance, the work returns
    settle(sim)
    asked = [
        e for c in sim.clients.values() for e in c.timeline if e["event"] == "assigned"
    ]
    assert asked
    assert sorted(len(c.owned.tasks) for c in sim.clients.values()) == [3, 3]


def test_a_worker_that_comes_back_within_the_delay_gets_its_work_back_at_once():
    sim = ConnectSim(CONNECTORS, max_delay_ms=60_000)
    for w in "abc":
        sim.add(w, instance_id=f"host-{w}")
    settle(sim)
    before = set(units(sim.clients["c"]))
    sim.clients["c"].leave()
    sim.run(HEARTBEAT_MS)
    del sim.clients["c"]
    back = sim.add("c2", instance_id="host-c")  # restarted under a new worker id
    settle(sim, limit_ms=2_000)
    assert set(units(back)) == before


def test_connector_changes_reach_the_workers():
    sim = ConnectSim(CONNECTORS)
    sim.add("a")
    sim.add("b")
    settle(sim)
    sim.set_connectors({"sink": 6})
    settle(sim)
    assert sorted(len(c.owned.tasks) for c in sim.clients.values()) == [3, 3]
    assert not any("source" in c.owned.connectors for c in sim.clients.values())
    exclusive(sim)


def test_a_fenced_worker_rejoins_under_its_id_and_gets_work_again():
    sim = ConnectSim(CONNECTORS)
    sim.add("a")
    sim.add("b")
    settle(sim)
    sim.run(SESSION_MS + 500, only=["a"])  # b stalls; the coordinator fences it
    assert len(units(sim.clients["a"])) == 8
    sim.run(2_000)
    settle(sim)
    b = sim.clients["b"]
    assert b.member_id == "b" and [e["event"] for e in b.timeline].count("lost") == 1
    exclusive(sim)


def test_a_worker_leaving_hands_its_work_to_the_others():
    sim = ConnectSim(CONNECTORS)
    for w in "abc":
        sim.add(w)
    settle(sim)
    sim.clients["b"].leave()
    sim.run(HEARTBEAT_MS)
    assert sim.clients["b"].state == "stopped"
    del sim.clients["b"]
    settle(sim)
    assert sorted(len(c.owned.tasks) for c in sim.clients.values()) == [3, 3]
    g = sim.describe()
    assert sorted(mm.member_id for mm in g.members) == ["a", "c"]


def test_the_chosen_worker_installs_for_the_epoch_it_prepared():
    sim = ConnectSim(CONNECTORS)
    a = sim.add("a")
    sent = sim.exchange(a)
    kinds = [type(r).__name__ for r in sent]
    assert kinds[:3] == ["ConnectGroupHeartbeatRequest", "ConnectGroupPrepareAssignmentRequest",
                         "ConnectGroupInstallAssignmentRequest"]
    prepare = sent[1]
    install = sent[2]
    assert isinstance(prepare, m.ConnectGroupPrepareAssignmentRequest)
    assert install.group_epoch == sim.describe().assignment_epoch


def test_workers_whose_delay_runs_out_together_do_not_each_bump_the_epoch():
    """Every worker's assignor holds a departed worker's work until the same deadline, so all
    ask for a rebalance at once; an ask that a computation not yet prepared will read anyway
    needs no epoch of its own (before: one bump per worker)."""
    sim = ConnectSim({f"c{i}": 8 for i in range(5)}, max_delay_ms=5_000)
    for w in "abcd":
        sim.add(w)
    settle(sim, limit_ms=10_000)
    sim.clients["d"].leave()
    sim.run(HEARTBEAT_MS)
    del sim.clients["d"]
    sim.run(4_000)  # the departed worker's work is held
    before = sim.shard.groups[GROUP].group_epoch
    sim.run(2_000)  # the delay runs out for every worker at the same moment
    settle(sim, limit_ms=10_000)
    bumps = sim.shard.groups[GROUP].group_epoch - before
    assert 1 <= bumps < len(sim.clients)
    assert sorted(len(c.owned.tasks) for c in sim.clients.values()) == [13, 13, 14]
    exclusive(sim)
