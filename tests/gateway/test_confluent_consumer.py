"""librdkafka (confluent-kafka) with ``group.protocol=consumer`` (KIP-848) through the gateway:
the server assignors, a regex subscription, members joining and leaving, offsets both ways,
a group shared with Ray consumers, and a coordinator killed mid-rebalance."""

from __future__ import annotations

import pytest
import ray

from actors.tools.invariants import check_exclusive_ownership
from protocol import messages as m
from tests.gateway.conftest import unique, wait_for, whole

pytestmark = pytest.mark.ray


def _parts(topic: str, n: int) -> list[tuple[str, int]]:
    return [(topic, p) for p in range(n)]


def _no_overlap(group_id: str, group_members) -> list:
    events = [e for x in group_members for e in x.timeline()]
    return check_exclusive_ownership(events, {}, float("inf"))


def test_three_consumers_converge_on_the_uniform_assignor_and_read_the_stream(
        cluster, gateway, members):
    topic, group = unique("cg-uniform"), unique("g")
    cluster.create_topic(topic, 6)
    group_members = [members.add(gateway, group, [topic]) for _ in range(3)]
    wait_for(lambda: whole(group_members, _parts(topic, 6)))
    described = cluster.wait_stable(group, members=3)
    assert described.assignor_name == "uniform"
    assert {len(x.assignment.topic_partitions[0].partitions) for x in described.members} == {2}
    # as Kafka shows a member's host: InetAddress.toString()
    assert {x.client_host for x in described.members} == {"/127.0.0.1"}
    wait_for(lambda: all(sum(x.processed().values()) > 0 for x in group_members))
    assert all(x.bad_records == 0 for x in group_members)  # record n's value is "n"


def test_the_range_assignor_is_chosen_with_group_remote_assignor(cluster, gateway, members):
    topic, group = unique("cg-range"), unique("g")
    cluster.create_topic(topic, 6)
    conf = {"group.remote.assignor": "range"}
    group_members = [members.add(gateway, group, [topic], config=conf) for _ in range(3)]
    wait_for(lambda: whole(group_members, _parts(topic, 6)))
    described = cluster.wait_stable(group, members=3)
    assert described.assignor_name == "range"
    assert sorted(len(x.assignment()) for x in group_members) == [2, 2, 2]


def test_a_regex_subscription_follows_topics_created_later(cluster, gateway, members):
    prefix = unique("rx")
    cluster.create_topic(f"{prefix}-a", 2)
    cluster.create_topic(f"other-{prefix}", 2)
    group = unique("g")
    group_members = [members.add(gateway, group, [f"^{prefix}-.*"]) for _ in range(2)]
    wait_for(lambda: whole(group_members, _parts(f"{prefix}-a", 2)))
    assert prefix in cluster.describe(group).members[0].subscribed_topic_regex
    cluster.create_topic(f"{prefix}-b", 2)
    wait_for(lambda: whole(group_members, _parts(f"{prefix}-a", 2) + _parts(f"{prefix}-b", 2)))


def test_a_fourth_member_joins_and_one_leaves_without_double_ownership(cluster, gateway, members):
    topic, group = unique("cg-churn"), unique("g")
    cluster.create_topic(topic, 8)
    group_members = [members.add(gateway, group, [topic]) for _ in range(3)]
    wait_for(lambda: whole(group_members, _parts(topic, 8)))
    group_members.append(members.add(gateway, group, [topic]))
    wait_for(lambda: whole(group_members, _parts(topic, 8)))
    leaver = group_members.pop(1)
    leaver.stop(leave=True)
    wait_for(lambda: whole(group_members, _parts(topic, 8)))
    cluster.wait_stable(group, members=3)
    assert _no_overlap(group, [*group_members, leaver]) == []


def test_commits_made_on_the_wire_are_read_back_through_cluster_call(cluster, gateway, members):
    topic, group = unique("cg-commit"), unique("g")
    cluster.create_topic(topic, 2)
    member = members.add(gateway, group, [topic], commit_interval_s=0.2)
    wait_for(lambda: whole([member], _parts(topic, 2)))

    def committed_by_member():
        resp = cluster.call(m.OffsetFetchRequest(group_id=group))
        got = {(t.name, p.partition_index): p.committed_offset
               for t in resp.topics for p in t.partitions}
        return got if len(got) == 2 and all(o > 0 for o in got.values()) else None

    got = wait_for(committed_by_member)
    processed = member.processed()
    assert all(0 < got[tp] <= processed[tp] for tp in got)


def test_offsets_committed_through_cluster_call_are_where_a_real_consumer_starts(
        cluster, gateway, members):
    topic, group = unique("cg-resume"), unique("g")
    cluster.create_topic(topic, 1)
    resp = cluster.call(m.OffsetCommitRequest(group_id=group, topics=[
        m.OffsetCommitRequestTopic(topic, [m.OffsetCommitRequestPartition(0, 1234)])]))
    assert resp.topics[0].partitions[0].error_code == 0
    member = members.add(gateway, group, [topic])
    wait_for(lambda: member.processed().get((topic, 0), 0) > 1234)
    member.stop(leave=True)  # closes the open processed range into the timeline
    first = min(e["from"] for e in member.timeline() if e["event"] == "processed")
    assert first == 1234


def test_a_ray_consumer_and_a_confluent_consumer_share_one_group(cluster, gateway, members):
    topic, group = unique("cg-mixed"), unique("g")
    cluster.create_topic(topic, 4)
    ray_consumer = cluster.spawn_consumer(group, topics=[topic])
    real = members.add(gateway, group, [topic])

    def shared():
        ray_owned = [tuple(tp) for tp in ray.get(ray_consumer.assignment.remote())]
        owned = sorted(ray_owned + real.assignment())
        return ray_owned and real.assignment() and owned == _parts(topic, 4)

    wait_for(shared)
    described = cluster.wait_stable(group, members=2)
    assert {x.client_id for x in described.members} >= {f"cohort-{group}"}
    ray.get(ray_consumer.stop.remote(leave=True))
    wait_for(lambda: real.assignment() == _parts(topic, 4))


def test_a_coordinator_killed_mid_rebalance_leaves_the_real_clients_converging(
        cluster, gateway, members):
    topic, group = unique("cg-kill"), unique("g")
    cluster.create_topic(topic, 6)
    # Sessions long enough that a loaded machine's slow reload expires no one: this test is
    # about the kill; a member whose session expires while its revocation is under way keeps
    # processing until it learns so (KIP-848's zombie window), which is another scenario.
    cluster.set_group_config(group, consumer_session_timeout_ms=30_000)
    group_members = [members.add(gateway, group, [topic]) for _ in range(3)]
    wait_for(lambda: whole(group_members, _parts(topic, 6)))
    cluster.wait_stable(group, members=3)
    group_members.append(members.add(gateway, group, [topic]))
    wait_for(lambda: cluster.describe(group).group_state in ("assigning", "reconciling"),
             every_s=0.01)
    cluster.kill_partition(cluster.partition_for(group))
    try:
        wait_for(lambda: whole(group_members, _parts(topic, 6)), timeout_s=120)
    except AssertionError:  # say where each side stands
        described = cluster.describe(group)
        state = [(x.member_id(), sorted(x.assignment()), x.errors[-3:]) for x in group_members]
        raise AssertionError(f"not converged: clients {state}; coordinator {described}") from None
    cluster.wait_stable(group, members=4)
    assert _no_overlap(group, group_members) == []

