"""OffsetsPartition on Ray: routing, bad input, batching, and acknowledged state after death."""

import time

import pytest
import ray

from actors.runtime.packed import pack, unpack
from protocol import messages as m
from protocol.errors import Errors

pytestmark = pytest.mark.ray


def join(group: str, member: str, topic: str) -> m.ConsumerGroupHeartbeatRequest:
    return m.ConsumerGroupHeartbeatRequest(
        group_id=group, member_id=member, member_epoch=0, rebalance_timeout_ms=10_000,
        subscribed_topic_names=[topic], topic_partitions=[],
    )


def settle(cluster, group: str, topic: str, members: list[str]) -> None:
    """Join, then heartbeat like well-behaved clients (ack what we own) until stable."""
    owned: dict[str, list] = {mid: [] for mid in members}
    epochs = {mid: 0 for mid in members}
    for _ in range(30):
        for mid in members:
            req = join(group, mid, topic) if epochs[mid] == 0 else m.ConsumerGroupHeartbeatRequest(
                group_id=group, member_id=mid, member_epoch=epochs[mid], topic_partitions=owned[mid]
            )
            resp = cluster.call(req)
            assert resp.error_code == Errors.NONE, resp
            epochs[mid] = resp.member_epoch
            if resp.assignment is not None:
                owned[mid] = resp.assignment.assigned_topic_partitions
        if cluster.describe(group).group_state == "stable":
            return
    raise AssertionError(f"{group} did not settle: {cluster.describe(group)}")


def wait_restarted(cluster, p: int, old_pid: int) -> dict:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            info = ray.get(cluster.partition(p).info.remote(), timeout=10)
            if info["pid"] != old_pid and info["state"] == "active":
                return info
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            pass
        time.sleep(0.1)
    raise AssertionError(f"offsets-{p} did not come back")


def test_killed_partition_comes_back_describing_the_group_exactly_as_acknowledged(cluster):
    cluster.create_topic("part-durable", 6)
    group = "part-durable-g"
    cluster.set_group_config(group, consumer_session_timeout_ms=60_000)
    members = ["m-a", "m-b", "m-c"]
    settle(cluster, group, "part-durable", members)
    before = cluster.describe(group)
    p = cluster.partition_for(group)
    old_pid = ray.get(cluster.partition(p).info.remote())["pid"]

    cluster.kill_partition(p)
    info = wait_restarted(cluster, p, old_pid)

    assert cluster.describe(group) == before
    assert info["load"]["records"] > 0 and info["load"]["log_records_per_s"] > 0


def test_partition_refuses_groups_it_does_not_own_with_not_coordinator(cluster):
    group = "part-routing-g"
    wrong = (cluster.partition_for(group) + 1) % cluster.num_partitions
    resp = ray.get(cluster.partition(wrong).handle.remote(join(group, "m1", "x")))
    assert resp.error_code == Errors.NOT_COORDINATOR
    assert cluster.describe(group).error_code == Errors.GROUP_ID_NOT_FOUND


@pytest.mark.parametrize(
    "garbage",
    [
        None,
        "a string",
        42,
        m.ConsumerGroupHeartbeatRequest(group_id=None),
        m.ConsumerGroupHeartbeatRequest(group_id="part-bad-g", member_epoch="zero"),
        m.ConsumerGroupHeartbeatRequest(group_id="part-bad-g", member_epoch=2**40),
        m.ConsumerGroupDescribeRequest(group_ids="not-a-list"),
    ],
)
def test_bad_input_gets_an_error_and_changes_nothing(cluster, garbage):
    p = cluster.partition(0)
    groups_before = ray.get(p.group_ids.remote())
    resp = ray.get(p.handle.remote(garbage))
    code = resp.groups[0].error_code if hasattr(resp, "groups") else resp.error_code
    assert code != Errors.NONE
    assert ray.get(p.group_ids.remote()) == groups_before
    assert ray.get(p.ready.remote()) == "active"


def test_a_batch_that_is_not_a_list_is_refused(cluster):
    (resp,) = ray.get(cluster.partition(0).handle_batch.remote("nope"))
    assert resp.error_code == Errors.INVALID_REQUEST


def test_packed_calls_answer_as_the_plain_ones_do_bad_input_included(cluster):
    p = cluster.partition(0)
    garbage = m.ConsumerGroupHeartbeatRequest(group_id="part-bad-g", member_epoch="zero")
    plain = ray.get(p.handle.remote(garbage))
    packed = unpack(ray.get(p.handle_packed.remote(pack(garbage))))
    assert packed == plain and plain.error_code != Errors.NONE
    (resp,) = unpack(ray.get(p.handle_batch_packed.remote(pack("nope"))))
    assert resp.error_code == Errors.INVALID_REQUEST
    cluster.create_topic("part-packed", 2)
    group = "part-packed-g"
    replies = unpack(ray.get(cluster.coordinator(group).handle_batch_packed.remote(
        pack([join(group, "m1", "part-packed"), join(group, "m2", "part-packed")]))))
    assert [r.error_code for r in replies] == [Errors.NONE, Errors.NONE]
    assert len(cluster.describe(group).members) == 2


def test_many_joins_in_one_batch_bump_the_group_epoch_once(cluster):
    cluster.create_topic("part-batch", 20)
    group = "part-batch-g"
    reqs = [join(group, f"m{i}", "part-batch") for i in range(50)]
    replies = ray.get(cluster.coordinator(group).handle_batch.remote(reqs))
    assert [r.error_code for r in replies] == [Errors.NONE] * 50
    described = cluster.describe(group)
    assert described.group_epoch == 1
    assert {r.member_epoch for r in replies} == {1}
    assert len(described.members) == 50


def test_session_timers_restart_from_load_time_after_a_kill(cluster):
    cluster.create_topic("part-timers", 2)
    group = "part-timers-g"
    settle(cluster, group, "part-timers", ["m-x"])
    last_heartbeat = time.monotonic()
    session_s = cluster.config.group_consumer_session_timeout_ms / 1000
    time.sleep(session_s * 0.6)
    p = cluster.partition_for(group)
    old_pid = ray.get(cluster.partition(p).info.remote())["pid"]
    killed_at = time.monotonic()
    cluster.kill_partition(p)
    wait_restarted(cluster, p, old_pid)
    # Past the session timeout counted from the last heartbeat, still a member: the timer
    # restarted when the partition loaded.
    time.sleep(max(0.0, last_heartbeat + session_s + 0.5 - time.monotonic()))
    assert [mm.member_id for mm in cluster.describe(group).members] == ["m-x"]
    # ...and fenced one session timeout after the load (which came after the kill).
    deadline = killed_at + session_s + 15
    while cluster.describe(group).members:
        assert time.monotonic() < deadline, "the member was never fenced"
        time.sleep(0.2)
    assert time.monotonic() >= killed_at + session_s
