"""A real consumer's member id, asked of librdkafka through ctypes (without the GIL): the same
id confluent-kafka's own call returns, and the plain call when the handle cannot be trusted."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer

from actors.clients import member_ids
from actors.clients.member_ids import MemberIds

UNREACHABLE = "127.0.0.1:1"


@pytest.fixture
def consumer():
    # KIP-848 members make their own id (KIP-1082), so it exists before any broker answers.
    c = Consumer({"bootstrap.servers": UNREACHABLE, "group.id": "ids", "client.id": "ids-test",
                  "group.protocol": "consumer", "log_level": 0})
    yield c
    c.close()


def test_the_member_id_asked_without_the_gil_is_librdkafkas(consumer):
    ids = MemberIds(consumer, "ids-test")
    assert ids._rk is not None  # the handle was found and checked
    asked = ids.ask()
    assert asked and asked == consumer.memberid()
    assert ids.last == asked


def test_a_handle_named_for_another_client_is_not_trusted(consumer):
    ids = MemberIds(consumer, "someone-else")
    assert ids._rk is None
    assert ids.ask() == consumer.memberid()


def test_a_member_id_that_does_not_come_in_time_leaves_the_last_one_known(consumer, monkeypatch):
    ids = MemberIds(consumer, "ids-test")
    known = ids.ask()
    monkeypatch.setattr(member_ids, "ASK_TIMEOUT_S", 0.05)
    monkeypatch.setattr(ids, "_ask_c", lambda answer: time.sleep(1.0))
    assert ids.ask() == known
