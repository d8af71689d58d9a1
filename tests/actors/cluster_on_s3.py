"""``Cluster.start(storage_path="s3://...")`` end to end, in a process of its own (its own
Ray: the session's Cohort must stay untouched). Run by ``test_cluster_on_s3.py`` with the
AWS_* variables of a running SeaweedFS and the URL as argument; exits 0 when every check held.

Checks: the partitions and the Controller serve from the bucket (the AWS_* variables reached
them through ``runtime_env``); a commit and a topic survive a full shutdown and a new start
(the marker is adopted, the logs reloaded); the objects are where the layout says.
"""

from __future__ import annotations

import os
import sys

import ray

from actors.cluster import Cluster
from actors.runtime.object_slots import AWS_VARS, ObjectOps, open_store
from actors.runtime.storage_marker import MARKER, read_marker
from protocol import messages as m
from protocol.errors import Errors
from tests.local_ray import start_local_ray


def commit(cluster: Cluster, offset: int) -> int:
    resp = cluster.call(m.OffsetCommitRequest(group_id="s3-group", topics=[
        m.OffsetCommitRequestTopic("s3-topic", [m.OffsetCommitRequestPartition(0, offset)])
    ]))
    return resp.error_code or resp.topics[0].partitions[0].error_code


def fetched(cluster: Cluster) -> dict[int, int]:
    resp = cluster.call(m.OffsetFetchRequest(group_id="s3-group"))
    return {p.partition_index: p.committed_offset for t in resp.topics for p in t.partitions}


def main(url: str) -> int:
    # Ray starts without the AWS_* variables, so its workers reach the bucket only if
    # Cluster.start hands them on (runtime_env), as on a cluster started elsewhere.
    aws = {k: os.environ.pop(k) for k in AWS_VARS if k in os.environ}
    start_local_ray(object_store_memory=128 << 20)
    os.environ.update(aws)
    cluster = Cluster.start(num_partitions=2, storage_path=url)
    assert cluster.storage_path == url, cluster.storage_path
    cluster.create_topic("s3-topic", 2)
    assert commit(cluster, 42) == Errors.NONE
    cluster_id = read_marker(url)
    cluster.shutdown()

    again = Cluster.start(num_partitions=2, storage_path=url)
    assert not again.adopted
    assert fetched(again) == {0: 42}, fetched(again)
    assert [t.name for t in again.topics()] == ["s3-topic"]
    assert read_marker(url) == cluster_id  # adopted, not replaced
    keys = ObjectOps().list(open_store(url), "")
    assert MARKER in keys
    assert any(k.startswith("controller/log/") for k in keys), keys
    assert any(k.startswith(f"offsets-{again.partition_for('s3-group')}/log/") for k in keys)
    again.shutdown()
    ray.shutdown()
    print("cluster on s3: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
