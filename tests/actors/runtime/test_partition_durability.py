"""OffsetsPartition on Ray when the ground moves: a zombie incarnation is fenced, and a disk
that fails mid-turn costs that turn's replies (clients retry) but nothing acknowledged.

The partitions here are extra actors over their own storage, next to the session's cluster
(whose controller gives them their metadata): two live incarnations of one partition, or one
whose disk fails while a flag file exists (``FlagFileFaults``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import ray

from actors.runtime.partition import OffsetsPartition
from protocol import messages as m
from protocol.errors import Errors
from tests.actors.ray_helpers import eventually
from tests.actors.runtime.faults import FlagFileFaults
from tests.conftest import RAY_TEST_CONFIG

pytestmark = pytest.mark.ray

TOPIC = "durability-t"


@pytest.fixture(scope="module")
def topic(cluster) -> str:
    cluster.create_topic(TOPIC, 4)
    return TOPIC


def incarnation(cluster, storage: Path, group: str, file_ops=None):
    """Another OffsetsPartition for ``group``'s partition, over ``storage``, once it serves."""
    actor = OffsetsPartition.remote(
        cluster.partition_for(group), cluster.num_partitions, str(storage), RAY_TEST_CONFIG,
        file_ops,
    )
    eventually(lambda: ray.get(actor.ready.remote()) == "active")
    return actor


def sibling(cluster, group: str) -> str:
    """A consumer group on ``group``'s partition (``group`` itself commits as a simple consumer,
    which a group with members would refuse), whose members' sessions outlast the test."""
    found = next(
        f"{group}-{i}" for i in range(1000)
        if cluster.partition_for(f"{group}-{i}") == cluster.partition_for(group)
    )
    cluster.set_group_config(found, consumer_session_timeout_ms=60_000)
    return found


def commit(actor, group: str, offset: int, partition: int = 0) -> int:
    """An offset commit of a simple consumer; the error code it got."""
    req = m.OffsetCommitRequest(group_id=group, topics=[
        m.OffsetCommitRequestTopic(TOPIC, [m.OffsetCommitRequestPartition(partition, offset)])
    ])
    resp = ray.get(actor.handle.remote(req))
    return resp.error_code or resp.topics[0].partitions[0].error_code


def fetched(actor, group: str) -> tuple[int, dict[int, int]]:
    resp = ray.get(actor.handle.remote(m.OffsetFetchRequest(group_id=group)))
    return resp.error_code, {
        p.partition_index: p.committed_offset for t in resp.topics for p in t.partitions
    }


def join(actor, group: str, member: str) -> m.ConsumerGroupHeartbeatResponse:
    return ray.get(actor.handle.remote(m.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=10_000,
        subscribed_topic_names=[TOPIC], topic_partitions=[],
    )))


def described(actor, group: str) -> m.DescribedGroup:
    return ray.get(actor.handle.remote(m.ConsumerGroupDescribeRequest(group_ids=[group]))).groups[0]


def test_a_zombie_incarnation_is_fenced_and_its_writes_never_reach_the_log(
    cluster, topic, tmp_path
):
    group = "fence-g"
    members = sibling(cluster, group)
    old = incarnation(cluster, tmp_path, group)
    assert commit(old, group, 1) == Errors.NONE
    assert join(old, members, "acknowledged").error_code == Errors.NONE

    new = incarnation(cluster, tmp_path, group)  # Ray restarted it; the old one still runs
    assert ray.get(new.info.remote())["epoch"] == ray.get(old.info.remote())["epoch"] + 1

    assert commit(old, group, 2) == Errors.NOT_COORDINATOR
    assert join(old, members, "zombie").error_code == Errors.NOT_COORDINATOR
    assert ray.get(old.ready.remote()) == "fenced"
    assert fetched(old, group)[0] == Errors.NOT_COORDINATOR  # reads stop too

    assert fetched(new, group) == (Errors.NONE, {0: 1})
    assert commit(new, group, 3, partition=1) == Errors.NONE
    ray.kill(new)
    third = incarnation(cluster, tmp_path, group)  # what the log holds, read afresh
    assert fetched(third, group) == (Errors.NONE, {0: 1, 1: 3})
    assert [mm.member_id for mm in described(third, members).members] == ["acknowledged"]
    for actor in (old, third):
        ray.kill(actor)


def test_a_zombie_that_only_reads_is_fenced_before_it_answers(cluster, topic, tmp_path):
    group = "fence-read-g"
    old = incarnation(cluster, tmp_path, group)
    assert commit(old, group, 5) == Errors.NONE
    new = incarnation(cluster, tmp_path, group)
    assert commit(new, group, 6) == Errors.NONE

    assert fetched(old, group)[0] == Errors.NOT_COORDINATOR  # never the stale 5
    assert ray.get(old.ready.remote()) == "fenced"
    assert fetched(new, group) == (Errors.NONE, {0: 6})
    for actor in (old, new):
        ray.kill(actor)


def test_a_failing_disk_withholds_the_turns_replies_and_loses_nothing_acknowledged(
    cluster, topic, tmp_path
):
    group = "disk-g"
    members = sibling(cluster, group)
    flag = tmp_path / "disk-full"
    actor = incarnation(cluster, tmp_path / "data", group, FlagFileFaults(flag, partial=True))
    pid = ray.get(actor.info.remote())["pid"]
    assert commit(actor, group, 1) == Errors.NONE
    assert join(actor, members, "acknowledged").error_code == Errors.NONE
    before = described(actor, members)

    flag.touch()  # the disk fills up
    assert commit(actor, group, 2) == Errors.COORDINATOR_NOT_AVAILABLE
    assert join(actor, members, "lost").error_code == Errors.COORDINATOR_NOT_AVAILABLE
    assert ray.get(actor.ready.remote()) == "recovering"
    assert fetched(actor, group)[0] == Errors.COORDINATOR_NOT_AVAILABLE
    # The reload needs the disk too: while it keeps failing, still not available.
    eventually(lambda: ray.get(actor.info.remote())["load_failures"] >= 2)
    assert ray.get(actor.ready.remote()) == "recovering"
    assert commit(actor, group, 2) == Errors.COORDINATOR_NOT_AVAILABLE

    os.unlink(flag)  # space again
    eventually(lambda: ray.get(actor.ready.remote()) == "active")
    info = ray.get(actor.info.remote())
    assert info["pid"] == pid and info["recoveries"] == 1  # reloaded in place, not restarted
    assert fetched(actor, group) == (Errors.NONE, {0: 1})
    assert described(actor, members) == before
    assert commit(actor, group, 3) == Errors.NONE
    ray.kill(actor)
    again = incarnation(cluster, tmp_path / "data", group)
    assert fetched(again, group) == (Errors.NONE, {0: 3})
    assert described(again, members) == before
    ray.kill(again)


def test_a_partition_whose_disk_fails_at_start_loads_once_it_works(cluster, topic, tmp_path):
    group = "disk-start-g"
    flag = tmp_path / "disk-full"
    flag.touch()
    actor = OffsetsPartition.remote(
        cluster.partition_for(group), cluster.num_partitions, str(tmp_path / "data"),
        RAY_TEST_CONFIG, FlagFileFaults(flag),
    )
    eventually(lambda: ray.get(actor.info.remote())["load_failures"] >= 2)
    info = ray.get(actor.info.remote())
    assert (info["state"], info["epoch"]) == ("loading", None)  # could not take its epoch
    assert commit(actor, group, 1) == Errors.COORDINATOR_LOAD_IN_PROGRESS
    os.unlink(flag)
    eventually(lambda: ray.get(actor.ready.remote()) == "active")
    assert commit(actor, group, 1) == Errors.NONE
    ray.kill(actor)
