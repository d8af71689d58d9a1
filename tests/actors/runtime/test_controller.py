"""The controller on Ray: topics and group configs, validated, durable across its death."""

import time

import pytest
import ray

from protocol import messages as m
from protocol.errors import CoordinatorError, Errors

pytestmark = pytest.mark.ray


def _error(fn, *args, **kwargs) -> Errors:
    with pytest.raises(CoordinatorError) as e:
        fn(*args, **kwargs)
    return e.value.error


def test_topic_is_created_with_an_id_and_refused_twice(cluster):
    topic_id = cluster.create_topic("ctl-a", 3)
    assert isinstance(topic_id, str) and len(topic_id) == 22
    assert _error(cluster.create_topic, "ctl-a", 3) == Errors.TOPIC_ALREADY_EXISTS
    assert [t.num_partitions for t in cluster.topics() if t.name == "ctl-a"] == [3]


@pytest.mark.parametrize("name", ["", ".", "..", "bad name", "x" * 250, "é"])
def test_illegal_topic_names_are_refused(cluster, name):
    assert _error(cluster.create_topic, name, 1) == Errors.INVALID_TOPIC_EXCEPTION
    assert name not in {t.name for t in cluster.topics()}


@pytest.mark.parametrize("count", [0, -1, 2_000_000, 1.5, "3"])
def test_bad_partition_counts_are_refused(cluster, count):
    assert _error(cluster.create_topic, "ctl-count", count) == Errors.INVALID_PARTITIONS


def test_partitions_only_grow(cluster):
    cluster.create_topic("ctl-grow", 2)
    assert _error(cluster.add_partitions, "ctl-grow", 2) == Errors.INVALID_PARTITIONS
    assert _error(cluster.add_partitions, "ctl-missing", 4) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    cluster.add_partitions("ctl-grow", 5)
    assert [t.num_partitions for t in cluster.topics() if t.name == "ctl-grow"] == [5]


def test_racks_are_kept_and_extended_when_partitions_are_added(cluster):
    cluster.create_topic("ctl-racks", 2, racks=[["r1"], ["r2"]])
    cluster.add_partitions("ctl-racks", 4)
    (topic,) = [t for t in cluster.topics() if t.name == "ctl-racks"]
    assert topic.partition_racks == tuple(frozenset([r]) for r in ["r1", "r2", "r1", "r2"])
    assert _error(cluster.create_topic, "ctl-racks-bad", 2, [["r1"]]) == Errors.INVALID_PARTITIONS


def test_deleted_topic_is_gone(cluster):
    cluster.create_topic("ctl-del", 1)
    cluster.delete_topic("ctl-del")
    assert "ctl-del" not in {t.name for t in cluster.topics()}
    assert _error(cluster.delete_topic, "ctl-del") == Errors.UNKNOWN_TOPIC_OR_PARTITION


@pytest.mark.parametrize(
    "overrides",
    [
        {"consumer_session_timeout_ms": 10},
        {"consumer_heartbeat_interval_ms": 10},
        {"consumer_session_timeout_ms": 2_000, "consumer_heartbeat_interval_ms": 2_000},
        {"consumer_session_timeout_ms": "5000"},
        {"share_delivery_count_limit": 11},
        {"share_record_lock_duration_ms": 1_000},
        {"share_auto_offset_reset": "sometimes"},
        {"share_no_such_config": 1},
    ],
)
def test_invalid_group_configs_are_refused(cluster, overrides):
    assert _error(cluster.set_group_config, "ctl-g-bad", **overrides) == Errors.INVALID_CONFIG


def test_group_config_set_before_the_group_exists_reaches_its_first_heartbeat(cluster):
    cluster.create_topic("ctl-cfg", 1)
    cluster.set_group_config("ctl-g-cfg", consumer_heartbeat_interval_ms=1_234)
    resp = cluster.call(
        m.ConsumerGroupHeartbeatRequest(
            group_id="ctl-g-cfg", member_id="m1", member_epoch=0, rebalance_timeout_ms=5_000,
            subscribed_topic_names=["ctl-cfg"], topic_partitions=[],
        )
    )
    assert resp.error_code == Errors.NONE
    assert resp.heartbeat_interval_ms == 1_234


def test_share_group_configs_reach_the_share_groups_heartbeat_and_fetch(cluster):
    tid = cluster.create_topic("ctl-share", 1)
    cluster.set_group_config("ctl-sg", share_heartbeat_interval_ms=6_000,
                             share_auto_offset_reset="earliest")
    resp = cluster.call(m.ShareGroupHeartbeatRequest("ctl-sg", "s1", 0,
                                                     subscribed_topic_names=["ctl-share"]))
    assert (resp.error_code, resp.heartbeat_interval_ms) == (Errors.NONE, 6_000)
    fetch = cluster.call(m.ShareFetchRequest("ctl-sg", "s1", [m.ShareFetchTopic(
        tid, [m.ShareFetchPartition(0, log_end_offset=3)])]))
    assert [(a.first_offset, a.last_offset) for a in fetch.topics[0].partitions[0].acquired] == [
        (0, 2)]  # earliest: from offset 0, not from the stream's end


def test_topics_and_configs_survive_the_controllers_death(cluster):
    cluster.create_topic("ctl-durable", 4)
    controller = ray.get_actor("controller", namespace="cohort")
    # An internal topic of a streams group: created with its topology's configs, kept with it
    # (and when it grows).
    ray.get(controller.create_topic.remote("ctl-changelog", 2, None, {"cleanup.policy": "compact"}))
    cluster.add_partitions("ctl-changelog", 3)
    cluster.set_group_config("ctl-g-durable", consumer_session_timeout_ms=20_000)
    pid = ray.get(controller.__ray_call__.remote(lambda self: __import__("os").getpid()))
    ray.kill(controller, no_restart=False)
    deadline = time.monotonic() + 60
    new_pid = pid
    while new_pid == pid:  # ray.kill is asynchronous: wait for the new process
        assert time.monotonic() < deadline, "the controller did not come back"
        try:
            new_pid = ray.get(controller.__ray_call__.remote(lambda s: __import__("os").getpid()))
        except ray.exceptions.RayActorError:
            time.sleep(0.2)
    assert [t.num_partitions for t in cluster.topics() if t.name == "ctl-durable"] == [4]
    assert ray.get(controller.topic_configs.remote("ctl-changelog")) == {
        "cleanup.policy": "compact"}
    assert ray.get(controller.topic_configs.remote("ctl-durable")) == {}
    cfg = ray.get(controller.group_config.remote("ctl-g-durable"))
    assert cfg.consumer_session_timeout_ms == 20_000
