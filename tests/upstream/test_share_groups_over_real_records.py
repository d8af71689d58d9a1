"""Share groups (KIP-932) over an upstream's real records: the upstream (Tansu 0.6 has no
share groups at all) keeps the records, Cohort's gateway plays every share-partition's
leader, and unmodified share consumers (confluent-kafka's ``ShareConsumer``) bootstrapping at
the gateway get the records with their keys, values, headers and timestamps."""

from __future__ import annotations

import json

import ray

from actors.tools.share_scenario import ShareConsumers
from protocol import messages as m
from tests.gateway.conftest import unique, wait_for
from tests.upstream.test_in_front_of_an_upstream import _produce
from tests.upstream.test_ray_consumers_over_real_data import AppendTo, _lines

RECORDS, PARTITIONS = 300, 3


def test_three_share_consumers_split_the_upstreams_records_and_acknowledge_them_all(
        cohort, upstream):
    topic, group = unique("queue"), unique("sg")
    cohort.create_topic(topic, PARTITIONS)
    cohort.set_group_config(group, share_auto_offset_reset="earliest")
    sent = _produce(upstream.bootstrap, topic, RECORDS // 2, PARTITIONS)  # before they join
    # A few records a fetch, so that the three take turns (one fetch could take them all).
    consumers = ShareConsumers(cohort.bootstrap, group, topic, count=3,
                               extra={"max.poll.records": 10}).start()
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


def test_ray_share_consumers_process_the_upstreams_records_and_a_killed_one_loses_none(
        cohort, upstream, tmp_path):
    topic, group = unique("jobs"), unique("rsg")
    cohort.create_topic(topic, 2)
    cohort.set_group_config(group, share_auto_offset_reset="earliest")
    sent = _produce(upstream.bootstrap, topic, 200, 2)
    processed = tmp_path / "processed.jsonl"
    timelines: list = []

    def spawn():
        timelines.append(tmp_path / f"share-{len(timelines)}.jsonl")
        return cohort.spawn_share_consumer(group, topics=[topic], max_records=10,
                                           process=AppendTo(str(processed)),
                                           timeline_path=str(timelines[-1]))

    consumers = [spawn(), spawn()]
    wait_for(lambda: len(_lines(processed)) >= 30, timeout_s=90)
    assert len(_lines(processed)) < len(sent)  # the kill lands mid-run
    ray.kill(consumers.pop(0))  # what it held comes back when its session times out
    consumers.append(spawn())
    offsets = {0: 0, 1: 0}
    expected = set()
    for p, key, value, headers, ts in sent:
        expected.add((p, offsets[p], key.decode(), value.decode(), headers[0][1].decode(), ts))
        offsets[p] += 1
    wait_for(lambda: {tuple(x) for x in _lines(processed)} >= expected, timeout_s=120)
    stats = ray.get([c.stats.remote() for c in consumers])
    ray.get([c.stop.remote(leave=True) for c in consumers])
    assert {tuple(x) for x in _lines(processed)} == expected
    assert all(s["process_errors"] == [] for s in stats)
    # No range whose acknowledgement was confirmed is acquired again (invariant 7).
    events = [json.loads(line) for t in timelines if t.exists()
              for line in t.read_text().splitlines()]
    acked = [(e["partition"], lo, hi, e["t"]) for e in events if e["event"] == "acknowledged"
             for lo, hi, _ in e["ranges"]]
    for e in events:
        if e["event"] == "acquired":
            for p, lo, hi, at in acked:
                overlap = p == e["partition"] and lo <= e["last_offset"] and e["first_offset"] <= hi
                assert not (overlap and e["t"] > at), (e, (p, lo, hi))


def _share_offsets(bootstrap: str, group: str, topic: str | None) -> dict[int, tuple[int, int]]:
    """DescribeShareGroupOffsets v1 at the gateway, as Kafka's admin sends it: each
    partition's (start offset, lag)."""
    import struct

    from protocol.wire.upstream import decode_reply, encode_request
    from tests.gateway.wire_client import WireClient

    topics = None if topic is None else [{"topic_name": topic, "partitions": [0, 1]}]
    client = WireClient(bootstrap)
    client.send_raw(encode_request(90, 1, 3, "share-offsets", {
        "groups": [{"group_id": group, "topics": topics}]}))
    size = struct.unpack(">i", client._read(4))[0]
    reply = decode_reply(90, 1, client._read(size))
    client.close()
    (answer,) = reply["groups"]
    assert answer["error_code"] == 0, answer
    return {p["partition_index"]: (p["start_offset"], p["lag"])
            for t in answer["topics"] for p in t["partitions"]}


def test_a_share_groups_lag_is_counted_to_the_upstreams_end_of_each_partition(
        cohort, upstream):
    topic, group = unique("lagq"), unique("lsg")
    cohort.create_topic(topic, 2)
    cohort.set_group_config(group, share_auto_offset_reset="earliest")
    sent = _produce(upstream.bootstrap, topic, 20, 2)  # 10 a partition
    consumers = ShareConsumers(cohort.bootstrap, group, topic, count=1).start()
    try:
        assert consumers.wait_for(lambda log: len(log.acknowledged()) >= len(sent), 120)
    finally:
        consumers.close()
    _produce(upstream.bootstrap, topic, 4, 2)  # 2 more a partition, not yet delivered
    for named in (topic, None):
        assert wait_for(lambda named=named: _share_offsets(cohort.bootstrap, group, named)
                        == {0: (10, 2), 1: (10, 2)}, timeout_s=30)
