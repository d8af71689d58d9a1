"""``cohort chaos`` attacks only a Cohort its caller named (actors/tools/chaos_consent.py)."""

import subprocess

import pytest
import ray

from actors.tools.chaos_consent import refusal
from tests.actors.tools.cli_helpers import CHILD_TIMEOUT_S, COHORT, env

WHERE = "10.0.0.5:6379"


def test_chaos_refuses_a_running_cohort_found_without_address_or_yes():
    reason = refusal(cohort_running=True, address=None, yes=False, where=WHERE)
    assert reason is not None
    assert f"--address {WHERE}" in reason and "--yes" in reason


@pytest.mark.parametrize(("running", "address", "yes"), [
    (False, None, False),  # no Cohort there: chaos starts its own
    (True, WHERE, False),  # the caller named the cluster
    (True, None, True),  # the caller said yes
])
def test_chaos_runs_on_its_own_cohort_a_named_one_or_with_yes(running, address, yes):
    assert refusal(running, address, yes, WHERE) is None


@pytest.mark.ray
def test_cohort_chaos_found_through_ray_address_refuses_and_changes_nothing(cluster):
    topics_before = {t.name for t in cluster.topics()}
    pids_before = pids(cluster)
    gcs = ray.get_runtime_context().gcs_address
    done = subprocess.run(
        [COHORT, "chaos", "--steps", "1", "--groups", "1", "--classic-groups", "0",
         "--connect-groups", "0", "--classic-connect-groups", "0"],
        capture_output=True, text=True, timeout=CHILD_TIMEOUT_S,
        env=dict(env(), RAY_ADDRESS=gcs),
    )
    assert done.returncode == 1, done.stderr[-3000:]
    assert "refusing to run: a Cohort is already running" in done.stderr
    assert f"--address {gcs}" in done.stderr and "--yes" in done.stderr
    assert {t.name for t in cluster.topics()} == topics_before  # no chaos topic created
    assert pids(cluster) == pids_before  # no partition killed


def pids(cluster) -> list[int]:
    infos = ray.get([cluster.partition(p).info.remote() for p in range(cluster.num_partitions)])
    return [i["pid"] for i in infos]
