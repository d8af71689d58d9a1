"""Metadata replies written from a partition template (``protocol/wire/fast_metadata.py``) are
kio's bytes, for every version served, for any body and for the uniform partition lists
``topics.metadata_response`` builds."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.api import BY_API_KEY
from protocol.metadata import TopicMetadata
from protocol.wire import fast_metadata
from protocol.wire.codec import (
    RequestHeader,
    encode_body,
    encode_response,
    encode_response_with_kio,
)
from protocol.wire.codec import response_schema as load_response_schema
from protocol.wire.fast_metadata import METADATA, UniformPartitions
from protocol.wire.topics import Node, TopicIndex, metadata_response
from tests.gateway.schema_strategies import plain_values

VERSIONS = range(BY_API_KEY[METADATA].versions.min, BY_API_KEY[METADATA].versions.max + 1)
FIELDS = {"leader_id": 4, "leader_epoch": 0, "replica_nodes": [4], "isr_nodes": [4],
          "offline_replicas": []}


def _as_lists(body: dict) -> dict:
    """The same reply with every partition list a plain list of dicts."""
    return {**body, "topics": [{**t, "partitions": [dict(p) for p in t["partitions"]]}
                               for t in body["topics"]]}


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_any_metadata_reply_is_written_as_kio_writes_it(version, data):
    values = data.draw(plain_values(load_response_schema(METADATA, version)))
    header = RequestHeader(METADATA, version, data.draw(st.integers(-(2**31), 2**31 - 1)), "c")
    assert encode_response(header, values) == encode_response_with_kio(header, values)


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=15, deadline=None)
@given(sizes=st.lists(st.integers(0, 300), max_size=4), node_id=st.integers(0, 2**31 - 1))
def test_a_reply_of_every_topics_uniform_partitions_is_kios_bytes(version, sizes, node_id):
    index = TopicIndex([TopicMetadata(str(uuid.UUID(int=i + 1)), f"t{i}", n)
                        for i, n in enumerate(sizes)])
    node = Node(node_id, "127.0.0.1", 9092)
    body = metadata_response({"topics": None}, version, index, node, lambda _: True,
                             [Node(7, "127.0.0.1", 9093)])
    assert all(isinstance(t["partitions"], UniformPartitions) for t in body["topics"])
    header = RequestHeader(METADATA, version, 9, "c")
    kio = encode_response_with_kio(header, _as_lists(body))
    assert encode_response(header, body) == kio
    assert encode_response_with_kio(header, body) == kio  # kio reads it as the list it is
    assert encode_response(header, encode_body(METADATA, version, body)) == kio


def test_uniform_partitions_read_as_the_list_of_dicts_they_stand_for():
    parts = UniformPartitions(3, FIELDS)
    as_list = [{"error_code": 0, "partition_index": i, **FIELDS} for i in range(3)]
    assert parts == as_list and list(parts) == as_list and len(parts) == 3
    assert parts[-1] == as_list[-1] and parts[1:] == as_list[1:]
    assert parts != as_list[:2] and UniformPartitions(0, FIELDS) == []
    with pytest.raises(IndexError):
        parts[3]


def _per_partition(version: int, count: int, fields: dict) -> bytes:
    """A topic's partitions as the encoder wrote them before issue 30's second pass: the
    template written by kio, the index packed in one partition at a time."""
    partition_type = fast_metadata._schema(version)[2]
    template = fast_metadata._written(partition_type,
                                      {"error_code": 0, "partition_index": 0, **fields})
    return b"".join(template[:2] + struct.pack(">i", i) + template[6:] for i in range(count))


@pytest.mark.parametrize("version", [0, 5, 7, 9, 12, VERSIONS[-1]])
@pytest.mark.parametrize("count", [1, 255, 256, 65_537, 70_000])
def test_partitions_past_every_byte_of_the_index_are_the_per_partition_bytes(version, count):
    partition_type = fast_metadata._schema(version)[2]
    out = bytearray(b"head")
    fast_metadata._uniform(out, UniformPartitions(count, FIELDS), partition_type)
    assert bytes(out) == b"head" + _per_partition(version, count, FIELDS)


@pytest.mark.parametrize("version", [1, 8, 10, VERSIONS[-1]])
def test_a_topic_kept_from_an_earlier_reply_is_written_as_kio_writes_it_under_a_new_image(
        version):
    """Topics' written fields are kept by value across replies: a topic renamed, recreated
    under a new id or grown is written anew, one unchanged is the same bytes."""
    header = RequestHeader(METADATA, version, 9, "c")
    node = Node(4, "127.0.0.1", 9092)
    def t(k: int, name: str, count: int) -> TopicMetadata:
        return TopicMetadata(str(uuid.UUID(int=k)), name, count)

    images = [[t(1, "a", 3), t(2, "b", 2)], [t(1, "a", 5), t(3, "b", 2), t(2, "c", 1)],
              [t(1, "a", 5)]]
    for topics in images:
        for asked in (None, [{"name": "b", "topic_id": None}, {"name": "x", "topic_id": None}]):
            body = metadata_response({"topics": asked}, version, TopicIndex(topics), node,
                                     lambda _: True, [Node(7, "127.0.0.1", 9093)])
            assert encode_response(header, body) == \
                encode_response_with_kio(header, _as_lists(body))


def test_the_topics_kept_are_bounded(monkeypatch):
    monkeypatch.setattr(fast_metadata, "_TOPIC_PARTS_KEPT", 3)
    fast_metadata._topic_parts_kept.clear()
    index = TopicIndex([TopicMetadata(str(uuid.UUID(int=i + 1)), f"t{i}", 1) for i in range(10)])
    body = metadata_response({"topics": None}, 12, index, Node(4, "h", 1), lambda _: True)
    encode_body(METADATA, 12, body)
    assert len(fast_metadata._topic_parts_kept) == 3
    long_name = TopicIndex([TopicMetadata("x", "n" * 5000, 1)])
    encode_body(METADATA, 12, metadata_response({"topics": None}, 12, long_name,
                                                Node(4, "h", 1), lambda _: True))
    assert all(len(b) + len(a) <= fast_metadata._TOPIC_PART_MOST_BYTES
               for b, a in fast_metadata._topic_parts_kept.values())
