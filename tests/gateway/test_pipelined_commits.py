"""Pipelined commits through a coordinator's death: 8 real clients (confluent-kafka) each send
asynchronous OffsetCommits back to back, many in flight on one connection and sharing the
partition's turns; the partition actor is killed among them. Every commit a client saw
acknowledged before the kill is there after, nothing the clients did not send is, and every
commit is answered.

The test does not ask for the last acknowledged offset at the end: librdkafka retries a commit
that failed in flight (the connection broke, or the restarted partition was still loading),
and a retry may land after newer commits, which Kafka, like Cohort, applies in the order they
arrive. Seen here: acknowledgements 105, 129, 130, 106, 107, 128, 101..104, and 104 committed
last. A retry never goes below what was acknowledged before the kill: a retried commit was
unanswered at the kill or sent after it, and a connection's replies come in order, so it is
newer than every commit acknowledged by then.
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from protocol import messages as m
from tests.gateway.conftest import unique, wait_for

pytestmark = pytest.mark.ray

CLIENTS = 8
PARTITIONS = 2
KILL_AFTER_ACKS = 400
IN_FLIGHT = 32  # commits a client keeps unanswered at most (its pipelining window)
MAX_COMMITS = 200_000  # a bound, never reached: the clients stop well after the restart


def _groups_on(cluster, p: int, n: int) -> list[str]:
    """``n`` fresh group ids that all hash to partition ``p`` (so one kill hits them all)."""
    found: list[str] = []
    while len(found) < n:
        g = unique("pipe")
        if cluster.partition_for(g) == p:
            found.append(g)
    return found


class _Client:
    """One consumer that commits ``offset`` to each partition for offset = 1, 2, ...,
    asynchronously, up to IN_FLIGHT unanswered, polling for acknowledgements; it remembers,
    per partition, the highest offset acknowledged and the highest sent."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.group, self.topic = group, topic
        self.acked = dict.fromkeys(range(PARTITIONS), 0)
        self.sent = dict.fromkeys(range(PARTITIONS), 0)
        self.calls = self.callbacks = self.acks = 0
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                  "enable.auto.commit": False, "on_commit": self._on_commit,
                                  "log_level": 0})

    def _on_commit(self, err, parts) -> None:
        self.callbacks += 1
        if err is not None:
            return
        for tp in parts:
            if tp.error is None:
                self.acked[tp.partition] = max(self.acked[tp.partition], tp.offset)
                self.acks += 1

    def run(self, stop: threading.Event) -> None:
        offset = 0
        while not stop.is_set() and offset < MAX_COMMITS:
            offset += 1
            parts = [TopicPartition(self.topic, p, offset) for p in range(PARTITIONS)]
            self.consumer.commit(offsets=parts, asynchronous=True)
            self.calls += 1
            self.sent = dict.fromkeys(range(PARTITIONS), offset)
            while self.calls - self.callbacks >= IN_FLIGHT and not stop.is_set():
                self.consumer.poll(0.01)
        deadline = time.monotonic() + 60
        while self.callbacks < self.calls and time.monotonic() < deadline:
            self.consumer.poll(0.05)  # every commit's callback in: acknowledged or failed
        self.consumer.close()


def test_every_acknowledged_pipelined_commit_survives_a_partition_kill(cluster, gateway):
    topic = unique("pipe-t")
    cluster.create_topic(topic, PARTITIONS)
    p = cluster.partition_for(unique("g"))
    clients = [_Client(gateway, g, topic) for g in _groups_on(cluster, p, CLIENTS)]
    stop = threading.Event()
    threads = [threading.Thread(target=c.run, args=(stop,), daemon=True) for c in clients]
    for t in threads:
        t.start()
    wait_for(lambda: sum(c.acks for c in clients) >= KILL_AFTER_ACKS, timeout_s=120)
    before = {c.group: dict(c.acked) for c in clients}  # all acknowledged by the old partition
    cluster.kill_partition(p)
    # The clients go on through the restart until each has new commits acknowledged.
    wait_for(lambda: all(c.acked[0] > before[c.group][0] + 50 for c in clients), timeout_s=120)
    stop.set()
    for t in threads:
        t.join(90)
    assert not any(t.is_alive() for t in threads)
    assert all(c.callbacks == c.calls for c in clients), "a commit was never answered"
    for c in clients:
        resp = cluster.call(m.OffsetFetchRequest(group_id=c.group))
        committed = {pt.partition_index: pt.committed_offset
                     for t in resp.topics for pt in t.partitions}
        for part in range(PARTITIONS):
            assert before[c.group][part] <= committed[part] <= c.sent[part], (
                c.group, part, before[c.group][part], committed[part], c.acked[part])
