"""Share groups (KIP-932) over an upstream's real records: the upstream (Tansu 0.6 has no
share groups at all) keeps the records, Cohort's gateway plays every share-partition's
leader, and unmodified share consumers (confluent-kafka's ``ShareConsumer``) bootstrapping at
the gateway get the records with their keys, values, headers and timestamps."""

from __future__ import annotations

from actors.tools.share_scenario import ShareConsumers
from protocol import messages as m
from tests.gateway.conftest import unique, wait_for
from tests.upstream.test_in_front_of_an_upstream import _produce

RECORDS, PARTITIONS = 300, 3


def test_three_share_consumers_split_the_upstreams_records_and_acknowledge_them_all(
        cohort, upstream):
    topic, group = unique("queue"), unique("sg")
    cohort.create_topic(topic, PARTITIONS)
    cohort.set_group_config(group, share_auto_offset_reset="earliest")
    sent = _produce(upstream.bootstrap, topic, RECORDS // 2, PARTITIONS)  # before they join
    consumers = ShareConsumers(cohort.bootstrap, group, topic, count=3).start()
    try:
        wait_for(lambda: len(cohort.call(m.ShareGroupDescribeRequest(
            group_ids=[group])).groups[0].members) == 3, timeout_s=60)
        more = _produce(cohort.bootstrap, topic, RECORDS // 2, PARTITIONS)  # through Cohort
        offsets = {p: 0 for p in range(PARTITIONS)}
        expected = {}
        for p, key, value, headers, ts in sent + more:
            expected[(p, offsets[p])] = (key, value, headers, ts)
            offsets[p] += 1
        assert consumers.wait_for(lambda log: log.acknowledged() >= set(expected), 120), (
            len(consumers.log.acknowledged()), consumers.log.errors[-5:])
    finally:
        consumers.close()
    log = consumers.log
    assert log.delivered() == set(expected)  # nothing lost, nothing made up
    assert {k: log.contents[k] for k in expected} == expected
    assert log.redelivered_after_ack() == []
    with log.lock:
        by_consumer = {k for _, k, _, _, _ in log.deliveries}
    assert by_consumer == {0, 1, 2}
