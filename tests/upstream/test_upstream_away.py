"""An upstream that goes away: its clients get the errors a broker failure gives, Cohort keeps
serving their groups, and everything carries on once it is back. The upstream is frozen
(SIGSTOP), as a hung broker or a cut network leaves connections that answer nothing."""

from __future__ import annotations

import os
import signal
import time

from confluent_kafka import Consumer, KafkaError, Producer

from tests.gateway.conftest import unique, wait_for

QUIET = {"log_level": 3}


def test_a_frozen_upstream_fails_produces_keeps_groups_and_recovers(cohort, upstream):
    topic, group = unique("away"), unique("ga")
    cohort.create_topic(topic, 2)
    consumers = [Consumer({"bootstrap.servers": cohort.bootstrap, "group.id": group,
                           "group.protocol": "consumer", "auto.offset.reset": "earliest",
                           **QUIET}) for _ in range(2)]
    for c in consumers:
        c.subscribe([topic])

    def both_assigned():
        for c in consumers:
            c.poll(0.1)
        return all(len(c.assignment()) == 1 for c in consumers)

    wait_for(both_assigned, timeout_s=60)
    before = cohort.describe(group)
    os.kill(upstream.pid, signal.SIGSTOP)
    try:
        p = Producer({"bootstrap.servers": cohort.bootstrap, "message.timeout.ms": 3000,
                      **QUIET})
        failed = []
        p.produce(topic, b"while away", on_delivery=lambda err, msg: failed.append(err))
        p.flush(15)
        assert failed and failed[0] is not None  # as a dead broker's producer sees it
        assert failed[0].code() in (KafkaError._MSG_TIMED_OUT, KafkaError._TRANSPORT,
                                    KafkaError.REQUEST_TIMED_OUT)
        deadline = time.monotonic() + 8  # several session timeouts' worth of heartbeats
        while time.monotonic() < deadline:
            for c in consumers:
                c.poll(0.1)
        during = cohort.describe(group)
        assert during.group_state == "stable"
        assert during.group_epoch == before.group_epoch  # nobody fenced, nothing moved
        assert all(len(c.assignment()) == 1 for c in consumers)
    finally:
        os.kill(upstream.pid, signal.SIGCONT)
    p = Producer({"bootstrap.servers": cohort.bootstrap, **QUIET})
    for i in range(10):
        p.produce(topic, f"back-{i}".encode(), partition=i % 2)
    assert p.flush(30) == 0
    got = set()

    def all_read():
        for c in consumers:
            msg = c.poll(0.1)
            if msg is not None and not msg.error():
                got.add(msg.value())
        return {f"back-{i}".encode() for i in range(10)} <= got

    wait_for(all_read, timeout_s=60)
    wait_for(lambda: cohort.upstream()["reachable"], timeout_s=30)
    for c in consumers:
        c.close()
