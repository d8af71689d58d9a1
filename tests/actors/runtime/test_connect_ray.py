"""Connect groups on Ray: connectors live in the controller (durable, pushed to the partitions),
and a Connect group driven by raw ConnectGroupHeartbeat calls settles on them."""

from __future__ import annotations

import time

import pytest
import ray

from protocol import messages as m
from protocol.connect import units as u
from protocol.errors import CoordinatorError, Errors

pytestmark = pytest.mark.ray

DEADLINE_S = 60


def _error(fn, *args, **kwargs) -> Errors:
    with pytest.raises(CoordinatorError) as e:
        fn(*args, **kwargs)
    return e.value.error


class RawWorker:
    """A worker reduced to its heartbeat, sent through ``cluster.call``."""

    def __init__(self, cluster, group_id: str, member_id: str) -> None:
        self.cluster, self.group_id, self.member_id = cluster, group_id, member_id
        self.epoch, self.runs = 0, u.EMPTY

    def heartbeat(self) -> m.ConnectGroupHeartbeatResponse:
        if self.epoch == 0:
            req = m.ConnectGroupHeartbeatRequest(
                self.group_id, self.member_id, 0, rebalance_timeout_ms=30_000,
                connectors_and_tasks=m.ConnectorsAndTasks(),
            )
        else:
            req = m.ConnectGroupHeartbeatRequest(
                self.group_id, self.member_id, self.epoch,
                connectors_and_tasks=u.to_wire(self.runs),
            )
        resp = self.cluster.call(req)
        if resp.error_code == Errors.NONE:
            self.epoch = resp.member_epoch
            if resp.assignment is not None:
                self.runs = u.from_wire(resp.assignment.connectors_and_tasks)
        elif resp.error_code in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            self.epoch, self.runs = 0, u.EMPTY
        return resp


def settle(cluster, group_id: str, workers: list[RawWorker], wanted: u.Units):
    """Heartbeat until describe says stable and the workers run ``wanted``, each unit once."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        for w in workers:
            w.heartbeat()
        group = cluster.describe_connect(group_id)
        running = [unit for w in workers for unit in w.runs]
        if group.group_state == "stable" and sorted(running) == sorted(wanted):
            return group
        assert time.monotonic() < deadline, (group.group_state, sorted(running))
        time.sleep(0.05)


def test_connectors_are_created_listed_altered_deleted_and_bad_input_refused(cluster):
    g = "ray-connect-admin"
    cluster.create_connector(g, "sink", 3)
    cluster.create_connector(g, "src", 1)
    assert cluster.list_connectors(g) == {"sink": 3, "src": 1}
    assert _error(cluster.create_connector, g, "sink", 2) == Errors.DUPLICATE_RESOURCE
    assert _error(cluster.create_connector, g, "other", 0) == Errors.INVALID_CONFIG
    assert _error(cluster.create_connector, g, "other", "3") == Errors.INVALID_CONFIG
    assert _error(cluster.create_connector, g, "", 1) == Errors.INVALID_REQUEST
    assert _error(cluster.create_connector, "", "x", 1) == Errors.INVALID_GROUP_ID
    assert _error(cluster.alter_connector, g, "ghost", 2) == Errors.RESOURCE_NOT_FOUND
    assert _error(cluster.alter_connector, g, "sink", -1) == Errors.INVALID_CONFIG
    assert _error(cluster.delete_connector, g, "ghost") == Errors.RESOURCE_NOT_FOUND
    cluster.alter_connector(g, "sink", 5)
    cluster.delete_connector(g, "src")
    assert cluster.list_connectors(g) == {"sink": 5}
    assert cluster.list_connectors("ray-connect-nobody") == {}


def test_a_connect_group_driven_by_raw_heartbeats_runs_the_controllers_connectors(cluster):
    g = "ray-connect-a"
    cluster.create_connector(g, "sink", 3)
    workers = [RawWorker(cluster, g, f"{g}-w{i}") for i in range(2)]
    group = settle(cluster, g, workers, u.configured({"sink": 3}))
    assert group.connectors == [m.ConnectorTasks("sink", 3)]
    # Connectors and tasks balanced separately, each within one: 1 connector, tasks 2 + 1.
    tasks = sorted(sum(1 for _, t in w.runs if t != u.CONNECTOR) for w in workers)
    assert tasks == [1, 2]
    epoch = group.group_epoch
    # A change in the controller reaches the partition, bumps the epoch, and moves work.
    cluster.alter_connector(g, "sink", 5)
    cluster.create_connector(g, "src", 1)
    group = settle(cluster, g, workers, u.configured({"sink": 5, "src": 1}))
    assert group.group_epoch > epoch
    cluster.delete_connector(g, "sink")
    settle(cluster, g, workers, u.configured({"src": 1}))
    listed = {x.group_id: x for x in cluster.list_groups(types=["connect"])}
    assert listed[g].group_type == "connect" and listed[g].group_state == "stable"


def test_connectors_survive_the_controllers_death(cluster):
    g = "ray-connect-durable"
    cluster.create_connector(g, "sink", 4)
    cluster.alter_connector(g, "sink", 6)
    cluster.create_connector(g, "gone", 1)
    cluster.delete_connector(g, "gone")
    controller = ray.get_actor("controller", namespace="cohort")
    pid = ray.get(controller.__ray_call__.remote(lambda self: __import__("os").getpid()))
    ray.kill(controller, no_restart=False)
    deadline = time.monotonic() + DEADLINE_S
    new_pid = pid
    while new_pid == pid:  # ray.kill is asynchronous: wait for the new process
        assert time.monotonic() < deadline, "the controller did not come back"
        try:
            new_pid = ray.get(controller.__ray_call__.remote(lambda s: __import__("os").getpid()))
        except ray.exceptions.RayActorError:
            time.sleep(0.2)
    assert cluster.list_connectors(g) == {"sink": 6}
    image = ray.get(controller.image.remote())
    assert image.metadata.connectors_of(g) == {"sink": 6}
