"""A streams member speaking StreamsGroupHeartbeat (88) and StreamsGroupDescribe (89) in
kio-encoded raw frames to Cohort's gateway: it joins with a stateful topology, the gateway
creates the missing changelog through the Controller, the group proceeds once the topic is in
the image, and the member gets every task; describe shows it."""

from __future__ import annotations

import socket
import struct
import time
import uuid

from tests.protocol.streams.test_wire import frame, read_reply

DEADLINE_S = 60.0


class RawClient:
    def __init__(self, bootstrap: str) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=20)

    def call(self, api_key: int, version: int, body: dict) -> dict:
        self.sock.sendall(frame(api_key, version, body))
        size = struct.unpack(">i", self._read(4))[0]
        return read_reply(api_key, version, struct.pack(">i", size) + self._read(size))

    def _read(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the gateway")
            buf += chunk
        return buf


def _join(group: str, source: str, changelog: str) -> dict:
    return {
        "group_id": group, "member_id": "m1", "member_epoch": 0,
        "endpoint_information_epoch": 0, "instance_id": None, "rack_id": None,
        "rebalance_timeout": 30_000,
        "topology": {"epoch": 1, "subtopologies": [{
            "subtopology_id": "0", "source_topics": [source], "source_topic_regex": [],
            "state_changelog_topics": [{"name": changelog, "partitions": 0,
                                        "replication_factor": 0, "topic_configs": []}],
            "repartition_sink_topics": [], "repartition_source_topics": [],
            "copartition_groups": []}]},
        "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": "p1",
        "user_endpoint": None, "client_tags": None, "task_offsets": None,
        "task_end_offsets": None, "shutdown_application": False,
    }


def test_a_raw_streams_member_joins_gets_its_changelog_created_and_all_tasks(cluster, gateway):
    suffix = uuid.uuid4().hex[:8]
    group, source, changelog = f"wc-{suffix}", f"words-{suffix}", f"wc-{suffix}-store-changelog"
    cluster.create_topic(source, 3)
    client = RawClient(gateway)
    reply = client.call(88, 0, _join(group, source, changelog))
    assert reply["error_code"] == 0, reply
    assert 3 in {s["status_code"] for s in reply["status"] or []}  # MISSING_INTERNAL_TOPICS
    epoch, active = reply["member_epoch"], []
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline and not active:
        reply = client.call(88, 0, {
            "group_id": group, "member_id": "m1", "member_epoch": epoch,
            "endpoint_information_epoch": 0, "rebalance_timeout": -1,
            "active_tasks": [], "standby_tasks": [], "warmup_tasks": []})
        assert reply["error_code"] == 0, reply
        epoch = reply["member_epoch"]
        if reply["active_tasks"]:
            active = reply["active_tasks"]
        else:
            time.sleep(0.2)
    assert active == [{"subtopology_id": "0", "partitions": [0, 1, 2]}]
    assert {t.name: t.num_partitions for t in cluster.topics()}[changelog] == 3
    described = client.call(89, 0, {"group_ids": [group], "include_authorized_operations": False})
    (g,) = described["groups"]
    assert g["error_code"] == 0 and g["members"][0]["member_id"] == "m1"
