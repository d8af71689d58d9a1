"""Cohort in front of a real upstream (Tansu 0.6, without KIP-848 or share groups, and Apache
Kafka 4.4): real clients bootstrap at Cohort's gateway only, their records live upstream, and
Cohort coordinates their groups."""

from __future__ import annotations

import struct
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

from actors.upstream.link import UpstreamUnavailable
from actors.upstream.relay import DEPENDS_ON_BODY, NOT_RELAYED, OWN_KEYS, UPSTREAMS_OWN_ROWS
from protocol import messages as m
from protocol.errors import CoordinatorError, Errors
from tests.gateway.conftest import unique, wait_for

QUIET = {"log_level": 3}


def _produce(bootstrap: str, topic: str, n: int, partitions: int) -> list[tuple]:
    """``n`` records with keys, values, headers and timestamps; what was sent, in the order
    each partition's log holds them (a retried batch may land behind a later one: the
    delivery reports say where each went; idempotence keeps a retry from writing twice)."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True,
                  **QUIET})
    sent, landed, failed = [], {}, []

    def report(i: int):
        return lambda err, msg: failed.append(err) if err else landed.__setitem__(
            i, msg.offset())

    # Timestamps of now: Kafka rolls a segment whose first record is older than segment.ms
    # (7 days) at once, and its retention check (30 s after start) deletes what is older than
    # retention.ms: records stamped years ago vanish, and a reader resets past them.
    now_ms = int(time.time() * 1000)
    for i in range(n):
        rec = (i % partitions, f"k{i}".encode(), f"value-{i}".encode(),
               [("h", f"{i}".encode())], now_ms + i)
        p.produce(topic, key=rec[1], value=rec[2], partition=rec[0], headers=rec[3],
                  timestamp=rec[4], on_delivery=report(i))
        sent.append(rec)
    assert p.flush(30) == 0 and not failed and len(landed) == n
    return [rec for _, rec in sorted(zip(range(n), sent, strict=True),
                                     key=lambda pair: (pair[1][0], landed[pair[0]]))]


def _read_all(bootstrap: str, topic: str, partitions: int, n: int, **conf) -> list[tuple]:
    """Every record of ``topic`` from the beginning, by ``assign`` (no group)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": unique("reader"),
                  "enable.auto.commit": False, **QUIET, **conf})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        msg = c.poll(0.5)
        if msg is not None and not msg.error():
            got.append((msg.partition(), msg.key(), msg.value(), msg.headers(),
                        msg.timestamp()[1]))
    c.close()
    return got


def test_records_produced_through_cohort_land_upstream_whole(cohort, upstream):
    topic = unique("whole")
    cohort.create_topic(topic, 2)
    sent = _produce(cohort.bootstrap, topic, 40, 2)
    direct = _read_all(upstream.bootstrap, topic, 2, 40)
    assert sorted(direct) == sorted(sent)
    through_cohort = _read_all(cohort.bootstrap, topic, 2, 40)
    assert sorted(through_cohort) == sorted(sent)


def test_a_kip848_group_reads_the_upstreams_records_and_commits_in_cohort(cohort, upstream):
    topic, group = unique("orders"), unique("g")
    cohort.create_topic(topic, 4)
    _produce(upstream.bootstrap, topic, 200, 4)  # real data, written upstream directly
    consumers = [Consumer({"bootstrap.servers": cohort.bootstrap, "group.id": group,
                           "group.protocol": "consumer", "auto.offset.reset": "earliest",
                           "enable.auto.commit": False, **QUIET}) for _ in range(2)]
    for c in consumers:
        c.subscribe([topic])
    seen: set[tuple[int, int]] = set()
    deadline = time.monotonic() + 90
    while len(seen) < 200 and time.monotonic() < deadline:
        for c in consumers:
            msg = c.poll(0.2)
            if msg is not None and not msg.error():
                seen.add((msg.partition(), msg.offset()))
                c.commit(message=msg, asynchronous=False)
    assert len(seen) == 200
    reply = cohort.call(m.OffsetFetchRequest(group_id=group))
    committed = {(t.name, p.partition_index): p.committed_offset
                 for t in reply.topics for p in t.partitions}
    assert committed == {(topic, p): 50 for p in range(4)}
    described = cohort.describe(group)
    assert described.group_state == "stable" and len(described.members) == 2
    for c in consumers:
        c.close()


def test_clients_only_ever_see_cohorts_listeners(cohort, upstream):
    topic = unique("faces")
    cohort.create_topic(topic, 3)
    md = AdminClient({"bootstrap.servers": cohort.bootstrap, **QUIET}).list_topics(timeout=20)
    ports = {b.port for b in md.brokers.values()}
    assert upstream.port not in ports
    import ray

    from actors.gateway.launch import running_gateway

    stats = ray.get(running_gateway().stats.remote())
    presented = {port for _, port in stats["upstream_listeners"].values()}
    assert presented and presented <= ports
    leaders = {p.leader for p in md.topics[topic].partitions.values()}
    assert leaders <= set(stats["upstream_listeners"])


def test_a_topic_created_through_the_gateway_is_created_upstream_and_in_the_image_at_once(
        cohort, upstream):
    topic = unique("made-here")
    admin = AdminClient({"bootstrap.servers": cohort.bootstrap, **QUIET})
    admin.create_topics([NewTopic(topic, 3)])[topic].result(30)
    assert {t.name: t.num_partitions for t in cohort.topics()}.get(topic) == 3  # no waiting
    direct = AdminClient({"bootstrap.servers": upstream.bootstrap, **QUIET})
    assert len(direct.list_topics(topic, timeout=20).topics[topic].partitions) == 3



@pytest.mark.parametrize("upstream", ["tansu"], indirect=True)
def test_growing_a_topic_tansu_cannot_grow_is_refused_as_unsupported(cohort):
    topic = unique("fixed")
    cohort.create_topic(topic, 2)
    with pytest.raises(CoordinatorError) as refused:  # Tansu 0.6 serves no CreatePartitions
        cohort.add_partitions(topic, 4)
    assert refused.value.error == Errors.UNSUPPORTED_VERSION
    assert {t.name: t.num_partitions for t in cohort.topics()}[topic] == 2


def test_a_topic_created_directly_upstream_reaches_a_regex_subscription(cohort, upstream):
    prefix = unique("re")
    group = unique("rg")
    c = Consumer({"bootstrap.servers": cohort.bootstrap, "group.id": group,
                  "group.protocol": "consumer", **QUIET})
    c.subscribe([f"^{prefix}-.*"])
    topic = f"{prefix}-later"
    direct = AdminClient({"bootstrap.servers": upstream.bootstrap, **QUIET})
    direct.create_topics([NewTopic(topic, 2)])[topic].result(30)

    def assigned():
        c.poll(0.2)
        return {(tp.topic, tp.partition) for tp in c.assignment()} == {(topic, 0), (topic, 1)}

    wait_for(assigned, timeout_s=60)
    c.close()


@pytest.mark.parametrize("upstream", ["tansu"], indirect=True)
def test_apiversions_advertise_cohorts_group_protocols_that_tansu_lacks(cohort, upstream):
    from tests.gateway.wire_client import WireClient

    def versions(bootstrap):
        client = WireClient(bootstrap)
        client.send_raw(struct.pack(">ihhih", 10, 18, 0, 1, -1))
        size = struct.unpack(">i", client._read(4))[0]
        data = client._read(size)
        client.close()
        n = struct.unpack_from(">i", data, 6)[0]
        return {k: (lo, hi) for k, lo, hi in
                (struct.unpack_from(">hhh", data, 10 + 6 * i) for i in range(n))}

    theirs, cohorts = versions(upstream.bootstrap), versions(cohort.bootstrap)
    assert 68 not in theirs and 76 not in theirs
    assert {68, 69, 76, 77} <= set(cohorts)
    assert cohorts[0][1] <= 9 and cohorts[1][1] <= 15
    assert 37 not in cohorts  # Tansu grows no topic: CreatePartitions is not offered
    assert cohorts[69] == (0, 1)  # Tansu lists ConsumerGroupDescribe v0; Cohort's is its own
    # Client telemetry (KIP-714) is neither relayed nor advertised, as Kafka 4.4 without a
    # telemetry plugin: Tansu asks every client to push every 5 s.
    assert 71 in theirs and not NOT_RELAYED & set(cohorts)
    relayed = set(theirs) - OWN_KEYS - UPSTREAMS_OWN_ROWS - DEPENDS_ON_BODY - NOT_RELAYED
    assert relayed  # InitProducerId, DescribeCluster, ...
    for key in relayed:
        assert cohorts.get(key) == theirs[key], key  # relayed as the upstream serves it


@pytest.mark.parametrize("upstream", ["tansu"], indirect=True)
def test_a_topic_the_upstream_creates_on_produce_reaches_cohorts_image(cohort):
    topic = unique("auto")
    p = Producer({"bootstrap.servers": cohort.bootstrap, "message.timeout.ms": 10000, **QUIET})
    errors = []
    p.produce(topic, b"x", on_delivery=lambda err, msg: errors.append(err))
    p.flush(15)
    assert errors == [None]  # Tansu creates topics on first use; Cohort relays its answer
    wait_for(lambda: topic in {t.name for t in cohort.topics()}, timeout_s=30)


def test_an_unreachable_upstream_is_refused_at_start_naming_the_address():
    from actors.cluster import Cluster
    from actors.tools.tansu import free_port

    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(UpstreamUnavailable, match=address) as refused:
        Cluster.start(upstream=address)
    assert "--upstream" in str(refused.value)


def test_cohort_status_shows_the_upstream(cohort, upstream):
    status = cohort.upstream()
    assert status["reachable"] and status["bootstrap"] == upstream.bootstrap
    assert list(status["brokers"]) and status["topics"] >= 1


@pytest.mark.parametrize("upstream", ["kafka"], indirect=True)
def test_growing_a_topic_grows_it_upstream_and_in_the_image_at_once(cohort, upstream):
    topic, group = unique("grow"), unique("gg")
    admin = AdminClient({"bootstrap.servers": cohort.bootstrap, **QUIET})
    admin.create_topics([NewTopic(topic, 2)])[topic].result(30)
    member = Consumer({"bootstrap.servers": cohort.bootstrap, "group.id": group,
                       "group.protocol": "consumer", **QUIET})
    member.subscribe([topic])

    def owns(n: int):
        member.poll(0.1)
        return len(member.assignment()) == n

    wait_for(lambda: owns(2), timeout_s=60)
    epoch = cohort.describe(group).group_epoch
    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(30)
    assert {t.name: t.num_partitions for t in cohort.topics()}[topic] == 5  # no waiting
    wait_for(lambda: owns(5), timeout_s=60)  # seed 002: partitions added bump the epoch
    assert cohort.describe(group).group_epoch > epoch
    cohort.add_partitions(topic, 6)
    direct = AdminClient({"bootstrap.servers": upstream.bootstrap, **QUIET})
    assert len(direct.list_topics(topic, timeout=20).topics[topic].partitions) == 6
    wait_for(lambda: owns(6), timeout_s=60)
    member.close()


INIT_TRANSACTIONS_S = 120


def _init_transactions(p: Producer) -> None:
    """``init_transactions``, called again while its error is retriable, as librdkafka asks
    of its users: the upstream's first transactional producer waits for it to create and load
    ``__transaction_state`` (50 partitions), NOT_COORDINATOR meanwhile, which outlasted one
    30 s call on a machine at load average 80 (ci58, ci59)."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + INIT_TRANSACTIONS_S
    while True:
        try:
            p.init_transactions(30)
            return
        except KafkaException as e:
            if not e.args[0].retriable() or time.monotonic() > deadline:
                raise


def test_a_transactional_producer_works_and_its_offsets_are_refused_clearly(cohort, upstream):
    from confluent_kafka import KafkaException

    topic = unique("txn")
    cohort.create_topic(topic, 1)
    p = Producer({"bootstrap.servers": cohort.bootstrap, "transactional.id": unique("tx"),
                  **QUIET})
    _init_transactions(p)
    p.begin_transaction()
    p.produce(topic, b"committed")
    p.commit_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"aborted")
    group_id = unique("txg")
    group = Consumer({"bootstrap.servers": cohort.bootstrap, "group.id": group_id, **QUIET})
    with pytest.raises(KafkaException) as refused:
        p.send_offsets_to_transaction([TopicPartition(topic, 0, 1)],
                                      group.consumer_group_metadata(), 20)
    assert refused.value.args[0].code() == 35  # UNSUPPORTED_VERSION: Cohort says no
    p.abort_transaction(30)
    reply = cohort.call(m.OffsetFetchRequest(group_id=group_id))
    assert not any(p.committed_offset >= 0 for t in reply.topics for p in t.partitions)
    values = [v for _, _, v, _, _ in _read_all(cohort.bootstrap, topic, 1, 1,
                                                **{"isolation.level": "read_committed"})]
    assert values == [b"committed"]
    group.close()


def test_describing_a_group_shows_its_lag_from_the_upstreams_end_offsets(cohort, upstream):
    from actors.tools.admin_groups import describe_offsets

    topic, group = unique("lag"), unique("lg")
    cohort.create_topic(topic, 2)
    _produce(upstream.bootstrap, topic, 20, 2)  # 10 a partition
    c = Consumer({"bootstrap.servers": cohort.bootstrap, "group.id": group, **QUIET})
    c.commit(offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 10)],
             asynchronous=False)
    c.close()
    rows, _ = describe_offsets(cohort, group)
    assert {(r["partition"], r["current_offset"], r["log_end_offset"], r["lag"])
            for r in rows} == {(0, 4, 10, 6), (1, 10, 10, 0)}


def _list_config_resources(bootstrap: str, types: list[int]) -> set[tuple[int, str]]:
    from protocol.wire.upstream import decode_reply, encode_request
    from tests.gateway.wire_client import WireClient

    client = WireClient(bootstrap)
    client.send_raw(encode_request(74, 1, 5, "list-configs", {"resource_types": types}))
    size = struct.unpack(">i", client._read(4))[0]
    reply = decode_reply(74, 1, client._read(size))
    client.close()
    assert reply["error_code"] == 0
    return {(r["resource_type"], r["resource_name"]) for r in reply["config_resources"]}


@pytest.mark.parametrize("upstream", ["kafka"], indirect=True)
def test_listing_config_resources_lists_cohorts_group_configs_not_the_upstreams(
        cohort, upstream):
    from confluent_kafka.admin import (
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    ours, theirs, topic = unique("cfg-ours"), unique("cfg-theirs"), unique("cfg-topic")
    cohort.set_group_config(ours, consumer_session_timeout_ms=60_000)
    direct = AdminClient({"bootstrap.servers": upstream.bootstrap, **QUIET})
    entry = ConfigEntry("consumer.session.timeout.ms", "60000",
                        incremental_operation=AlterConfigOpType.SET)
    for future in direct.incremental_alter_configs(
            [ConfigResource(ResourceType.GROUP, theirs, incremental_configs=[entry])]).values():
        future.result(30)
    cohort.create_topic(topic, 1)
    wait_for(lambda: (32, theirs) in _list_config_resources(upstream.bootstrap, [32]), 30)
    for types in ([32], [], [2, 32]):
        listed = _list_config_resources(cohort.bootstrap, types)
        assert (32, ours) in listed and (32, theirs) not in listed, types
    everything = _list_config_resources(cohort.bootstrap, [])
    assert (2, topic) in everything  # topics from the image that follows the upstream
    # Topics alone are the upstream's answer, relayed.
    assert (2, topic) in _list_config_resources(cohort.bootstrap, [2])
