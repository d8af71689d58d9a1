"""Cohort in front of a real upstream: a session of its own (its own Ray, and a Cohort whose
controller follows the upstream), as ``scripts/test.sh`` runs it (``-m upstream
tests/upstream``). The upstream is Tansu 0.6 (memory storage, classic groups only: the case
Cohort's upstream mode exists for).
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import RAY_TEST_CONFIG

PARTITIONS = 3


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.upstream)


@pytest.fixture(scope="session")
def tansu():
    from actors.tools.tansu import Tansu

    broker = Tansu().start()
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def cohort(tansu, tmp_path_factory):
    """One Ray and one Cohort in front of the session's Tansu, with its gateway."""
    import ray

    from actors.cluster import Cluster

    os.environ.setdefault("RAY_worker_niceness", "0")
    ray.init(address="local", namespace="cohort", include_dashboard=False, log_to_driver=False,
             num_cpus=2, object_store_memory=256 << 20)
    c = Cluster.start(num_partitions=PARTITIONS,
                      storage_path=str(tmp_path_factory.mktemp("cohort-data")),
                      config=RAY_TEST_CONFIG, upstream=tansu.bootstrap,
                      upstream_config={"metadata.poll.interval.ms": 500})
    c.bootstrap = c.start_gateway(port=0)
    yield c
    c.stop_gateway()
    c.shutdown()
    ray.shutdown()
