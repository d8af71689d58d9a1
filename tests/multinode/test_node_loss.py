"""Cohort on three Ray nodes: spread partitions, a node's death, a frozen node's zombie."""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path

import psutil
import pytest
import ray

from actors.cluster import Cluster
from actors.runtime.controller import CONTROLLER_NAME
from actors.runtime.placement_nodes import StoragePlacementError, alive_nodes, node_of_actors
from actors.runtime.ray_driver import named_actor_exists
from actors.tools.node_faults import wait_dead
from protocol import messages as m
from protocol.errors import Errors
from tests.actors.ray_helpers import eventually as poll
from tests.conftest import RAY_TEST_CONFIG
from tests.multinode.conftest import PARTITIONS

pytestmark = pytest.mark.multinode
FENCED_LOG_LINE = "a newer incarnation owns the storage"


def test_local_storage_on_several_nodes_is_refused_and_starts_nothing(nodes, tmp_path):
    with pytest.raises(StoragePlacementError, match="3 alive nodes") as refused:
        Cluster.start(num_partitions=2, storage_path=str(tmp_path / "local"),
                      config=RAY_TEST_CONFIG)
    assert refused.value.error == Errors.INVALID_CONFIG
    assert not named_actor_exists(CONTROLLER_NAME)
    assert not (tmp_path / "local").exists()


def test_spread_partitions_serve_again_elsewhere_after_a_node_is_killed_or_drained(
        cohort, nodes):
    where = node_of_actors()
    assert {where[f"offsets-{p}"] for p in range(PARTITIONS)} == set(alive_nodes())
    # One worker killed (its raylet SIGKILLed), then the other drained (graceful removal):
    # each one's partition moves with its group and committed offset.
    for graceful in (False, True):
        p, victim = _partition_on_a_worker(nodes)
        group, topic = _seed(cohort, p, f"loss-{graceful}", offset=41)
        before = cohort.describe(group)
        started = time.monotonic()
        nodes.raynodes.remove_node(nodes.workers[victim], allow_graceful=graceful)
        dead_s = wait_dead(victim)
        poll(lambda p=p, victim=victim:
             node_of_actors().get(f"offsets-{p}") not in (None, victim))
        assert _committed(cohort, group, topic) == 41
        served_s = time.monotonic() - started
        after = cohort.describe(group)
        assert after.error_code == Errors.NONE and after.group_epoch >= before.group_epoch
        print(f"node {'drained' if graceful else 'killed'}: declared dead in {dead_s:.1f} s, "
              f"offsets-{p} serving elsewhere {served_s:.1f} s after")
        nodes.workers.pop(victim)
    while len(nodes.workers) < 2:
        nodes.add()
    nodes.raynodes.wait_for_nodes()


@pytest.mark.parametrize("cohort", ["shared-dir", "s3"], indirect=True)
def test_a_frozen_node_s_partition_comes_back_as_a_zombie_that_appends_nothing(cohort, nodes):
    p, victim = _partition_on_a_worker(nodes)
    group, topic = _seed(cohort, p, "zombie", offset=7)
    old_pid = ray.get(cohort.partition(p).info.remote())["pid"]
    raylet = psutil.Process(nodes.raylet_pid(victim))
    frozen = [raylet, *raylet.children(recursive=True)]
    assert old_pid in [proc.pid for proc in frozen]
    for proc in frozen:
        proc.send_signal(signal.SIGSTOP)
    try:
        # A commit that reaches the old incarnation while it is frozen: it runs when the
        # process resumes, after a newer incarnation took the log over.
        late = cohort.partition(p).handle.remote(_commit(group, topic, 999))
        dead_s = wait_dead(victim)
        poll(lambda: node_of_actors().get(f"offsets-{p}") not in (None, victim))
        assert _committed(cohort, group, topic) == 7
        new_pid = ray.get(cohort.partition(p).info.remote())["pid"]
        assert new_pid != old_pid
        psutil.Process(old_pid).send_signal(signal.SIGCONT)  # its raylet stays frozen
        poll(lambda: _logged(old_pid, FENCED_LOG_LINE), timeout_s=60)
        with pytest.raises(ray.exceptions.RayError):
            ray.get(late, timeout=30)
        assert _committed(cohort, group, topic) == 7
        cohort.kill_partition(p)  # reload from the log: the zombie's commit is not in it
        assert _committed(cohort, group, topic) == 7
        print(f"frozen node declared dead in {dead_s:.1f} s; zombie pid {old_pid} fenced")
    finally:
        for proc in frozen:
            with contextlib.suppress(psutil.Error):
                proc.send_signal(signal.SIGKILL)
        nodes.replace(victim, removed=False)


# ---------------------------------------------------------------------------- helpers


def _partition_on_a_worker(nodes) -> tuple[int, str]:
    """A partition on a worker node (not the head), and that node."""
    where = node_of_actors()
    return next((p, where[f"offsets-{p}"]) for p in range(PARTITIONS)
                if where.get(f"offsets-{p}") in nodes.workers)


def _seed(cohort: Cluster, p: int, prefix: str, offset: int) -> tuple[str, str]:
    """A consumer group and a committed offset on partition ``p``."""
    group = next(g for g in (f"{prefix}-{i}" for i in range(1000))
                 if cohort.partition_for(g) == p)
    topic = f"{group}-t"
    cohort.create_topic(topic, 2)
    hb = cohort.call(m.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=f"{group}-member", member_epoch=0,
        rebalance_timeout_ms=10_000, subscribed_topic_names=[topic], topic_partitions=[]))
    assert hb.error_code == Errors.NONE, hb
    committed = cohort.call(_commit(group, topic, offset, member=f"{group}-member",
                                    epoch=hb.member_epoch))
    assert all(x.error_code == Errors.NONE for t in committed.topics for x in t.partitions)
    assert _committed(cohort, group, topic) == offset
    return group, topic


def _commit(group: str, topic: str, offset: int, member: str = "",
            epoch: int = -1) -> m.OffsetCommitRequest:
    return m.OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=epoch, member_id=member,
        topics=[m.OffsetCommitRequestTopic(topic, [m.OffsetCommitRequestPartition(0, offset)])])


def _committed(cohort: Cluster, group: str, topic: str) -> int | None:
    resp = cohort.call(m.OffsetFetchRequest(group_id=group))
    assert resp.error_code == Errors.NONE, resp
    return next((x.committed_offset for t in resp.topics if t.name == topic
                 for x in t.partitions if x.partition_index == 0), None)


def _logged(pid: int, line: str) -> bool:
    """``line`` in the stderr or stdout of Ray worker ``pid`` (the nodes of this machine share
    the session's log directory)."""
    logs = Path(ray._private.worker._global_node.get_logs_dir_path())
    return any(line in path.read_text(errors="replace")
               for path in logs.glob(f"worker-*-{pid}.*"))
