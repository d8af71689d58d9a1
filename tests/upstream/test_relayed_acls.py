"""Cohort's SASL and ACLs hold on what it relays: Cohort talks to the upstream as itself, so
a client may produce, fetch or create only what Cohort's ACLs grant it, topic by topic."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from actors.gateway.launch import start_gateway, stop_gateway
from actors.tools import admin_security
from protocol.security.acls import AclBinding
from tests.gateway.conftest import unique

NAME = "gateway-acl"
QUIET = {"log_level": 3}


@pytest.fixture(scope="module")
def secured(cohort):
    """A SASL/PLAIN gateway with the authorizer in front of the upstream; alice may write,
    read and describe the topic ``ok``, only describe ``secret``, and read her group."""
    admin_security.add_user("alice", "alice-secret")
    ok, secret = unique("ok"), unique("secret")
    cohort.create_topic(ok, 1)
    cohort.create_topic(secret, 1)
    admin_security.add_acls([
        *(AclBinding("User:alice", "TOPIC", ok, op) for op in ("WRITE", "READ", "DESCRIBE")),
        AclBinding("User:alice", "TOPIC", secret, "DESCRIBE"),
        AclBinding("User:alice", "GROUP", "acl-reader", "READ")])
    bootstrap = start_gateway(cohort.num_partitions, cohort.config, port=0, name=NAME,
                              sasl_mechanisms=["PLAIN"], authorizer=True,
                              super_users=["User:admin"])
    conf = {"bootstrap.servers": bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": "alice",
            "sasl.password": "alice-secret", **QUIET}
    yield conf, ok, secret
    stop_gateway(NAME)


def test_a_produce_writes_the_granted_topic_and_refuses_the_other_in_one_request(secured):
    conf, ok, secret = secured
    p = Producer({**conf, "linger.ms": 50, "message.timeout.ms": 20_000})
    results: dict[str, KafkaError | None] = {}
    p.produce(ok, b"granted", on_delivery=lambda err, msg: results.setdefault(ok, err))
    p.produce(secret, b"refused", on_delivery=lambda err, msg: results.setdefault(secret, err))
    p.flush(20)
    assert results[ok] is None
    assert results[secret] is not None
    assert results[secret].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED


def test_a_fetch_of_a_topic_not_granted_is_refused(secured, cohort):
    conf, _, secret = secured
    p = Producer({"bootstrap.servers": cohort.bootstrap, **QUIET})
    p.produce(secret, b"x")
    assert p.flush(20) == 0
    c = Consumer({**conf, "group.id": "acl-reader"})
    c.assign([TopicPartition(secret, 0, 0)])
    errors, records = [], []
    deadline = time.monotonic() + 30
    while KafkaError.TOPIC_AUTHORIZATION_FAILED not in errors and time.monotonic() < deadline:
        msg = c.poll(0.2)
        if msg is not None:
            if msg.error():
                errors.append(msg.error().code())
            else:
                records.append(msg)
    c.close()
    assert KafkaError.TOPIC_AUTHORIZATION_FAILED in errors, errors
    assert records == []  # not one record of the topic


def test_creating_a_topic_without_create_is_refused_and_nothing_is_created(secured, cohort):
    conf, _, _ = secured
    name = unique("not-made")
    admin = AdminClient(conf)
    with pytest.raises(Exception) as refused:
        admin.create_topics([NewTopic(name, 1)])[name].result(30)
    assert refused.value.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert name not in {t.name for t in cohort.topics()}
