"""Chaos with real Kafka consumers in the groups: their callbacks' timelines are held to the
same invariants as the Ray consumers'."""

import pytest

from actors.tools.chaos_kafka import run_chaos

pytestmark = pytest.mark.ray


def test_chaos_with_real_kafka_consumers_in_the_groups_ends_with_no_violations(
        cluster, tmp_path):
    report = run_chaos(cluster, seconds=20, workdir=tmp_path, groups=2, consumers=2,
                       partitions=6, seed=11, progress=False, kafka_clients=2)
    print(report.summary())
    kafka_events = [p for p in tmp_path.glob("kafka-*.jsonl") if p.read_text().strip()]
    assert len(kafka_events) == 2  # both real consumers took part and left timelines
    assert report.partition_kills >= 1 and report.commits > 0
    assert report.violations == [], report.summary()
