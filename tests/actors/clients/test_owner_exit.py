"""Client actors leave their group when the driver that spawned them exits (owner_watch.py)."""

import os
import subprocess
import sys
import textwrap
import time

import pytest
import ray

from protocol import messages as m
from tests.actors.ray_helpers import eventually

pytestmark = pytest.mark.ray

# Far above how long the test waits: members that vanish went by leaving, not by expiring.
SESSION_TIMEOUT_MS = 60_000
LEAVE_PATIENCE_S = 45.0  # Ray notices a driver gone in seconds, more on a loaded machine

DRIVER = textwrap.dedent(
    """
    import sys, time
    import ray
    from actors.cluster import Cluster

    cluster = Cluster.connect(sys.argv[1])
    group, topic, connect_group = sys.argv[2], sys.argv[3], sys.argv[4]
    consumers = [
        cluster.spawn_consumer(group, topics=[topic]),
        cluster.spawn_consumer(group, topics=[topic], protocol="classic"),
    ]
    # A classic Connect worker: its session timeout is its own (a KIP-848 Connect group's is
    # the broker's, too short here to tell a leave from an expiry).
    worker = cluster.spawn_worker(connect_group, protocol="classic",
                                  session_timeout_ms=int(sys.argv[5]))
    deadline = time.monotonic() + 90
    while not all(ray.get([c.assignment.remote() for c in consumers])) or (
            ray.get(worker.info.remote())["state"] != "stable"):
        assert time.monotonic() < deadline, "no assignment"
        time.sleep(0.2)
    pids = [ray.get(c.stats.remote())["pid"] for c in consumers]
    print("pids", *pids, ray.get(worker.info.remote())["pid"], flush=True)
    """
)


def test_consumers_leave_their_group_when_the_driver_that_spawned_them_exits(cluster):
    group, topic, connect_group = "owner-exit-g", "owner-exit", "owner-exit-connect"
    cluster.create_topic(topic, 4)
    cluster.set_group_config(group, consumer_session_timeout_ms=SESSION_TIMEOUT_MS)
    address = ray.get_runtime_context().gcs_address
    done = subprocess.run([sys.executable, "-c", DRIVER, address, group, topic, connect_group,
                           str(SESSION_TIMEOUT_MS)],
                          capture_output=True, text=True, timeout=180)
    exited_at = time.monotonic()
    assert done.returncode == 0, done.stderr[-3000:]
    pids = [int(p) for p in done.stdout.split("pids", 1)[1].split()]
    assert len(pids) == 3
    # (The driver saw all three in their groups before it exited.)

    eventually(lambda: cluster.describe(group).members == [], LEAVE_PATIENCE_S)
    eventually(lambda: cluster.call(m.DescribeGroupsRequest([connect_group])).groups[0]
               .members == [], LEAVE_PATIENCE_S)
    assert time.monotonic() - exited_at < SESSION_TIMEOUT_MS / 1000  # left; did not expire
    # ... and the actors themselves are gone, not left running detached.
    eventually(lambda: not any(os.path.exists(f"/proc/{pid}") for pid in pids), 30.0)
