"""OffsetsPartition on Ray with its log in an object store (SeaweedFS, a real S3 endpoint).

Extra partition actors next to the session's cluster (whose controller gives them their
metadata), each over a fresh ``s3://`` prefix, given the AWS_* variables through
``runtime_env`` as ``Cluster.start`` does: a commit survives a kill (Ray restarts the actor,
which reloads from the bucket), a second incarnation fences the first, and a partition whose
storage has no marker of its Cohort refuses to serve.
"""

from __future__ import annotations

import pytest
import ray
from ray.exceptions import GetTimeoutError, RayActorError

from actors.runtime.partition import OffsetsPartition
from actors.runtime.storage_factory import actor_runtime_env
from actors.runtime.storage_marker import claim_marker
from protocol.errors import Errors
from tests.actors.ray_helpers import eventually
from tests.actors.runtime.test_partition_durability import TOPIC, commit, fetched
from tests.conftest import RAY_TEST_CONFIG
from tests.object_store import aws_env

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module")
def topic(cluster) -> str:
    if TOPIC not in {t.name for t in cluster.topics()}:
        cluster.create_topic(TOPIC, 4)
    return TOPIC


def incarnation(cluster, url: str, group: str, cluster_id: str | None, state: str = "active"):
    actor = OffsetsPartition.options(runtime_env=actor_runtime_env(url)).remote(
        cluster.partition_for(group), cluster.num_partitions, url, RAY_TEST_CONFIG,
        cluster_id=cluster_id,
    )
    eventually(lambda: ray.get(actor.ready.remote()).startswith(state))
    return actor


def serving_again(actor, old_pid: int) -> bool:
    """A new process of ``actor`` serves (False while Ray is restarting it)."""
    try:
        info = ray.get(actor.info.remote(), timeout=10)
    except (RayActorError, GetTimeoutError):
        return False
    return info["pid"] != old_pid and info["state"] == "active"


def test_a_partition_on_s3_keeps_its_commits_across_a_kill_and_fences_its_zombie(
    cluster, topic, seaweedfs
):
    group = "s3-g"
    with aws_env(seaweedfs.env):
        url = seaweedfs.url()
        cluster_id = claim_marker(url)
        actor = incarnation(cluster, url, group, cluster_id)
        assert commit(actor, group, 7) == Errors.NONE
        pid = ray.get(actor.info.remote())["pid"]
        ray.kill(actor, no_restart=False)  # Ray restarts it; it reloads from the bucket
        eventually(lambda: serving_again(actor, pid))
        assert fetched(actor, group) == (Errors.NONE, {0: 7})

        newer = incarnation(cluster, url, group, cluster_id)  # the old one still runs
        assert commit(actor, group, 8) == Errors.NOT_COORDINATOR
        assert ray.get(actor.ready.remote()) == "fenced"
        assert fetched(newer, group) == (Errors.NONE, {0: 7})

        stranger = incarnation(cluster, url, group, "another-cohort", state="failed")
        assert "belongs to Cohort" in ray.get(stranger.info.remote())["refusal"]
        assert "belongs to Cohort" in ray.get(stranger.ready.remote())  # "failed: ..."
        assert commit(stranger, group, 9) == Errors.COORDINATOR_NOT_AVAILABLE
        assert fetched(newer, group) == (Errors.NONE, {0: 7})  # the stranger wrote nothing
        for handle in (actor, newer, stranger):
            ray.kill(handle)
