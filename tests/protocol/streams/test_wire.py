"""StreamsGroupHeartbeat and StreamsGroupDescribe on the wire, without Ray: a kio-encoded frame
decodes through the API table's row into the pure request, and the pure reply encodes into a
frame kio reads back with the same values, at v0 and at v1 (whose entities kio lacks)."""

from __future__ import annotations

import io
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.serial import entity_reader, entity_writer

from protocol.api import BY_API_KEY
from protocol.errors import Errors
from protocol.shard import GroupCoordinatorShard
from protocol.streams import messages as sm
from protocol.wire.codec import RequestHeader, decode_request, encode_response
from protocol.wire.codec import request_schema as load_request_schema
from protocol.wire.codec import response_schema as load_response_schema
from protocol.wire.entities import build, plain
from protocol.wire.versions import api_versions_body
from tests.gateway.schema_strategies import plain_values
from tests.protocol.streams.test_heartbeat import image

JOIN = {
    "group_id": "app", "member_id": "m1", "member_epoch": 0, "endpoint_information_epoch": 0,
    "instance_id": None, "rack_id": "r1", "rebalance_timeout": 30_000,
    "topology": {"epoch": 1, "subtopologies": [{
        "subtopology_id": "0", "source_topics": ["input"], "source_topic_regex": [],
        "state_changelog_topics": [{"name": "app-store-changelog", "partitions": 0,
                                    "replication_factor": 0, "topic_configs": []}],
        "repartition_sink_topics": [], "repartition_source_topics": [],
        "copartition_groups": []}]},
    "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": "p1",
    "user_endpoint": {"host": "h", "port": 9999}, "client_tags": [{"key": "az", "value": "1"}],
    "task_offsets": None, "task_end_offsets": None, "shutdown_application": False,
}


def frame(api_key: int, version: int, body: dict) -> bytes:
    schema = load_request_schema(api_key, version)
    buf = io.BytesIO()
    entity_writer(schema)(buf, build(schema, body))
    client = b"streams-test"
    head = struct.pack(">hhih", api_key, version, 7, len(client)) + client + b"\x00"
    payload = head + buf.getvalue()
    return struct.pack(">i", len(payload)) + payload


def read_reply(api_key: int, version: int, data: bytes) -> dict:
    size, correlation = struct.unpack(">ii", data[:8])
    assert correlation == 7 and size == len(data) - 4
    schema = load_response_schema(api_key, version)
    body, _ = entity_reader(schema)(data, 9)  # after the header's empty tagged fields
    return plain(body)


def test_apiversions_advertises_streams_heartbeat_and_describe_v0_to_v1_as_kafka_44():
    keys = {k["api_key"]: (k["min_version"], k["max_version"])
            for k in api_versions_body()["api_keys"]}
    assert keys[88] == (0, 1) and keys[89] == (0, 1)


@pytest.mark.parametrize(("api_key", "version"), [(88, 1), (89, 1)])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_v1_request_kafka_could_send_decodes_to_what_was_written(api_key, version, data):
    """The v1 entities kio lacks (protocol/streams/schemas.py) read back what they wrote."""
    schema = load_request_schema(api_key, version)
    values = data.draw(plain_values(schema))
    decoded = decode_request(frame(api_key, version, values)[4:])
    assert decoded.header.api_version == version
    assert decoded.body == plain(build(schema, values))


@pytest.mark.parametrize(("api_key", "version"), [(88, 1), (89, 1)])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_a_v1_reply_encodes_to_bytes_that_read_back_the_same(api_key, version, data):
    schema = load_response_schema(api_key, version)
    values = data.draw(plain_values(schema))
    framed = encode_response(RequestHeader(api_key, version, 7, None), values)
    assert read_reply(api_key, version, framed) == plain(build(schema, values))


def _join_reply(version: int) -> dict:
    decoded = decode_request(frame(88, version, JOIN)[4:])
    api = BY_API_KEY[88]
    req = api.decode(decoded.body, "client", "host", version)
    s = GroupCoordinatorShard(metadata=image(input=2))
    resp = s.handle(req).response
    return read_reply(88, version, encode_response(decoded.header, api.encode(resp, version)))


def test_a_v1_reply_carries_the_recovery_lag_as_int64_and_no_description_request():
    back = _join_reply(1)
    assert back["acceptable_recovery_lag"] == 10_000
    assert back["task_offset_interval"] == 60_000
    assert back["topology_description_required"] is False


def test_a_v0_reply_carries_zero_in_kafkas_never_filled_legacy_lag():
    """Kafka 4.4 sets only the v1 int64 lag: its v0 int32 ("legacy") field stays 0."""
    back = _join_reply(0)
    assert back["acceptable_recovery_lag"] == 0 and back["task_offset_interval"] == 60_000


def test_an_error_reply_has_kafkas_defaults_and_an_empty_status_list():
    api = BY_API_KEY[88]
    refused = api.encode(sm.StreamsGroupHeartbeatResponse(error_code=Errors.GROUP_ID_NOT_FOUND))
    assert refused["acceptable_recovery_lag"] == -1 and refused["task_offset_interval"] == 0
    assert refused["status"] == []


def test_describe_v1_names_the_assignor_and_says_no_description_is_stored_when_asked():
    s = GroupCoordinatorShard(metadata=image(input=2))
    s.handle(BY_API_KEY[88].decode(decode_request(frame(88, 1, JOIN)[4:]).body, "c", "h", 1))
    d_api = BY_API_KEY[89]
    for asked, status in ((False, 0), (True, 1)):
        d_req = decode_request(frame(89, 1, {
            "group_ids": ["app", "nope"], "include_authorized_operations": False,
            "include_topology_description": asked})[4:])
        described = s.handle(d_api.decode(d_req.body)).response
        app, nope = read_reply(89, 1, encode_response(d_req.header, d_api.encode(described)))[
            "groups"]
        assert app["assignor_name"] == "sticky" and app["topology_description"] is None
        assert app["topology_description_status"] == status
        assert nope["error_code"] == Errors.GROUP_ID_NOT_FOUND
        assert nope["assignor_name"] is None and nope["topology_description_status"] == 0


def test_a_kio_join_frame_is_served_and_its_reply_reads_back_in_kio():
    decoded = decode_request(frame(88, 0, JOIN)[4:])
    api = BY_API_KEY[88]
    req = api.decode(decoded.body, "client", "host")
    assert req.topology.subtopologies[0].state_changelog_topics[0].name == "app-store-changelog"
    assert req.user_endpoint == sm.Endpoint("h", 9999) and req.process_id == "p1"
    s = GroupCoordinatorShard(metadata=image(input=2))
    resp = s.handle(req).response
    back = read_reply(88, 0, encode_response(decoded.header, api.encode(resp)))
    assert back["error_code"] == 0 and back["member_id"] == "m1" and back["member_epoch"] == 1
    assert {x["status_code"] for x in back["status"]} == {3, 5}
    assert back["active_tasks"] == []
    d_req = decode_request(frame(89, 0, {"group_ids": ["app"],
                                         "include_authorized_operations": False})[4:])
    d_api = BY_API_KEY[89]
    described = s.handle(d_api.decode(d_req.body)).response
    d_back = read_reply(89, 0, encode_response(d_req.header, d_api.encode(described)))
    (g,) = d_back["groups"]
    assert g["group_state"] == "NotReady" and g["members"][0]["process_id"] == "p1"
    assert g["topology"]["subtopologies"][0]["source_topics"] == ["input"]
