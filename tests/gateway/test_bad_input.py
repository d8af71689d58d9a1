"""Bad input on the wire closes that client's connection, or gets Kafka's error, and nothing
else: the gateway and the partitions keep serving everyone. Responses on one connection go
out in request order, however long the earlier request waits."""

from __future__ import annotations

import struct

import pytest
import ray
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.protocol.consumer import (
    FetchRequest,
    FetchResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
)
from kafka.protocol.metadata import (
    ApiVersionsRequest,
    ApiVersionsResponse,
    MetadataRequest,
    MetadataResponse,
)

from actors.gateway.launch import running_gateway, start_gateway, stop_gateway
from protocol import messages as m
from protocol.api import BY_API_KEY
from protocol.wire.framing import MAX_REQUEST_BYTES
from tests.gateway.conftest import unique
from tests.gateway.wire_client import WireClient

pytestmark = pytest.mark.ray


def _api_versions(bootstrap: str):
    client = WireClient(bootstrap)
    try:
        return client.call(ApiVersionsRequest[3](client_software_name="t",
                                                 client_software_version="1"),
                           ApiVersionsResponse, 3)
    finally:
        client.close()


def _serving(cluster, bootstrap: str) -> bool:
    """A fresh client gets its answer, and the partitions still answer."""
    ok = _api_versions(bootstrap).error_code == 0
    return ok and cluster.call(m.ListGroupsRequest()).error_code == 0


def _valid_request() -> bytes:
    req = MetadataRequest[12](topics=None, allow_auto_topic_creation=False)
    req.with_header(correlation_id=1, client_id="fuzz")
    return bytes(req.encode(header=True))


@pytest.mark.parametrize(("name", "frame"), [
    ("an oversized frame", struct.pack(">i", MAX_REQUEST_BYTES + 1)),
    ("a negative size", struct.pack(">i", -5)),
    ("a truncated header", struct.pack(">i", 5) + b"\x00\x03\x00\x0c\x00"),
    ("an unknown API key", struct.pack(">i", 10) + struct.pack(">hhih", 1000, 0, 1, -1)),
    ("an unsupported version", struct.pack(">i", 10) + struct.pack(">hhih", 3, 99, 1, -1)),
    ("a body that does not decode", struct.pack(">i", 12) + struct.pack(">hhih", 3, 12, 1, -1)
     + b"\xff\xff"),
])
def test_a_bad_frame_closes_that_connection_only(cluster, gateway, name, frame):
    bystander = WireClient(gateway)
    bad = WireClient(gateway)
    bad.send_raw(frame)
    assert bad.closed_by_peer(), f"{name}: the connection stayed open"
    reply = bystander.call(ApiVersionsRequest[0](), ApiVersionsResponse, 0)
    assert reply.error_code == 0  # a connection opened before keeps working
    assert _serving(cluster, gateway)


def test_an_api_versions_request_newer_than_served_gets_the_v0_fallback(gateway):
    client = WireClient(gateway)
    client.send_raw(struct.pack(">i", 10) + struct.pack(">hhih", 18, 99, 42, -1))
    reply = client.receive(ApiVersionsResponse, 0)
    assert reply.header.correlation_id == 42 and reply.error_code == 35
    assert {a.api_key for a in reply.api_keys} == set(BY_API_KEY)
    # ...and the client, retrying with a listed version, is served on the same connection.
    assert client.call(ApiVersionsRequest[3](client_software_name="t",
                                             client_software_version="1"),
                       ApiVersionsResponse, 3).error_code == 0


def test_responses_leave_in_request_order_even_behind_a_waiting_fetch(cluster, gateway):
    topic = unique("order")
    cluster.create_topic(topic, 1)
    client = WireClient(gateway)
    lo = ListOffsetsRequest
    latest = client.call(lo[4](replica_id=-1, isolation_level=0, topics=[lo.ListOffsetsTopic(
        name=topic, partitions=[lo.ListOffsetsTopic.ListOffsetsPartition(
            partition_index=0, current_leader_epoch=-1, timestamp=-1)])]), ListOffsetsResponse, 4)
    end = latest.topics[0].partitions[0].offset
    fr = FetchRequest
    fetch = fr[11](replica_id=-1, max_wait_ms=400, min_bytes=1, max_bytes=1 << 20,
                   isolation_level=0, session_id=0, session_epoch=-1, topics=[fr.FetchTopic(
                       topic=topic, partitions=[fr.FetchTopic.FetchPartition(
                           partition=0, current_leader_epoch=-1, fetch_offset=end,
                           log_start_offset=-1, partition_max_bytes=1 << 20)])],
                   forgotten_topics_data=[], rack_id="")
    first = client.send(fetch, 11)
    second = client.send(MetadataRequest[12](topics=None, allow_auto_topic_creation=False))
    third = client.send(ApiVersionsRequest[0]())
    replies = [client.receive(FetchResponse, 11), client.receive(MetadataResponse, 12),
               client.receive(ApiVersionsResponse, 0)]
    assert [r.header.correlation_id for r in replies] == [first, second, third]
    batch = replies[0].responses[0].partitions[0]
    assert batch.error_code == 0 and batch.high_watermark >= end


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_truncated_flipped_or_huge_frames_never_stop_the_gateway(cluster, gateway, data):
    valid = _valid_request()
    kind = data.draw(st.sampled_from(["random", "truncated", "flipped", "huge"]))
    if kind == "random":
        payload = data.draw(st.binary(max_size=300))
        raw = struct.pack(">i", len(payload)) + payload
    elif kind == "truncated":
        cut = data.draw(st.integers(0, len(valid) - 1))
        raw = struct.pack(">i", cut) + valid[:cut]
    elif kind == "flipped":
        flips = data.draw(st.lists(st.integers(0, len(valid) * 8 - 1), min_size=1, max_size=8))
        buf = bytearray(valid)
        for bit in flips:
            buf[bit // 8] ^= 1 << (bit % 8)
        raw = struct.pack(">i", len(buf)) + bytes(buf)
    else:
        raw = struct.pack(">i", data.draw(st.integers(MAX_REQUEST_BYTES + 1, 2**31 - 1)))
    client = WireClient(gateway, timeout_s=5)
    try:
        client.send_raw(raw)
        client.closed_by_peer(within_s=0.3)  # closed, answered or waiting: all fine
    except OSError:
        pass  # the gateway closed before we finished sending
    finally:
        client.close()
    assert _api_versions(gateway).error_code == 0


def test_a_connection_beyond_max_connections_is_closed_at_once_and_counted(cluster):
    """Kafka's ``max.connections``: a listener of one slot serves its first client and drops
    the second at once, the first still served."""
    name = "gateway-limit"
    bootstrap = start_gateway(cluster.num_partitions, cluster.config, port=0, name=name,
                              max_connections=1)
    first = WireClient(bootstrap)
    try:
        request = ApiVersionsRequest[3](client_software_name="t", client_software_version="1")
        assert first.call(request, ApiVersionsResponse, 3).error_code == 0  # admitted
        second = WireClient(bootstrap)
        assert second.closed_by_peer()
        second.close()
        assert first.call(request, ApiVersionsResponse, 3).error_code == 0
        stats = ray.get(running_gateway(name).stats.remote())
        assert (stats["max_connections"], stats["refused_connections"]) == (1, 1)
    finally:
        first.close()
        stop_gateway(name)
