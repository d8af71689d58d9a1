"""Kafka's admin clients against the gateway: topics, group configs, group listing,
describing, deleting, offsets, and a producer told clearly that nothing is produced."""

from __future__ import annotations

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, Producer
from confluent_kafka.admin import AdminClient
from kafka.admin import (
    ConfigResource,
    ConfigResourceType,
    KafkaAdminClient,
    NewPartitions,
    NewTopic,
)

from actors.tools.admin_configs import group_config
from protocol import messages as m
from tests.gateway.conftest import unique, wait_for, whole

pytestmark = pytest.mark.ray


@pytest.fixture
def kafka_python_admin(gateway):
    admin = KafkaAdminClient(bootstrap_servers=gateway, client_id="admin-test")
    yield admin
    admin.close()


def test_topics_are_created_grown_and_deleted_with_kafka_pythons_admin(cluster,
                                                                        kafka_python_admin):
    name = unique("admin-topic")
    kafka_python_admin.create_topics([NewTopic(name, 3, 1)])
    assert {t.name: t.num_partitions for t in cluster.topics()}[name] == 3
    kafka_python_admin.create_partitions({name: NewPartitions(5)})
    assert {t.name: t.num_partitions for t in cluster.topics()}[name] == 5
    kafka_python_admin.delete_topics([name])
    assert name not in {t.name for t in cluster.topics()}


def test_group_configs_are_set_and_described_with_incremental_alter_configs(
        cluster, kafka_python_admin):
    group = unique("admin-cfg")
    resource = ConfigResource(ConfigResourceType.GROUP, group,
                              {"consumer.heartbeat.interval.ms": "1000"})
    kafka_python_admin.alter_configs([resource], raise_on_unknown=False, incremental=True)
    assert group_config(cluster, group).consumer_heartbeat_interval_ms == 1000
    described = kafka_python_admin.describe_configs(
        [ConfigResource(ConfigResourceType.GROUP, group)], config_filter="all")
    text = str(described)
    assert "consumer.heartbeat.interval.ms" in text and "1000" in text


def test_confluents_admin_lists_describes_and_deletes_groups_and_reads_offsets(
        cluster, gateway, members):
    topic, group, idle = unique("admin-t"), unique("admin-g"), unique("admin-idle")
    cluster.create_topic(topic, 2)
    member = members.add(gateway, group, [topic], commit_interval_s=0.2)
    wait_for(lambda: whole([member], [(topic, 0), (topic, 1)]))
    cluster.call(m.OffsetCommitRequest(group_id=idle, topics=[m.OffsetCommitRequestTopic(
        topic, [m.OffsetCommitRequestPartition(0, 7)])]))
    admin = AdminClient({"bootstrap.servers": gateway})
    listed = admin.list_consumer_groups().result()
    assert group in {g.group_id for g in listed.valid}
    described = admin.describe_consumer_groups([group])[group].result()
    assert len(described.members) == 1 and str(described.state).endswith("STABLE")
    offsets = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(idle)])[idle].result()
    assert [(tp.topic, tp.partition, tp.offset) for tp in offsets.topic_partitions] == [
        (topic, 0, 7)]
    admin.delete_consumer_groups([idle])[idle].result()
    assert cluster.call(m.OffsetFetchRequest(group_id=idle)).topics == []


def test_a_producer_is_told_the_stream_takes_no_records(cluster, gateway):
    topic = unique("admin-produce")
    cluster.create_topic(topic, 1)
    reports = []
    producer = Producer({"bootstrap.servers": gateway, "message.timeout.ms": 10_000,
                         "retries": 0})
    producer.produce(topic, b"x", partition=0, on_delivery=lambda err, msg: reports.append(err))
    wait_for(lambda: producer.flush(0.1) == 0 and reports)
    assert reports[0] is not None and "invalid request" in str(reports[0]).lower()
