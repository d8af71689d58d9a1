"""StreamsGroupHeartbeat and StreamsGroupDescribe on the wire, without Ray: a kio-encoded frame
decodes through the API table's row into the pure request, and the pure reply encodes into a
frame kio reads back with the same values."""

from __future__ import annotations

import io
import struct

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from protocol.api import BY_API_KEY
from protocol.shard import GroupCoordinatorShard
from protocol.streams import messages as sm
from protocol.wire.codec import decode_request, encode_response
from protocol.wire.entities import build, plain
from protocol.wire.versions import api_versions_body
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


def test_apiversions_advertises_streams_heartbeat_and_describe_v0():
    keys = {k["api_key"]: (k["min_version"], k["max_version"])
            for k in api_versions_body()["api_keys"]}
    assert keys[88] == (0, 0) and keys[89] == (0, 0)


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
