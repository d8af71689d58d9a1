"""A partition's own listener without Ray: ``PartitionBroker`` over ``PartitionTurns`` on
``MemoryStorage``, a real socket, requests written by kafka-python. Pipelined requests are
applied in the order they were read, whichever path (task or callback) serves them, and a
group of another partition is refused."""

from __future__ import annotations

import asyncio
import time

from kafka.protocol.consumer import (
    OffsetCommitResponse,
    OffsetFetchRequest,
    OffsetFetchResponse,
)
from kafka.protocol.metadata import MetadataRequest, MetadataResponse

from actors.gateway.broker import PartitionBroker
from actors.gateway.listener import ListenerSpec
from actors.gateway.serving import GatewayOptions
from actors.runtime.controller import ControllerImage
from actors.runtime.memory_storage import MemoryMedium, MemoryStorage
from actors.runtime.turns import PartitionTurns
from protocol.config import CoordinatorConfig
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.placement import partition_for
from tests.gateway.wire_client import WireClient, offset_commit_request

TOPIC = "t"
IMAGE = ControllerImage(1, MetadataImage([TopicMetadata("tid-t", TOPIC, 1)]), {})
PARTITIONS = 2
NOT_COORDINATOR = 16


def _group_on(p: int, prefix: str) -> str:
    return next(g for k in range(1000)
                if partition_for(g := f"{prefix}-{k}", PARTITIONS) == p)


def _commit_of(group: str, offset: int):
    return offset_commit_request(group, TOPIC, offset)


def _fetch(group: str):
    of = OffsetFetchRequest
    return of[8](groups=[of.OffsetFetchRequestGroup(group_id=group, topics=[
        of.OffsetFetchRequestGroup.OffsetFetchRequestTopics(name=TOPIC, partition_indexes=[0])])],
                 require_stable=False)


def _serving(exchange, pushing: bool = False) -> object:
    """Partition 0 of 2 listening on loopback; ``exchange(address)`` runs in a thread (the
    client's blocking socket) and its result is returned. With ``pushing``, it is called as
    ``exchange(address, push)``, ``push(image)`` handing the partition a controller image as
    the controller's push does."""

    async def scenario() -> object:
        async def fetch_image() -> ControllerImage:
            return IMAGE

        turns = PartitionTurns("offsets-0", MemoryStorage(MemoryMedium()), CoordinatorConfig(),
                               fetch_image, owns=lambda r: partition_for(
                                   r.group_id, PARTITIONS) == 0)
        loop_task = asyncio.get_running_loop().create_task(turns.run())
        broker = PartitionBroker(0, PARTITIONS, turns, "127.0.0.1")
        host, port, _ = await broker.listen(ListenerSpec("gateway", "127.0.0.1",
                                                         GatewayOptions()))
        loop = asyncio.get_running_loop()

        def push(image: ControllerImage) -> None:
            loop.call_soon_threadsafe(turns.update_image, image)

        try:
            if pushing:
                return await asyncio.to_thread(exchange, f"{host}:{port}", push)
            return await asyncio.to_thread(exchange, f"{host}:{port}")
        finally:
            broker.close_all()
            loop_task.cancel()

    return asyncio.run(scenario())


def _send_together(client: WireClient, *requests) -> None:
    """Requests in one write, so the listener reads them in one chunk (version 8 each)."""
    frames = []
    for request in requests:
        client._correlation += 1
        request.API_VERSION = 8
        request.with_header(correlation_id=client._correlation, client_id="wire-test")
        frames.append(bytes(request.encode(header=True, framed=True)))
    client.send_raw(b"".join(frames))


def _committed(reply) -> int:
    return reply.groups[0].topics[0].partitions[0].committed_offset


def test_pipelined_requests_apply_in_the_order_they_were_read_whatever_serves_them():
    group = _group_on(0, "order")

    def exchange(address: str) -> tuple[list[int], list[int]]:
        client = WireClient(address)
        client.call(_commit_of(group, 5), OffsetCommitResponse, 8)
        # A fetch (served by a task) then a commit (by a callback), written at once: the
        # fetch was read first, so it must not see the commit behind it.
        _send_together(client, _fetch(group), _commit_of(group, 9))
        first = [_committed(client.receive(OffsetFetchResponse, 8)),
                 client.receive(OffsetCommitResponse, 8).topics[0].partitions[0].error_code]
        # A commit then a fetch: the fetch sees it.
        _send_together(client, _commit_of(group, 12), _fetch(group))
        second = [client.receive(OffsetCommitResponse, 8).topics[0].partitions[0].error_code,
                  _committed(client.receive(OffsetFetchResponse, 8))]
        client.close()
        return first, second

    first, second = _serving(exchange)
    assert first == [5, 0]
    assert second == [0, 12]


def test_a_commit_for_a_group_of_another_partition_is_not_coordinator_and_lands_nowhere():
    mine, other = _group_on(0, "mine"), _group_on(1, "other")

    def exchange(address: str) -> list[int]:
        client = WireClient(address)
        codes = [client.call(_commit_of(other, 3), OffsetCommitResponse, 8)
                 .topics[0].partitions[0].error_code,
                 client.call(_commit_of(mine, 4), OffsetCommitResponse, 8)
                 .topics[0].partitions[0].error_code]
        fetched = client.call(_fetch(other), OffsetFetchResponse, 8)
        client.close()
        return [*codes, fetched.groups[0].error_code]

    assert _serving(exchange) == [NOT_COORDINATOR, 0, NOT_COORDINATOR]


def test_a_request_served_by_a_task_between_commits_read_together_sees_only_the_first():
    group = _group_on(0, "split")

    def exchange(address: str) -> list[int]:
        client = WireClient(address)
        # Commits read in one iteration go to the mailbox as one entry; the fetch between
        # them was read after the first and before the second, so it must see 20, not 30.
        _send_together(client, _commit_of(group, 20), _fetch(group), _commit_of(group, 30))
        codes = [client.receive(OffsetCommitResponse, 8).topics[0].partitions[0].error_code,
                 _committed(client.receive(OffsetFetchResponse, 8)),
                 client.receive(OffsetCommitResponse, 8).topics[0].partitions[0].error_code,
                 _committed(client.call(_fetch(group), OffsetFetchResponse, 8))]
        client.close()
        return codes

    assert _serving(exchange) == [0, 20, 0, 30]


def test_commits_read_together_for_groups_of_two_partitions_are_answered_each_in_turn():
    mine, other = _group_on(0, "both"), _group_on(1, "elsewhere")

    def exchange(address: str) -> list[int]:
        client = WireClient(address)
        _send_together(client, _commit_of(mine, 7), _commit_of(other, 8), _commit_of(mine, 9))
        codes = [client.receive(OffsetCommitResponse, 8).topics[0].partitions[0].error_code
                 for _ in range(3)]
        fetched = _committed(client.call(_fetch(mine), OffsetFetchResponse, 8))
        client.close()
        return [*codes, fetched]

    assert _serving(exchange) == [0, NOT_COORDINATOR, 0, 9]


def _topics_named(client: WireClient) -> list[str]:
    reply = client.call(MetadataRequest[12](topics=None, allow_auto_topic_creation=False),
                        MetadataResponse, 12)
    return sorted(t.name for t in reply.topics)


def test_a_partition_answers_metadata_from_the_image_it_holds_and_a_new_image_is_seen():
    newer = ControllerImage(2, MetadataImage([TopicMetadata("tid-t", TOPIC, 1),
                                              TopicMetadata("tid-u", "u", 3)]), {})

    def exchange(address: str, push) -> list[list[str]]:
        client = WireClient(address)
        seen = [_topics_named(client), _topics_named(client)]  # the second reply is kept
        push(newer)
        deadline = time.monotonic() + 10
        while "u" not in (latest := _topics_named(client)) and time.monotonic() < deadline:
            time.sleep(0.01)
        client.close()
        return [*seen, latest]

    assert _serving(exchange, pushing=True) == [[TOPIC], [TOPIC], [TOPIC, "u"]]
