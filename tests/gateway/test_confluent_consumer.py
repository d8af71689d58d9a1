"""librdkafka (confluent-kafka) with ``group.protocol=consumer`` (KIP-848) through the gateway."""

from __future__ import annotations

import pytest

from protocol import messages as m
from tests.gateway.conftest import unique, wait_for, whole

pytestmark = pytest.mark.ray


def test_three_consumers_converge_on_the_uniform_assignor_and_read_the_stream(
        cluster, gateway, members):
    topic, group = unique("cg-uniform"), unique("g")
    cluster.create_topic(topic, 6)
    group_members = [members.add(gateway, group, [topic]) for _ in range(3)]
    wait_for(lambda: whole(group_members, [(topic, p) for p in range(6)]))
    described = cluster.wait_stable(group, members=3)
    assert described.assignor_name == "uniform"
    assert {len(x.assignment.topic_partitions[0].partitions) for x in described.members} == {2}
    wait_for(lambda: all(sum(x.processed().values()) > 0 for x in group_members))
    assert all(x.bad_records == 0 for x in group_members)  # record n's value is "n"
