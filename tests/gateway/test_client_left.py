"""A client that leaves is owed nothing: its connection ends and the work on its requests
stops (issue 30). A partition's listener forwards what it does not serve to the gateway, a Ray
call whose arguments Ray keeps until it is answered; the wire fuzzer's clients gave up after
a second and sent more, and each forward they left stayed pending, with its connection and its
slot, until the gateway answered (a partition grew 0.5 MiB/s, in memory in use). No Ray here:
a partition's listener over ``MemoryStorage``, real sockets, and a gateway that never answers
in place of the Ray call."""

from __future__ import annotations

import asyncio
import socket
import time

from actors.gateway.broker import PartitionBroker
from actors.gateway.listener import ListenerSpec
from actors.gateway.serving import GatewayOptions
from actors.runtime.controller import ControllerImage
from actors.runtime.memory_storage import MemoryMedium, MemoryStorage
from actors.runtime.turns import PartitionTurns
from actors.tools.wire_tokens import framed, request_tokens
from protocol.config import CoordinatorConfig
from protocol.metadata import MetadataImage, TopicMetadata

IMAGE = ControllerImage(1, MetadataImage([TopicMetadata("tid-t", "orders", 1)]), {})
CLIENTS = 20
WAIT_S = 30.0
# ListOffsets v1, forwarded to the gateway by a partition's listener.
LIST_OFFSETS = framed(b"".join(t.data for t in request_tokens(2, 1, {
    "replica_id": -1,
    "topics": [{"name": "orders", "partitions": [{"partition_index": 0, "timestamp": -1}]}]})))


async def _left_behind() -> dict[str, int]:
    """``CLIENTS`` clients each send a forwarded request and close before its answer: what the
    listener still holds for them once it settles (or ``WAIT_S`` passes)."""
    held = {"forwards": 0, "cancelled": 0}

    async def gateway_never_answers(self, req) -> bytes | None:
        held["forwards"] += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            held["cancelled"] += 1
            raise
        return None

    async def image() -> ControllerImage:
        return IMAGE

    turns = PartitionTurns("offsets-0", MemoryStorage(MemoryMedium()), CoordinatorConfig(),
                           image, owns=lambda r: True)
    loop_task = asyncio.get_running_loop().create_task(turns.run())
    broker = PartitionBroker(0, 1, turns, "127.0.0.1")
    host, port, _ = await broker.listen(ListenerSpec("gateway", "127.0.0.1", GatewayOptions()))
    listener = broker._listeners["gateway"]
    listener._forward = gateway_never_answers.__get__(listener)

    def send_and_leave() -> None:
        for n in range(1, CLIENTS + 1):
            with socket.create_connection((host, port)) as sock:
                sock.sendall(LIST_OFFSETS)
                deadline = time.monotonic() + WAIT_S  # left once its forward is under way
                while held["forwards"] < n and time.monotonic() < deadline:
                    time.sleep(0.01)

    try:
        await asyncio.to_thread(send_and_leave)
        deadline = time.monotonic() + WAIT_S
        while (listener.admission.open or held["cancelled"] < held["forwards"]) \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        return {**held, "connections": listener.admission.open}
    finally:
        broker.close_all()
        loop_task.cancel()


def test_a_client_that_leaves_has_its_connection_closed_and_its_forwards_cancelled():
    left = asyncio.run(_left_behind())
    assert left == {"forwards": CLIENTS, "cancelled": CLIENTS, "connections": 0}

