"""Ray Data's ``read_kafka`` pointed at Cohort's gateway reads the upstream's records: its
Metadata, ListOffsets and Fetch are relayed to the upstream and name Cohort's listeners.

In front of Apache Kafka only: ``read_kafka`` bounds each partition's read by ListOffsets
(latest), and Tansu 0.6 answers that with 1 whatever the partition holds (measured; Fetch's
high watermark is right), so in front of Tansu it reads almost nothing, as it does from Tansu
directly. Cohort relays ListOffsets as the upstream answers it."""

from __future__ import annotations

import pytest
import ray

from tests.gateway.conftest import unique
from tests.upstream.test_in_front_of_an_upstream import _produce

RECORDS, PARTITIONS = 300, 3


@pytest.mark.parametrize("upstream", ["kafka"], indirect=True)
def test_ray_data_read_kafka_at_the_gateway_reads_every_upstream_record(cohort, upstream):
    topic = unique("dataset")
    cohort.create_topic(topic, PARTITIONS)
    sent = _produce(upstream.bootstrap, topic, RECORDS, PARTITIONS)
    rows = ray.data.read_kafka(topic, bootstrap_servers=cohort.bootstrap).take_all()
    got = sorted((r["partition"], r["key"], r["value"]) for r in rows)
    assert got == sorted((p, key, value) for p, key, value, _, _ in sent)
    offsets = {}
    for r in rows:
        offsets.setdefault(r["partition"], []).append(r["offset"])
    assert {p: sorted(o) for p, o in offsets.items()} == {
        p: list(range(RECORDS // PARTITIONS)) for p in range(PARTITIONS)}
