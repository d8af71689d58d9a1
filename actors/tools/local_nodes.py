"""A Ray cluster of several nodes on one machine, for tests and benchmarks of node faults.

``ray.cluster_utils.Cluster``: a head and workers, each its own raylet. The head's health checks
are short so that a killed or frozen node is declared dead within seconds (Ray's defaults take
about 15 s for a killed raylet and 60 s for a frozen one), yet loose enough that a loaded
2-core machine does not lose a live node. What a real cluster does differently is in
``node_faults`` and docs/architecture.md.
"""

from __future__ import annotations

import os

# A node missing 5 checks in a row (one a second, each given 1 s) is dead: measured here, a
# killed node in 4-7 s (refused at once), a frozen one in ~10 s (each check times out).
HEALTH = {"health_check_period_ms": 1000, "health_check_timeout_ms": 1000,
          "health_check_failure_threshold": 5, "health_check_initial_delay_ms": 0}


class LocalNodes:
    """The cluster: its ``ray.cluster_utils.Cluster`` and its worker nodes by node id."""

    def __init__(self, workers: int = 2, head_cpus: int = 2) -> None:
        from ray.cluster_utils import Cluster as RayNodes

        os.environ.setdefault("RAY_worker_niceness", "0")
        os.environ.setdefault("RAY_raylet_start_wait_time_s", "120")  # a loaded machine
        self.raynodes = RayNodes(
            initialize_head=True,
            head_node_args={"num_cpus": head_cpus, "include_dashboard": False,
                            "object_store_memory": 128 << 20, "_system_config": HEALTH},
        )
        self.workers = {}
        for _ in range(workers):
            self.add()
        self.raynodes.wait_for_nodes()

    @property
    def address(self) -> str:
        return self.raynodes.address

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

    def replace_dead(self, alive: list[str]) -> int:
        """Replace every worker not in ``alive`` (the GCS's alive node ids) by a fresh one;
        how many. All are removed before any is added: ``wait_for_nodes`` counts every node
        the cluster still lists, dead ones included."""
        dead = [n for n in self.workers if n not in alive]
        for node_id in dead:
            self.raynodes.remove_node(self.workers.pop(node_id), allow_graceful=False)
        for _ in dead:
            self.add()
        self.raynodes.wait_for_nodes()
        return len(dead)

    def raylet_pid(self, node_id: str) -> int:
        return self.workers[node_id].all_processes["raylet"][0].process.pid

    def shutdown(self) -> None:
        self.raynodes.shutdown()
