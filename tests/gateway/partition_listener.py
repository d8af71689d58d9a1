"""A partition's listener in the test's own event loop: the shard's turns over ``MemoryStorage``
and a real socket, no Ray. The gateway tests of issue 30 (big requests, big-frame backlogs,
clients that leave) drive one with hand-written frames and look inside it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from actors.gateway.broker import PartitionBroker
from actors.gateway.listener import ListenerSpec
from actors.gateway.serving import GatewayOptions
from actors.runtime.controller import ControllerImage
from actors.runtime.memory_storage import MemoryMedium, MemoryStorage
from actors.runtime.turns import PartitionTurns
from protocol.config import CoordinatorConfig
from protocol.metadata import MetadataImage, TopicMetadata

ORDERS = ControllerImage(1, MetadataImage([TopicMetadata("tid-t", "orders", 1)]), {})


@dataclass
class Served:
    """Where the listener listens, and the listener itself (its admission, its core)."""

    host: str
    port: int
    listener: object


@contextlib.asynccontextmanager
async def partition_listener(image: ControllerImage = ORDERS) -> AsyncIterator[Served]:
    """offsets-0's listener, owning every group, serving until the block ends."""

    async def current() -> ControllerImage:
        return image

    turns = PartitionTurns("offsets-0", MemoryStorage(MemoryMedium()), CoordinatorConfig(),
                           current, owns=lambda r: True)
    loop_task = asyncio.get_running_loop().create_task(turns.run())
    broker = PartitionBroker(0, 1, turns, "127.0.0.1")
    try:
        host, port, _ = await broker.listen(ListenerSpec("gateway", "127.0.0.1",
                                                         GatewayOptions()))
        yield Served(host, port, broker._listeners["gateway"])
    finally:
        broker.close_all()
        loop_task.cancel()
