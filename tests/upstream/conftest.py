"""Cohort in front of a real upstream: a session of its own (its own Ray, and a Cohort whose
controller follows the upstream), as ``scripts/test.sh`` runs it (``-m upstream
tests/upstream``). Every test runs in front of each upstream, one Cohort after the other
(a session-scoped parameter): Tansu 0.6 (memory storage, classic groups only: the case
Cohort's upstream mode exists for) and Apache Kafka 4.4 itself (the reference broker). A test
about one upstream's limits asks for it alone (``indirect`` parametrization of ``upstream``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from tests.conftest import RAY_TEST_CONFIG
from tests.local_ray import start_local_ray

PARTITIONS = 3


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.upstream)


@dataclass
class Upstream:
    kind: str
    bootstrap: str
    pid: int  # what a test freezes (SIGSTOP) to take the upstream away, and thaws

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])


@pytest.fixture(scope="session", params=["tansu", "kafka"])
def upstream(request):
    """The broker Cohort fronts: Tansu (started here) or the session's reference Kafka."""
    if request.param == "kafka":
        kafka = request.getfixturevalue("reference_kafka")
        yield Upstream("kafka", kafka.bootstrap, kafka.pid)
        return
    from actors.tools.tansu import Tansu

    broker = Tansu().start()
    yield Upstream("tansu", broker.bootstrap, broker.pid)
    broker.stop()


@pytest.fixture(scope="session")
def ray_session():
    import ray

    start_local_ray()
    yield
    ray.shutdown()


@pytest.fixture(scope="session")
def cohort(upstream, ray_session, tmp_path_factory):
    """A Cohort in front of ``upstream``, with its gateway (one per upstream, in turn)."""
    from actors.cluster import Cluster

    c = Cluster.start(num_partitions=PARTITIONS,
                      storage_path=str(tmp_path_factory.mktemp(f"cohort-{upstream.kind}")),
                      config=RAY_TEST_CONFIG, upstream=upstream.bootstrap,
                      upstream_config={"metadata.poll.interval.ms": 500})
    c.bootstrap = c.start_gateway(port=0)
    yield c
    c.stop_gateway()
    c.shutdown()
