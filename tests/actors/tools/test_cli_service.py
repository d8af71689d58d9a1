"""``cohort start``, ``status``, ``stop`` and start again, on a Ray of this module's own, as an
operator runs them: the real installed command, one process per command.

The session's Cohort must not be stopped under the other tests, so this module starts a second,
private Ray (a helper process that ``ray.init``s a local one and holds it until its stdin
closes) and points every command at it with ``--address``. Only what this module started is
stopped or killed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from tests.actors.tools.cli_helpers import cohort, cohort_parallel, env, ok, refused

pytestmark = pytest.mark.ray

READY_TIMEOUT_S = 180.0
HELPER = """
import sys, ray
ray.init(namespace="cohort-cli-service-test", include_dashboard=False, log_to_driver=False,
         num_cpus=1, object_store_memory=128 << 20)
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()
ray.shutdown()
"""
# The README's quick start in Python: a plain driver (no Ray settings in its environment)
# attaches to the running Cohort and spawns a consumer.
QUICK_START = """
import sys
from actors.cluster import Cluster
cluster = Cluster.connect(sys.argv[1])
cluster.spawn_consumer("svc-g", topics=["kept"])
print(cluster.wait_stable("svc-g", members=1, timeout_s=120).group_state)
"""
# A stand-in for the Kafka wire gateway (a detached actor named "gateway" in namespace cohort),
# which status shows and stop stops.
GATEWAY_STANDIN = """
import sys, ray
ray.init(address=sys.argv[1], namespace="cohort-cli-service-test", log_to_driver=False)

@ray.remote(num_cpus=0)
class Gateway:
    def info(self):
        return {"bootstrap": "127.0.0.1:9092"}

gateway = Gateway.options(name="gateway", namespace="cohort", lifetime="detached").remote()
ray.get(gateway.info.remote())
"""
# Kills one partition actor for good, from a driver of the private Ray.
KILL_FOR_GOOD = """
import sys, ray
ray.init(address=sys.argv[1], namespace="cohort-cli-service-test", log_to_driver=False)
ray.kill(ray.get_actor(sys.argv[2], namespace="cohort"), no_restart=True)
"""


def _start_private_ray(errors) -> tuple[subprocess.Popen, str]:
    """A helper process holding a local Ray, and that Ray's GCS address ("" if it died)."""
    helper = subprocess.Popen([sys.executable, "-c", HELPER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=errors, text=True, env=env())
    return helper, helper.stdout.readline().strip()


def _stop_private_ray(helper: subprocess.Popen) -> None:
    helper.stdin.close()  # the helper shuts its Ray down and exits
    try:
        helper.wait(timeout=READY_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        helper.kill()
        helper.wait()


@pytest.fixture(scope="module")
def private_ray(tmp_path_factory):
    """The GCS address of a Ray this module owns; shut down (with whatever runs on it) after.
    A local Ray that fails to start on a loaded machine (ci70: the helper printed nothing) is
    started once more; the helper's own error is in the failure if both fail."""
    log = tmp_path_factory.mktemp("private-ray") / "helper.err"
    with log.open("w") as errors:
        helper, address = _start_private_ray(errors)
        if not address:
            _stop_private_ray(helper)
            helper, address = _start_private_ray(errors)
    try:
        assert address, f"the private Ray did not start, twice:\n{log.read_text()[-4000:]}"
        yield address
    finally:
        _stop_private_ray(helper)


def driver(script: str, *args: str) -> subprocess.CompletedProcess:
    """Run ``script`` as a Ray driver of the private Ray (token mode, as cohort's own)."""
    return subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True,
                          env={**env(), "RAY_AUTH_MODE": "token"}, timeout=120)


def status(address: str) -> tuple[int, dict]:
    done = cohort("status", "--json", address=address)
    return done.returncode, json.loads(done.stdout)


def eventually_status(address: str, serving: bool, timeout_s: float = 120.0) -> dict:
    """Poll ``cohort status`` until it reports ``serving`` (exit 0 / 1 to match)."""
    deadline = time.monotonic() + timeout_s
    while True:
        code, report = status(address)
        if report["serving"] is serving and code == (0 if serving else 1):
            return report
        assert time.monotonic() < deadline, report
        time.sleep(0.5)


def test_start_status_stop_and_start_again_keeps_the_data(private_ray, tmp_path):
    address, storage = private_ray, str(tmp_path / "cohort-data")
    # No Cohort yet: every command says which command fixes that.
    before = cohort_parallel({"status": ["status"], "topics": ["topics", "--list"],
                              "groups": ["groups", "--list"], "stop": ["stop"]}, address)
    for done in before.values():
        assert done.returncode == 1, done
        assert "no Cohort cluster is running on this Ray; start one with `cohort start`" in \
            done.stderr, done.stderr

    started = cohort("start", "--partitions", "2", "--storage", storage, "--config",
                     "group.consumer.session.timeout.ms=10000", address=address)
    assert ok(started).startswith(f"Started Cohort: 2 partitions, storage {storage}, on Ray")
    # The command has exited; the actors it started serve on.
    report = eventually_status(address, serving=True)
    assert [r["actor"] for r in report["actors"]] == ["controller", "offsets-0", "offsets-1"]
    assert all(r["restarts"] == 0 for r in report["actors"])
    ok(cohort("topics", "--create", "--topic", "kept", "--partitions", "3", address=address))
    consumed = subprocess.run([sys.executable, "-c", QUICK_START, address], env=env(),
                              capture_output=True, text=True, timeout=300)
    assert consumed.returncode == 0 and consumed.stdout.split()[-1] == "stable", consumed.stderr

    # A partition killed for good: status says so and exits 1; start brings it back.
    killed = driver(KILL_FOR_GOOD, address, "offsets-1")
    assert killed.returncode == 0, killed.stderr
    report = eventually_status(address, serving=False)
    rows = {r["actor"]: r for r in report["actors"]}
    assert rows["offsets-1"]["state"] == "missing" and rows["offsets-0"]["state"] == "active"
    table = cohort("status", address=address)
    assert table.returncode == 1 and "NOT SERVING" in table.stdout
    assert ok(cohort("start", address=address)).startswith("Cohort is already running")
    eventually_status(address, serving=True)

    # A gateway, once one runs, is shown, and stopped with the rest.
    assert driver(GATEWAY_STANDIN, address).returncode == 0
    report = eventually_status(address, serving=True)
    gateway = report["actors"][-1]
    assert (gateway["actor"], gateway["state"]) == ("gateway", "alive")
    assert gateway["info"] == {"bootstrap": "127.0.0.1:9092"}

    stopped = cohort("stop", address=address)
    assert ok(stopped) == (f"Stopped Cohort: controller, offsets-0, offsets-1, gateway. The data "
                           f"stays in {storage}.\n")
    gone = cohort_parallel({"status": ["status"], "stop": ["stop"]}, address)
    refused(gone["status"], "start one with `cohort start`")
    refused(gone["stop"], "nothing to stop")

    again = cohort("start", "--partitions", "2", "--storage", storage, "--json", address=address)
    assert json.loads(ok(again))["started"] is True
    assert ok(cohort("topics", "--list", address=address)).splitlines() == ["kept"]
    ok(cohort("stop", address=address))


def test_start_needs_a_running_ray_and_says_how_to_start_one():
    done = cohort("start", "--address", "127.0.0.1:1")  # nothing listens there
    assert done.returncode == 1
    assert "start one with `ray start --head`" in done.stderr, done.stderr
