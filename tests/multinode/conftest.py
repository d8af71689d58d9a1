"""A Ray cluster of several nodes on this machine, and one Cohort spread over it.

``ray.cluster_utils.Cluster``: a head and two workers, each its own raylet, the head's health
checks short so that a killed or frozen node is declared dead within seconds (each test
measures what it relies on). These tests cannot share the main run's Ray: they run in a
pytest session of their own (``-m multinode tests/multinode``, as ``scripts/test.sh`` does).
A test that takes a node away puts a fresh one back (``replace``), so each starts with three.
"""

from __future__ import annotations

import os
import time

import pytest

from tests.conftest import RAY_TEST_CONFIG

# A node missing 5 checks a second apart (each given 2 s) is dead: seconds, not Ray's ~15 s
# (SIGKILL) or ~60 s (SIGSTOP), yet not so tight that a loaded machine loses a live node.
HEALTH = {"health_check_period_ms": 1000, "health_check_timeout_ms": 2000,
          "health_check_failure_threshold": 5, "health_check_initial_delay_ms": 0}
WORKERS = 2
PARTITIONS = 3


class Nodes:
    """The test cluster: its ``ray.cluster_utils.Cluster`` and node handles by node id."""

    def __init__(self) -> None:
        from ray.cluster_utils import Cluster as RayNodes

        self.raynodes = RayNodes(
            initialize_head=True,
            head_node_args={"num_cpus": 2, "include_dashboard": False,
                            "object_store_memory": 128 << 20, "_system_config": HEALTH},
        )
        self.workers = {}
        for _ in range(WORKERS):
            self.add()

    def add(self):
        node = self.raynodes.add_node(num_cpus=1, object_store_memory=96 << 20)
        self.workers[node.node_id] = node
        return node

    def replace(self, node_id: str, removed: bool) -> None:
        """After ``node_id`` died: forget it (``remove_node`` it unless ``removed``) and start
        a fresh worker in its place."""
        node = self.workers.pop(node_id)
        if not removed:
            self.raynodes.remove_node(node, allow_graceful=False)
        self.add()
        self.raynodes.wait_for_nodes()

    def raylet_pid(self, node_id: str) -> int:
        return self.workers[node_id].all_processes["raylet"][0].process.pid


@pytest.fixture(scope="session")
def nodes():
    import ray

    os.environ.setdefault("RAY_worker_niceness", "0")
    os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")  # a loaded machine is slow
    n = Nodes()
    ray.init(address=n.raynodes.address, namespace="cohort", log_to_driver=False)
    n.raynodes.wait_for_nodes()
    yield n
    ray.shutdown()
    n.raynodes.shutdown()


@pytest.fixture
def cohort(nodes, tmp_path):
    """A fresh Cohort spread over the three nodes, its storage a directory every node sees (one
    machine); each test its own, since a node's death leaves the partitions bunched up."""
    from actors.cluster import Cluster

    c = Cluster.start(num_partitions=PARTITIONS, storage_path=str(tmp_path / "shared"),
                      config=RAY_TEST_CONFIG, shared_storage=True)
    yield c
    c.shutdown()


def poll(predicate, timeout_s: float = 60.0, every_s: float = 0.1):
    """``predicate()``'s first truthy value, or fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(every_s)
