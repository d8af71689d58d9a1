"""Each partition actor is a broker for its groups (issue 23): FindCoordinator names it,
Metadata lists it, a real client's group traffic goes to it and not through the gateway, it
refuses groups it does not coordinate, forwards what it does not serve to the gateway, and
after a kill it listens again where its clients saw it."""

from __future__ import annotations

import socket
import struct

import pytest
import ray
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.protocol.admin import ListGroupsRequest, ListGroupsResponse
from kafka.protocol.consumer import OffsetCommitResponse
from kafka.protocol.metadata import (
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    MetadataRequest,
    MetadataResponse,
)
from kio.serial import entity_reader

from actors.gateway.launch import running_gateway, start_gateway, stop_gateway
from actors.gateway.listener import PARTITION_NODE_BASE
from actors.tools.wire_tokens import framed, request_tokens
from protocol import messages as m
from protocol.wire.codec import response_schema
from tests.gateway.conftest import unique, wait_for, whole
from tests.gateway.wire_client import WireClient, offset_commit_request

pytestmark = pytest.mark.ray

NOT_COORDINATOR = 16


def _coordinators(count: int) -> dict[int, str]:
    """partition -> host:port of its listener, once ``count`` partitions listen."""
    gateway = running_gateway()
    return wait_for(lambda: (found := ray.get(gateway.coordinators.remote()))
                    and len(found) == count and found)


def _group_on(cluster, p: int, prefix: str) -> str:
    while True:
        g = unique(prefix)
        if cluster.partition_for(g) == p:
            return g


def test_find_coordinator_names_the_partition_that_owns_the_group(cluster, gateway):
    coordinators = _coordinators(cluster.num_partitions)
    group = unique("findc")
    p = cluster.partition_for(group)
    client = WireClient(gateway)
    reply = client.call(FindCoordinatorRequest[2](key=group, key_type=0),
                        FindCoordinatorResponse, 2)
    client.close()
    assert reply.error_code == 0
    assert reply.node_id == PARTITION_NODE_BASE + p
    assert f"{reply.host}:{reply.port}" == coordinators[p]


def test_a_real_clients_commits_go_to_the_partition_and_not_through_the_gateway(
        cluster, gateway):
    topic, group = unique("direct-t"), unique("direct")
    cluster.create_topic(topic, 1)
    gw = running_gateway()
    before = ray.get(gw.stats.remote())
    consumer = Consumer({"bootstrap.servers": gateway, "group.id": group,
                         "enable.auto.commit": False, "log_level": 0})
    try:
        for offset in range(1, 21):
            consumer.commit(offsets=[TopicPartition(topic, 0, offset)], asynchronous=False)
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=10)
    finally:
        consumer.close()
    assert committed[0].offset == 20
    after = ray.get(gw.stats.remote())
    commits = lambda served: sum(n for (key, _), n in served.items() if key == 8)  # noqa: E731
    assert commits(after["served"]) == commits(before["served"])
    assert commits(after["served_by_coordinators"]) >= commits(
        before["served_by_coordinators"]) + 20


def test_a_partition_refuses_a_group_it_does_not_coordinate(cluster, gateway):
    coordinators = _coordinators(cluster.num_partitions)
    topic = unique("notcoord-t")
    cluster.create_topic(topic, 1)
    other = _group_on(cluster, 1, "notcoord")
    client = WireClient(coordinators[0])
    reply = client.call(offset_commit_request(other, topic, 7), OffsetCommitResponse, 8)
    client.close()
    assert reply.topics[0].partitions[0].error_code == NOT_COORDINATOR
    assert cluster.call(m.OffsetFetchRequest(group_id=other)).topics == []  # nothing landed


def test_metadata_from_a_partition_lists_the_gateway_and_every_coordinator(cluster, gateway):
    coordinators = _coordinators(cluster.num_partitions)

    def brokers_named() -> dict[int, str]:
        client = WireClient(coordinators[0])
        try:
            reply = client.call(MetadataRequest[9](topics=None, allow_auto_topic_creation=False),
                                MetadataResponse, 9)
        finally:
            client.close()
        return {b.node_id: f"{b.host}:{b.port}" for b in reply.brokers}

    # A listener opened first learns of the others as they open (pushed by the gateway):
    # right after a start its Metadata may name fewer, never others.
    brokers = wait_for(lambda: (b := brokers_named())
                       and len(b) == cluster.num_partitions + 1 and b)
    assert brokers[0] == gateway
    assert {node - PARTITION_NODE_BASE: address for node, address in brokers.items()
            if node >= PARTITION_NODE_BASE} == coordinators


def test_list_groups_is_the_gateways_alone_so_merging_brokers_lists_each_group_once(
        cluster, gateway, members):
    coordinators = _coordinators(cluster.num_partitions)
    topic, group = unique("lg-t"), unique("lg")
    cluster.create_topic(topic, 1)
    member = members.add(gateway, group, [topic])
    wait_for(lambda: whole([member], [(topic, 0)]))
    at_partition = WireClient(coordinators[cluster.partition_for(group)])
    listed_there = at_partition.call(ListGroupsRequest[2](), ListGroupsResponse, 2)
    at_partition.close()
    assert listed_there.error_code == 0 and listed_there.groups == []
    admin = AdminClient({"bootstrap.servers": gateway, "log_level": 0})
    listed = [g.group_id for g in admin.list_consumer_groups().result().valid]
    assert listed.count(group) == 1  # the admin client asked every broker and merged


def _pid(cluster, group: str) -> int | None:
    try:
        return ray.get(cluster.coordinator(group).info.remote(), timeout=10)["pid"]
    except Exception:  # restarting
        return None


def test_a_killed_partition_listens_again_where_its_clients_saw_it(cluster, gateway):
    topic, group = unique("relisten-t"), unique("relisten")
    cluster.create_topic(topic, 1)
    p = cluster.partition_for(group)
    address = _coordinators(cluster.num_partitions)[p]
    consumer = Consumer({"bootstrap.servers": gateway, "group.id": group,
                         "enable.auto.commit": False, "log_level": 0})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 5)], asynchronous=False)
        pid = _pid(cluster, group)
        cluster.kill_partition(p)
        wait_for(lambda: _pid(cluster, group) not in (None, pid))
        again = _coordinators(cluster.num_partitions)[p]
        assert again == address  # the port it had: the client reconnects, nothing to look up

        def commits() -> bool:
            try:
                consumer.commit(offsets=[TopicPartition(topic, 0, 9)], asynchronous=False)
                return True
            except Exception:  # the coordinator is loading or the connection was cut: retry
                return False

        wait_for(commits)
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=10)
    finally:
        consumer.close()
    assert committed[0].offset == 9


def _free_run(n: int) -> int:
    """A port p with p .. p + n - 1 all free now, below the kernel's ephemeral range
    (32768-60999), where any outgoing connection on the machine may take a port probed free
    before the listener binds it (ci54: offsets-0 fell back to an ephemeral port)."""
    for base in range(21000, 32000, 97):
        socks = []
        try:
            for port in range(base, base + n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise AssertionError("no run of free ports")


def test_a_second_gateway_gets_listeners_of_its_own_on_the_ports_it_names(cluster, gateway):
    base = _free_run(cluster.num_partitions)
    name = "gateway-fixedports"
    with pytest.raises(ValueError, match="coordinator_port"):
        start_gateway(cluster.num_partitions, cluster.config, port=0, name=name,
                      coordinator_port=65535)
    start_gateway(cluster.num_partitions, cluster.config, port=0, name=name,
                  coordinator_port=base)
    try:
        second = ray.get_actor(name, namespace="cohort")
        found = wait_for(lambda: (c := ray.get(second.coordinators.remote()))
                         and len(c) == cluster.num_partitions and c)
        assert found == {p: f"127.0.0.1:{base + p}" for p in range(cluster.num_partitions)}
        assert _coordinators(cluster.num_partitions) != found  # the first gateway's: its own
    finally:
        stop_gateway(name)

    def refused(port: int) -> bool:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return False
        except OSError:
            return True

    assert all(refused(base + p) for p in range(cluster.num_partitions))  # stopped with it


def _list_offsets_via(address: str, entries: int) -> list:
    """ListOffsets v1 for partition 0 of one topic, named ``entries`` times, sent to
    ``address``: the reply's partitions."""
    host, port = address.rsplit(":", 1)
    frame = framed(b"".join(t.data for t in request_tokens(2, 1, {
        "replica_id": -1, "topics": [{"name": "orders", "partitions": [
            {"partition_index": 0, "timestamp": -2}] * entries}]})))
    with socket.create_connection((host, int(port)), timeout=60) as sock:
        sock.sendall(frame)
        (size,) = struct.unpack(">i", _recv_exactly(sock, 4))
        reply = _recv_exactly(sock, size)
    body = entity_reader(response_schema(2, 1))(reply, 4)[0]
    return [p for topic in body.topics for p in topic.partitions]


def _recv_exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        assert chunk, "the listener closed the connection"
        data += chunk
    return data


def test_a_big_request_a_partition_forwards_is_answered_as_a_small_one(cluster, gateway):
    """A request of thousands of entries a partition's listener does not serve crosses to the
    gateway pickled off both loops (``forwarded_packed``), and comes back whole."""
    coordinator = _coordinators(cluster.num_partitions)[0]
    (one,) = _list_offsets_via(coordinator, 1)
    many = _list_offsets_via(coordinator, 3_000)
    assert len(many) == 3_000
    assert {(p.partition_index, p.error_code, p.offset) for p in many} == {
        (one.partition_index, one.error_code, one.offset)}
