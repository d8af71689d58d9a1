"""Real clients read the synthetic stream through the gateway's Fetch: from an offset inside a
cached chunk, across several chunks a reply carries, each offset once, in order, with its
value. librdkafka (confluent-kafka), kafka-python and aiokafka each parse the replies their own
way (the records of several batches in one partition, records below the fetch offset to skip).
"""

from __future__ import annotations

import asyncio
import time

import pytest

from protocol.wire.stream import CHUNK_RECORDS, MAX_CHUNKS_PER_PARTITION
from tests.gateway.conftest import unique

pytestmark = pytest.mark.ray

# Mid-chunk, and far enough to need several replies of several chunks each.
START = 3 * CHUNK_RECORDS + 123
WANTED = 3 * MAX_CHUNKS_PER_PARTITION * CHUNK_RECORDS
DEADLINE_S = 60.0


def _check(read: list[tuple[int, bytes]]) -> None:
    assert [o for o, _ in read] == list(range(START, START + WANTED))
    assert all(v == str(o).encode() for o, v in read)


def _confluent(gateway: str, topic: str) -> list[tuple[int, bytes]]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": gateway, "group.id": unique("g"), "log_level": 0,
                  "enable.auto.commit": False})
    read: list[tuple[int, bytes]] = []
    try:
        c.assign([TopicPartition(topic, 1, START)])
        deadline = time.monotonic() + DEADLINE_S
        while len(read) < WANTED and time.monotonic() < deadline:
            for m in c.consume(500, 0.1):
                assert m.error() is None, m.error()
                read.append((m.offset(), m.value()))
    finally:
        c.close()
    return read[:WANTED]


def _kafka_python(gateway: str, topic: str) -> list[tuple[int, bytes]]:
    from kafka import KafkaConsumer, TopicPartition

    c = KafkaConsumer(bootstrap_servers=gateway, enable_auto_commit=False)
    read: list[tuple[int, bytes]] = []
    try:
        tp = TopicPartition(topic, 1)
        c.assign([tp])
        c.seek(tp, START)
        deadline = time.monotonic() + DEADLINE_S
        while len(read) < WANTED and time.monotonic() < deadline:
            for records in c.poll(timeout_ms=100, max_records=2_000).values():
                read += [(r.offset, r.value) for r in records]
    finally:
        c.close()
    return read[:WANTED]


def _aiokafka(gateway: str, topic: str) -> list[tuple[int, bytes]]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def run() -> list[tuple[int, bytes]]:
        c = AIOKafkaConsumer(bootstrap_servers=gateway, enable_auto_commit=False)
        await c.start()
        read: list[tuple[int, bytes]] = []
        try:
            tp = TopicPartition(topic, 1)
            c.assign([tp])
            c.seek(tp, START)
            deadline = time.monotonic() + DEADLINE_S
            while len(read) < WANTED and time.monotonic() < deadline:
                batch = await c.getmany(tp, timeout_ms=100, max_records=2_000)
                read += [(r.offset, r.value) for r in batch.get(tp, [])]
        finally:
            await c.stop()
        return read[:WANTED]

    return asyncio.run(run())


@pytest.mark.parametrize("client", [_confluent, _kafka_python, _aiokafka])
def test_a_client_reads_every_offset_from_mid_chunk_once_in_order(cluster, gateway, client):
    topic = unique("fetch")
    cluster.create_topic(topic, 2)
    _check(client(gateway, topic))
