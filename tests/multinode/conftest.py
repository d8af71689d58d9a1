"""A Ray cluster of several nodes on this machine, and one Cohort spread over it.

``actors.tools.local_nodes.LocalNodes``: a head and two workers, each its own raylet, the head's
health checks short (each test measures what it relies on). These tests cannot share the main
run's Ray: they run in a pytest session of their own (``-m multinode tests/multinode``, as
``scripts/test.sh`` does). A test that takes a node away puts a fresh one back
(``replace``), and each test gets a fresh Cohort, so each starts spread over three nodes.
"""

from __future__ import annotations

import pytest

from tests.conftest import RAY_TEST_CONFIG

PARTITIONS = 3


@pytest.fixture(scope="session")
def nodes():
    import ray

    from actors.tools.local_nodes import LocalNodes

    n = LocalNodes(workers=2)
    ray.init(address=n.address, namespace="cohort", log_to_driver=False)
    yield n
    ray.shutdown()
    n.shutdown()


@pytest.fixture
def cohort(nodes, tmp_path, request):
    """A fresh Cohort spread over the three nodes; its storage a directory every node sees
    (one machine), or with ``indirect`` param ``"s3"`` a prefix on the session's SeaweedFS."""
    from actors.cluster import Cluster
    from tests.object_store import aws_env

    if getattr(request, "param", "shared-dir") == "s3":
        server = request.getfixturevalue("seaweedfs")
        with aws_env(server.env):
            c = Cluster.start(num_partitions=PARTITIONS, storage_path=server.url(),
                              config=RAY_TEST_CONFIG)
            yield c
            c.shutdown()
        return
    c = Cluster.start(num_partitions=PARTITIONS, storage_path=str(tmp_path / "shared"),
                      config=RAY_TEST_CONFIG, shared_storage=True)
    yield c
    c.shutdown()

