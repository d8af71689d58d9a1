"""Another driver finds the running Cohort by name, and the actors outlive that driver."""

import subprocess
import sys
import textwrap

import pytest
import ray

from protocol.errors import Errors

pytestmark = pytest.mark.ray

SCRIPT = textwrap.dedent(
    """
    import sys
    from actors.cluster import Cluster
    from protocol.errors import CoordinatorError

    cluster = Cluster.connect(sys.argv[1])
    print("partitions", cluster.num_partitions)
    cluster.create_topic("other-driver-topic", 3)
    try:
        cluster.create_topic("other-driver-topic", 3)
    except CoordinatorError as e:
        print("second create:", e.error.name)
    print("group", cluster.describe("other-driver-g").error_code)
    """
)


def test_a_second_driver_connects_by_name_and_its_exit_leaves_the_actors_running(cluster):
    address = ray.get_runtime_context().gcs_address
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, address], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert f"partitions {cluster.num_partitions}" in lines
    assert "second create: TOPIC_ALREADY_EXISTS" in lines
    assert f"group {int(Errors.GROUP_ID_NOT_FOUND)}" in lines
    # That driver is gone; what it did, and every coordinator actor, remain.
    assert "other-driver-topic" in {t.name for t in cluster.topics()}
    states = ray.get([cluster.partition(p).ready.remote() for p in range(cluster.num_partitions)])
    assert states == ["active"] * cluster.num_partitions


def test_start_refuses_a_different_partition_count_than_the_running_cluster(cluster):
    from actors.cluster import Cluster

    with pytest.raises(ValueError, match="already running"):
        Cluster.start(num_partitions=cluster.num_partitions + 1, storage_path="/tmp/unused")


def test_start_adopts_the_running_cluster_with_the_same_partition_count(cluster):
    from actors.cluster import Cluster

    again = Cluster.start(num_partitions=cluster.num_partitions, storage_path="/tmp/unused")
    assert again.storage_path == cluster.storage_path  # the running one's, not the argument
    assert again.partition_for("g1") == cluster.partition_for("g1")
