"""What Cohort rewrites of the replies it relays from an upstream (``protocol/wire/upstream``):
only broker addresses change, every other field comes back as the upstream wrote it."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.wire.ids import uuid_topic_id
from protocol.wire.upstream import (
    DESCRIBE_CLUSTER,
    FIND_COORDINATOR,
    METADATA,
    PRODUCE,
    decode_reply,
    encode_reply,
    encode_request,
    expects_reply,
    metadata_topics,
    relayed_versions,
    rewrite_addresses,
)

LISTENERS = {1: ("127.0.0.1", 40001), 2: ("127.0.0.1", 40002)}
TOPIC_ID = uuid.UUID("2b0f7a34-5c5e-4e0c-9f1b-8a1f4d9e6c11")


def _metadata(version: int) -> dict:
    return {
        "throttle_time": 7, "cluster_id": "up-cluster", "controller_id": 2,
        "brokers": [{"node_id": 1, "host": "up-a", "port": 9092, "rack": "r1"},
                    {"node_id": 2, "host": "up-b", "port": 9093, "rack": None},
                    {"node_id": 3, "host": "up-c", "port": 9094, "rack": None}],
        "topics": [{"error_code": 0, "name": "orders", "topic_id": TOPIC_ID,
                    "is_internal": False, "topic_authorized_operations": -2147483648,
                    "partitions": [{"error_code": 0, "partition_index": p, "leader_id": 1 + p,
                                    "leader_epoch": 4, "replica_nodes": [1 + p],
                                    "isr_nodes": [1 + p], "offline_replicas": []}
                                   for p in range(2)]}],
        "cluster_authorized_operations": -2147483648,
    }


@given(st.integers(1, 12))
def test_metadata_names_cohorts_listeners_and_keeps_every_other_field(version):
    frame = encode_reply(METADATA, version, 41, _metadata(version))
    out = rewrite_addresses(METADATA, version, frame, LISTENERS.get,
                            extra_brokers=[(1000, "127.0.0.1", 50000)])
    body = decode_reply(METADATA, version, out)
    assert struct.unpack_from(">i", out)[0] == 41
    assert [(b["node_id"], b["host"], b["port"]) for b in body["brokers"]] == [
        (1, "127.0.0.1", 40001), (2, "127.0.0.1", 40002), (1000, "127.0.0.1", 50000)]
    before = decode_reply(METADATA, version, frame)
    assert body["topics"] == before["topics"]
    assert body.get("controller_id") == before.get("controller_id")


@pytest.mark.parametrize("version", range(0, 4))
def test_find_coordinator_before_v4_names_the_coordinators_listener(version):
    frame = encode_reply(FIND_COORDINATOR, version, 5, {
        "error_code": 0, "error_message": None, "node_id": 2, "host": "up-b", "port": 9093})
    body = decode_reply(FIND_COORDINATOR, version,
                        rewrite_addresses(FIND_COORDINATOR, version, frame, LISTENERS.get))
    assert (body["node_id"], body["host"], body["port"]) == (2, "127.0.0.1", 40002)


@pytest.mark.parametrize("version", range(4, 7))
def test_find_coordinator_without_a_listener_is_coordinator_not_available(version):
    frame = encode_reply(FIND_COORDINATOR, version, 5, {"coordinators": [
        {"key": "tx-a", "node_id": 1, "host": "up-a", "port": 9092, "error_code": 0,
         "error_message": None},
        {"key": "tx-b", "node_id": 3, "host": "up-c", "port": 9094, "error_code": 0,
         "error_message": None}]})
    body = decode_reply(FIND_COORDINATOR, version,
                        rewrite_addresses(FIND_COORDINATOR, version, frame, LISTENERS.get))
    a, b = body["coordinators"]
    assert (a["host"], a["port"], a["error_code"]) == ("127.0.0.1", 40001, 0)
    assert (b["node_id"], b["error_code"]) == (-1, 15)


def test_describe_cluster_leaves_out_brokers_cohort_does_not_present():
    frame = encode_reply(DESCRIBE_CLUSTER, 1, 9, {
        "throttle_time": 0, "error_code": 0, "error_message": None, "endpoint_type": 1,
        "cluster_id": "c", "controller_id": 1, "cluster_authorized_operations": 0,
        "brokers": [{"broker_id": 1, "host": "up-a", "port": 9092, "rack": None},
                    {"broker_id": 3, "host": "up-c", "port": 9094, "rack": None}]})
    body = decode_reply(DESCRIBE_CLUSTER, 1,
                        rewrite_addresses(DESCRIBE_CLUSTER, 1, frame, LISTENERS.get))
    assert [(b["broker_id"], b["port"]) for b in body["brokers"]] == [(1, 40001)]


def test_a_reply_that_names_no_broker_passes_through_byte_for_byte():
    frame = b"\x00\x00\x00\x07some-fetch-reply-bytes"
    assert rewrite_addresses(1, 12, frame, LISTENERS.get) is frame


def _produce(version: int, acks: int, transactional_id: str | None) -> bytes:
    framed = encode_request(PRODUCE, version, 3, "client", {
        "transactional_id": transactional_id, "acks": acks, "timeout_ms": 1000,
        "topic_data": []})
    return framed[4:]


@given(st.integers(3, 11), st.sampled_from([0, 1, -1]),
       st.one_of(st.none(), st.text(max_size=40)))
def test_only_a_produce_with_acks_zero_expects_no_reply(version, acks, transactional_id):
    assert expects_reply(_produce(version, acks, transactional_id), version) == (acks != 0)


def test_other_requests_always_expect_a_reply():
    frame = encode_request(METADATA, 12, 1, None, {"topics": None,
                                                    "allow_auto_topic_creation": False,
                                                    "include_topic_authorized_operations": False})
    assert expects_reply(frame[4:], 12)


def test_relayed_versions_cap_fetch_and_produce_below_node_endpoints_and_drop_what_upstream_lacks():
    upstream = {0: (0, 12), 1: (0, 17), 2: (0, 10), 22: (0, 5), 19: (2, 7)}
    own = {0: (3, 11), 1: (4, 12), 2: (1, 9), 68: (0, 1), 19: (2, 7), 20: (1, 6)}
    out = relayed_versions(upstream, relayed=[0, 1, 2, 22, 19, 20], own=own)
    assert out[0] == (0, 9) and out[1] == (0, 15)  # KIP-951's NodeEndpoints stay upstream
    assert out[2] == (1, 9)  # Cohort's own range bounds what it may decode
    assert out[22] == (0, 5)  # InitProducerId: Cohort has no row of its own
    assert out[68] == (0, 1)  # KIP-848 stays Cohort's, whatever the upstream lacks
    assert 20 not in out  # DeleteTopics: the upstream does not serve it


def test_metadata_topics_leave_out_internal_and_failed_topics_and_take_replica_racks():
    body = _metadata(12)
    body["topics"] += [
        {**body["topics"][0], "name": "__consumer_offsets", "is_internal": True},
        {**body["topics"][0], "name": "broken", "error_code": 3, "partitions": []}]
    (t,) = metadata_topics(body)
    assert (t.name, t.topic_id, t.num_partitions) == ("orders", uuid_topic_id(TOPIC_ID), 2)
    assert t.partition_racks is None  # broker 2 has no rack: racks unknown
    body["brokers"][1]["rack"] = "r2"
    (t,) = metadata_topics(body)
    assert t.partition_racks == (frozenset({"r1"}), frozenset({"r2"}))
