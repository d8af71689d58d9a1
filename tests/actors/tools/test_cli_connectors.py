"""``cohort connectors`` and ``cohort groups --describe`` of Connect groups, as the real installed
command against the session's Cohort: connectors created, altered, listed and deleted through
the controller; each worker's connectors and tasks shown as the workers themselves run them,
for a group of the new protocol and for a classic Connect group."""

from __future__ import annotations

import json

import pytest
import ray

from actors.tools.invariants import check_connect_converged
from tests.actors.ray_helpers import eventually
from tests.actors.tools.cli_helpers import cohort, cohort_parallel, ok, refused, table

pytestmark = pytest.mark.ray

NEW, CLASSIC, CHANGED = "cli-connect", "cli-connect-classic", "cli-connect-changed"


@pytest.fixture(scope="module")
def address(cluster):
    return ray.get_runtime_context().gcs_address


def _converged(cluster, group: str, workers) -> dict | None:
    """Each worker's assignment, by worker id, once the group runs each unit exactly once."""
    infos = ray.get([w.info.remote() for w in workers])
    by_worker = {(group, i["member_id"]): i["assignment"] for i in infos}
    if check_connect_converged(by_worker, {group: cluster.list_connectors(group)}):
        return None
    return {worker: a for (_, worker), a in by_worker.items()}


@pytest.fixture(scope="module")
def groups(cluster):
    """Two workers of the new protocol and two classic (sessioned) ones, each group running
    a sink of 4 tasks and a source of 2, settled."""
    for g in (NEW, CLASSIC):
        cluster.create_connector(g, "sink", tasks=4)
        cluster.create_connector(g, "source", tasks=2)
    new = [cluster.spawn_worker(NEW) for _ in range(2)]
    classic = [cluster.spawn_worker(CLASSIC, protocol="classic") for _ in range(2)]

    def settled(group, workers):
        """Converged, every worker stable, and the work balanced: a group that is whole
        while the second worker has not been given its share yet is still to rebalance
        (seen: one worker running everything, described a moment later as balanced)."""
        got = _converged(cluster, group, workers)
        if got is None or len(got) != len(workers):
            return None
        states = {i["state"] for i in ray.get([w.info.remote() for w in workers])}
        if states != {"stable"}:
            return None
        for kind in ("connectors", "tasks"):
            shares = [len(a[kind]) for a in got.values()]
            if max(shares) - min(shares) > 1:
                return None
        return got

    owned = {NEW: eventually(lambda: settled(NEW, new), 90),
             CLASSIC: eventually(lambda: settled(CLASSIC, classic), 90)}
    eventually(lambda: cluster.describe_connect(NEW).group_state == "stable")
    yield owned
    ray.get([w.stop.remote(leave=True) for w in new + classic])


@pytest.fixture(scope="module")
def queries(groups, address):
    return cohort_parallel({
        "describe": ["connectors", "--describe", "--group", NEW],
        "describe_json": ["connectors", "--describe", "--group", NEW, "--json"],
        "describe_sink": ["connectors", "--describe", "--group", NEW, "--connector", "sink",
                          "--json"],
        "classic_json": ["connectors", "--describe", "--group", CLASSIC, "--json"],
        "list": ["connectors", "--list", "--group", NEW],
        "groups_describe": ["groups", "--describe", "--group", NEW],
        "groups_members_json": ["groups", "--describe", "--group", CLASSIC, "--members",
                                "--json"],
        "groups_state": ["groups", "--describe", "--group", NEW, "--state", "--json"],
        "missing": ["connectors", "--describe", "--group", "cli-connect-nope"],
    }, address)


def _shown(workers: list[dict]) -> dict[str, dict]:
    return {w["worker_id"]: {"connectors": sorted(w["connectors"]),
                             "tasks": sorted(tuple(t) for t in w["tasks"])} for w in workers}


def _running(owned: dict) -> dict[str, dict]:
    return {w: {"connectors": sorted(a["connectors"]),
                "tasks": sorted(tuple(t) for t in a["tasks"])} for w, a in owned.items()}


def test_describe_shows_each_worker_with_the_connectors_and_tasks_it_runs(queries, groups):
    described = json.loads(ok(queries["describe_json"]))
    assert described["type"] == "connect" and described["state"] == "stable"
    assert described["connectors"] == {"sink": 4, "source": 2}
    assert _shown(described["workers"]) == _running(groups[NEW])
    assert described["unassigned"] == {"connectors": [], "tasks": []}
    lines = ok(queries["describe"]).splitlines()
    assert lines[0].startswith(f"Connect group '{NEW}' (connect): Stable, group epoch ")
    assert "2 workers, 2 connectors, 6 tasks." in lines[0]
    rows = table("\n".join(lines[1:]))
    assert rows[0] == ["GROUP", "WORKER-ID", "INSTANCE-ID", "EPOCH", "STATE", "#CONNECTORS",
                       "#TASKS", "CONNECTORS", "TASKS"]
    assert sum(int(r[6]) for r in rows[1:]) == 6 and sum(int(r[5]) for r in rows[1:]) == 2
    sink = json.loads(ok(queries["describe_sink"]))
    assert {t[0] for w in sink["workers"] for t in w["tasks"]} == {"sink"}
    assert sum(len(w["tasks"]) for w in sink["workers"]) == 4


def test_a_classic_connect_groups_workers_are_decoded_from_their_protocol_bytes(queries, groups):
    described = json.loads(ok(queries["classic_json"]))
    assert described["type"] == "classic" and described["state"] == "stable"
    assert _shown(described["workers"]) == _running(groups[CLASSIC])
    assert sorted(w["state"] for w in described["workers"]) == ["", "leader"]


def test_groups_describe_shows_a_connect_groups_workers_and_state(queries, groups):
    text = ok(queries["groups_describe"])
    assert "WORKER-ID" in text and "TOPIC" not in text
    for worker in groups[NEW]:
        assert worker in text
    members = json.loads(ok(queries["groups_members_json"]))
    assert _shown(members) == _running(groups[CLASSIC])
    [state] = json.loads(ok(queries["groups_state"]))
    assert state["type"] == "connect" and state["members"] == 2
    assert state["assignment_strategy"] == "incremental-cooperative"


def test_list_and_a_missing_group(queries):
    assert table(ok(queries["list"])) == [["GROUP", "CONNECTOR", "TASKS"], [NEW, "sink", "4"],
                                          [NEW, "source", "2"]]
    err = refused(queries["missing"], "GROUP_ID_NOT_FOUND")
    assert "Connect group 'cli-connect-nope' does not exist." in err


def test_create_alter_delete_change_the_controllers_connectors(cluster, address):
    made = cohort_parallel({
        "create": ["connectors", "--create", "--group", CHANGED, "--connector", "a",
                   "--tasks", "3"],
        "create_json": ["connectors", "--create", "--group", CHANGED, "--connector", "b",
                        "--json"],
    }, address)
    assert ok(made["create"]) == f"Created connector a of Connect group {CHANGED}: 3 tasks.\n"
    assert json.loads(ok(made["create_json"])) == {"created": "b", "group": CHANGED, "tasks": 1}
    assert cluster.list_connectors(CHANGED) == {"a": 3, "b": 1}
    ok(cohort("connectors", "--alter", "--group", CHANGED, "--connector", "a", "--tasks", "5",
              address=address))
    assert cluster.list_connectors(CHANGED) == {"a": 5, "b": 1}
    done = cohort_parallel({
        "again": ["connectors", "--create", "--group", CHANGED, "--connector", "a"],
        "alter_missing": ["connectors", "--alter", "--group", CHANGED, "--connector", "zz",
                          "--tasks", "2"],
        "delete_missing": ["connectors", "--delete", "--group", CHANGED, "--connector", "zz",
                           "--json"],
        "bad_name": ["connectors", "--create", "--group", CHANGED, "--connector", " padded"],
        "empty": ["connectors", "--describe", "--group", CHANGED, "--json"],
    }, address)
    assert "Connector a already exists" in refused(done["again"], "DUPLICATE_RESOURCE")
    refused(done["alter_missing"], "RESOURCE_NOT_FOUND")
    refused(done["delete_missing"], "RESOURCE_NOT_FOUND")
    assert json.loads(done["delete_missing"].stdout)["error"] == "RESOURCE_NOT_FOUND"
    refused(done["bad_name"], "INVALID_REQUEST")
    empty = json.loads(ok(done["empty"]))  # connectors but no worker yet: all unassigned
    assert empty["state"] == "empty" and empty["workers"] == []
    assert empty["unassigned"]["connectors"] == ["a", "b"]
    assert len(empty["unassigned"]["tasks"]) == 6
    assert cluster.list_connectors(CHANGED) == {"a": 5, "b": 1}  # the refusals changed nothing
    assert ok(cohort("connectors", "--delete", "--group", CHANGED, "--connector", "a",
                     address=address)) == f"Deleted connector a of Connect group {CHANGED}.\n"
    cluster.delete_connector(CHANGED, "b")
    assert cluster.list_connectors(CHANGED) == {}
    assert ok(cohort("connectors", "--list", "--group", CHANGED, address=address)) == \
        f"Connect group '{CHANGED}' has no connectors.\n"


def test_bad_task_counts_and_usage_are_refused_before_any_connect():
    zero = cohort("connectors", "--create", "--group", "g", "--connector", "c", "--tasks", "0")
    assert refused(zero, "INVALID_CONFIG") == (
        "Error: tasks.max must be in 1..1000000, got 0. (INVALID_CONFIG)\n")
    for argv, says in (
        (["--alter", "--group", "g", "--connector", "c"], "--alter needs --tasks"),
        (["--delete", "--group", "g"], "--delete needs --connector"),
        (["--list", "--group", "g", "--tasks", "2"], "--tasks goes with --create or --alter"),
    ):
        done = cohort("connectors", *argv)
        assert done.returncode == 2 and says in done.stderr, done.stderr
    assert cohort("connectors", "--list").returncode == 2  # --group is required
