"""``OffsetsPartition``: one ``__consumer_offsets`` partition as a durable Ray actor.

A thin Ray shell around ``PartitionTurns`` (``turns.py``), which holds every guarantee of the
turn logic (replies only after durability, a failed write or a bug answered with
COORDINATOR_NOT_AVAILABLE and a reload from storage, fenced for good on NOT_COORDINATOR,
bounds, COORDINATOR_LOAD_IN_PROGRESS while loading) and runs without Ray. What is Ray's lives
here: the actor, its loop task, the controller lookup, the log under ``storage_path`` (local
or an object store: ``storage_factory``), the metrics agent, which groups hash to this
partition, and its Kafka listeners (``actors.gateway.broker``: Kafka clients reach the
partition directly, as they reach a Kafka coordinator; the gateway asks it to listen).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable

import ray

from actors.gateway.broker import PartitionBroker
from actors.gateway.listener import ListenerSpec
from actors.runtime import gc_policy
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE, ControllerImage
from actors.runtime.controller_security import SecurityImage
from actors.runtime.fileops import FileOps
from actors.runtime.loop_watch import running_watch
from actors.runtime.metrics import PartitionMetrics
from actors.runtime.offload import big_request, off_loop, serving_bytes
from actors.runtime.packed import WakerTokens, pack, unpack
from actors.runtime.storage_factory import open_storage
from actors.runtime.turns import PartitionTurns
from protocol.api import group_ids_of
from protocol.config import CoordinatorConfig
from protocol.placement import partition_for
from protocol.shard import GroupCoordinatorShard
from protocol.wire.topics import Node


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class OffsetsPartition:
    """The coordinator of the groups that hash to one ``__consumer_offsets`` partition.

    It exists to give the pure shard what the shard refuses to have: a mailbox, a clock,
    timers and a durable log (``PartitionTurns``), and to survive its own death (a detached,
    named actor that Ray restarts and that reloads its log). Guarantees: those of
    ``PartitionTurns``, for every call below.
    """

    def __init__(self, partition: int, num_partitions: int, storage_path: str,
                 config: CoordinatorConfig, file_ops: FileOps | None = None,
                 cluster_id: str | None = None) -> None:
        self.partition = partition
        self.num_partitions = num_partitions
        # A local directory or an object store (s3://...); with ``cluster_id``, the storage's
        # marker must be that Cohort's or the partition refuses to serve (storage_marker.py).
        storage = open_storage(storage_path, f"offsets-{partition}", cluster_id, file_ops)
        self._storage = storage
        mine = functools.partial(owns, partition=partition, num_partitions=num_partitions)
        self._turns = PartitionTurns(
            f"offsets-{partition}", storage, config, _controller_image, owns=mine,
            metrics=PartitionMetrics(partition), seed=os.getpid(), on_loaded=gc_policy.settle,
        )
        gc_policy.tune()
        self._waker_tokens = WakerTokens()
        self._loop_task = asyncio.get_running_loop().create_task(self._turns.run())
        self._broker = PartitionBroker(partition, num_partitions, self._turns,
                                       ray.util.get_node_ip_address())

    # ------------------------------------------------------------------ requests

    async def handle(self, request: object) -> object:
        return (await self.handle_batch([request]))[0]

    async def handle_batch(self, requests: list[object], waker=None) -> list[object]:
        """Many requests in one Ray call (one client actor's members); each answered alone.
        ``waker``: that client actor, to be woken when its members' targets change."""
        return await self._turns.handle_batch(requests, waker)

    async def handle_packed(self, packed: bytes) -> bytes:
        """``handle`` for Cohort's own callers (``Cluster.call``, the client actors): the
        request and its reply travel pickled (``packed.py``: Ray's serializer took ~35 µs a
        message each way)."""
        return (await self._answer_packed(packed, one=True))

    async def handle_batch_packed(self, packed: bytes, waker: bytes | None = None) -> bytes:
        """``handle_batch`` with the requests and replies pickled; ``waker``: the client
        actor's ``packed.waker_token``, resolved once per client instead of on every call."""
        return await self._answer_packed(packed, self._waker_tokens.resolve(waker))

    async def _answer_packed(self, packed: bytes, waker=None, one: bool = False) -> bytes:
        """The replies to pickled requests, pickled; a big batch (``offload``) in the
        process's turn for one, unpickled and pickled off the loop."""
        if not serving_bytes(len(packed)):  # marks this call's task only
            requests = unpack(packed)
            replies = await self._turns.handle_batch([requests] if one else requests, waker)
            return pack(replies[0] if one else replies)
        async with big_request():
            requests = await off_loop(unpack, packed)
            replies = await self._turns.handle_batch([requests] if one else requests, waker)
            return await off_loop(pack, replies[0] if one else replies)

    async def update_image(self, image: ControllerImage) -> None:
        """The controller's push; older images than the one applied are ignored."""
        self._turns.update_image(image)

    # ------------------------------------------------------------------ Kafka listeners

    async def listen(self, spec: ListenerSpec, port_hint: int = 0, leader: Node | None = None,
                     coordinators: dict[int, Node] | None = None) -> tuple[str, int, int]:
        """Listen for the clients of ``spec``'s gateway (idempotent): (host, port, version of
        the security image held). ``port_hint``: where it listened before, tried first;
        ``leader`` (the gateway) and ``coordinators`` (every partition's listener): what this
        listener's Metadata and FindCoordinator name."""
        return await self._broker.listen(spec, port_hint, leader, coordinators)

    async def close_listener(self, gateway: str) -> None:
        self._broker.close(gateway)

    async def update_security(self, image: SecurityImage) -> None:
        """Users and ACLs, pushed by the controller (and by a gateway that has a newer one)."""
        self._broker.update_security(image)

    async def member_epoch(self, gateway: str, group_id: str, member_id: str) -> int:
        """The epoch (or generation) last sent to a member on ``gateway``'s listener; -1."""
        return self._broker.member_epoch(gateway, group_id, member_id)

    async def listeners(self) -> dict:
        return self._broker.stats()

    # ------------------------------------------------------------------ inspection

    async def ready(self) -> str:
        """The turn loop's state; a storage refused for good says why ("failed: ..."): a
        marker that is not this Cohort's, a damaged log (file and byte offset)."""
        state, refusal = self._turns.state, self._refusal()
        return f"{state}: {refusal}" if state == "failed" and refusal else state

    def _refusal(self) -> str | None:
        return getattr(self._storage, "refusal", None) or self._turns.failure

    async def info(self) -> dict:
        refusal = self._refusal()  # why the storage was refused
        return {"partition": self.partition, "pid": os.getpid(), **self._turns.info(),
                **({"refusal": refusal} if refusal else {})}

    async def loop_stalls(self, reset: bool = True) -> dict:
        """The event loop's longest stalls since the last reading (``loop_watch``); the
        first call starts watching (it costs a wake-up every 10 ms, so only when asked)."""
        return running_watch().read(reset)

    async def heap_census(self, top: int = 8) -> dict:
        """What this process's cyclic collector walks (``LoopWatch.census``): why a long
        ``gc_ms`` is long."""
        return running_watch().census(top)

    async def group_ids(self) -> list[str]:
        return await self._turns.query(lambda shard: sorted(shard.groups))

    async def group_summary(self, group_id: str) -> dict | None:
        """State, epochs and member counts of one group: describe without the assignments,
        cheap enough to poll for a group of 10,000 members."""
        return await self._turns.query(lambda shard: shard.summarize(group_id))

    async def query(self, fn: Callable[[GroupCoordinatorShard], object]) -> object:
        """``fn(shard)`` between two turns, once what it saw is durable: the tools read the
        state with their own functions (``fn`` must only read)."""
        return await self._turns.query(fn)


def owns(req: object, partition: int, num_partitions: int) -> bool:
    """Whether every group ``req`` names hashes to ``partition`` (a function, not the actor's
    method: Ray wraps every method of an actor class, private ones too, in a tracing shim)."""
    return all(partition_for(g, num_partitions) == partition for g in group_ids_of(req))


async def _controller_image() -> ControllerImage:
    controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
    return await controller.image.remote()
