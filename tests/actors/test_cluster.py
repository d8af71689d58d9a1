"""Another driver finds the running Cohort by name, and the actors outlive that driver."""

import socket
import subprocess
import sys
import textwrap
import time

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_ray_client_drives_the_running_cohort_through_ray_url(cluster):
    port = _free_port()
    gcs = ray.get_runtime_context().gcs_address
    server = subprocess.Popen(
        [sys.executable, "-m", "ray.util.client.server", "--address", gcs,
         "--host", "127.0.0.1", "--port", str(port), "--mode", "legacy"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the Ray client server did not start"
                time.sleep(0.1)
        script = (
            "from actors.cluster import Cluster\n"
            f"c = Cluster.connect('ray://127.0.0.1:{port}')\n"
            "c.create_topic('via-ray-client', 2)\n"
            "print('partitions', c.num_partitions, c.describe('via-ray-client-g').group_state)\n"
        )
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=120)
    finally:
        server.terminate()
        server.wait(timeout=30)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"partitions {cluster.num_partitions} dead" in done.stdout.splitlines()
    assert "via-ray-client" in {t.name for t in cluster.topics()}
