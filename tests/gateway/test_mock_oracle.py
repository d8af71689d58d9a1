"""librdkafka's mock cluster as a differential oracle: the same scenario, the same clients,
the same heartbeat interval, against the mock and against Cohort's gateway."""

from __future__ import annotations

import pytest

from actors.tools.kafka_mock import MockCluster
from actors.tools.kafka_scenario import run_scenario
from tests.gateway.conftest import unique

pytestmark = pytest.mark.ray

HEARTBEAT_MS, SESSION_MS, PARTITIONS = 500, 10_000, 8


def test_three_join_a_fourth_joins_one_leaves_converges_on_cohort_as_on_the_mock(
        cluster, gateway):
    topic, group = unique("oracle"), unique("oracle-g")
    cluster.create_topic(topic, PARTITIONS)
    cluster.set_group_config(group, consumer_heartbeat_interval_ms=HEARTBEAT_MS,
                             consumer_session_timeout_ms=SESSION_MS)
    with MockCluster() as mock:
        mock.create_topic(topic, PARTITIONS)
        mock.set_group_consumer_timing(HEARTBEAT_MS, SESSION_MS)
        expected = run_scenario(mock.bootstrap, group, topic, PARTITIONS)
    got = run_scenario(gateway, group, topic, PARTITIONS)
    for side in (expected, got):
        assert [s.converged for s in side.steps] == [True, True, True], side.steps
    for ours, theirs in zip(got.steps, expected.steps, strict=True):
        assert ours.name == theirs.name
        assert sorted(map(len, ours.owners.values())) == sorted(map(len, theirs.owners.values()))
    assert expected.overlaps() == [] and got.overlaps() == []
