"""``StreamsMember``: a Ray actor running one streams group member (KIP-1071) against Cohort,
light enough (``num_cpus=0``, no processing) for a chaos run to start and kill many.

Its protocol logic is the pure client half ``StreamsMemberClient``
(``protocol/client/streams_member.py``, a word count's topology over one source topic); this
actor is its I/O. It sends each heartbeat the client asks for to the partition actor its group
hashes to (one call at a time), and plays the gateway's part for the internal topics a reply
asks to create (through the Controller; a failure only means the next heartbeat still finds
them missing). Its clock is the wall clock, shared by every member of a run, so timelines of
members in different processes compare.

``timeline()`` lists the snapshots of what it owned when; with ``timeline_path`` they are also
appended to a JSON-lines file as they happen, so a chaos run can read the history of a member
it killed (``actors/tools/invariants_streams.py`` checks them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import ray
from ray.exceptions import RayError

from actors.clients.consumer import new_member_id
from actors.clients.owner_watch import watch_owner
from actors.clients.timeline import TimelineSink
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE, partition_actor_name
from actors.runtime.packed import pack, unpack
from protocol.client.streams_member import StreamsMemberClient, word_count_topology
from protocol.placement import partition_for

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 30.0
LEAVE_TIMEOUT_S = 10.0
IDLE_S = 0.05


@ray.remote(num_cpus=0, max_restarts=0)
class StreamsMember:
    def __init__(self, group_id: str, num_partitions: int, source: str, *,
                 session_timeout_ms: int, member_id: str | None = None,
                 process_id: str | None = None, instance_id: str | None = None,
                 timeline_path: str | None = None, owner: Any = None) -> None:
        """``source``: the input topic of its word count; ``process_id``: the Streams process
        it belongs to (members of one process share it: standbys avoid it); ``owner``: the
        spawner's ``OwnerAnchor`` (when it dies the member leaves and the actor exits)."""
        mid = member_id or new_member_id()
        self._client = StreamsMemberClient(
            group_id, mid, word_count_topology(group_id, source), process_id or mid,
            session_timeout_ms=session_timeout_ms, instance_id=instance_id)
        self._coordinator = ray.get_actor(
            partition_actor_name(partition_for(group_id, num_partitions)), namespace=NAMESPACE)
        self._controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        self._sink = TimelineSink(timeline_path)
        self._creating: dict[str, asyncio.Task] = {}  # internal topics being created
        self.failed_calls = 0
        self._stopping = False
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._owner_watch = watch_owner(owner, self._owner_gone)

    # ------------------------------------------------------------------ the contract

    async def member_id(self) -> str:
        return self._client.member_id

    async def owned(self) -> dict[str, Any]:
        """What it owns now: epoch, process, and its tasks by role as ``[subtopology, p]``."""
        c = self._client
        return {"member_id": c.member_id, "process_id": c.process_id, "epoch": c.epoch,
                "state": c.state, "active": sorted(c.owned.active),
                "standby": sorted(c.owned.standby), "warmup": sorted(c.owned.warmup),
                "status": [(s.status_code, s.status_detail) for s in c.status]}

    async def timeline(self) -> list[dict]:
        return list(self._client.timeline)

    async def stats(self) -> dict[str, Any]:
        return {"failed_calls": self.failed_calls, "epoch": self._client.epoch,
                "error": self._client.error}

    async def stop(self, leave: bool = True) -> None:
        """Stop; with ``leave``, give every task up and leave the group first."""
        self._stopping = True
        if leave:
            self._client.leave(time.time())
            deadline = time.monotonic() + LEAVE_TIMEOUT_S
            while not self._client.done and time.monotonic() < deadline:
                await asyncio.sleep(IDLE_S)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._flush_timeline()

    async def _owner_gone(self) -> None:
        if not self._stopping:
            await self.stop(leave=True)

    # -------------------------------------------------------------------- the loop

    async def _run(self) -> None:
        c = self._client
        while not c.done:
            req = c.poll(time.time())
            if req is not None:
                # Waiting longer than its own fencing deadline would only delay giving up.
                wait = min(CALL_TIMEOUT_S, max(IDLE_S, c.next_due() - time.time()))
                reply = await self._call(req, wait)
                if reply is None:
                    c.on_failure(time.time())
                else:
                    for topic in c.on_response(time.time(), reply).values():
                        self._create(topic.name, topic.num_partitions)
            self._flush_timeline()
            if req is None:
                await asyncio.sleep(min(IDLE_S, max(0.0, c.next_due() - time.time())))
        self._flush_timeline()

    def _flush_timeline(self) -> None:
        """Append new snapshots to ``timeline_path`` (it outlives this actor)."""
        c = self._client
        self._sink.collect(c.member_id, c.events_recorded, lambda: list(c.timeline))
        self._sink.write()

    def _create(self, name: str, partitions: int) -> None:
        """Create an internal topic in the background (the gateway's part), once at a time;
        a failure (it exists already, the controller restarts) lets a later reply ask again."""
        if name in self._creating:
            return

        async def create() -> None:
            try:
                await self._controller.create_topic.remote(name, partitions)
            except Exception as e:  # any refusal: a later reply asks again
                log.debug("creating %s: %s", name, e)
            finally:
                self._creating.pop(name, None)

        self._creating[name] = asyncio.get_running_loop().create_task(create())

    async def _call(self, request: object, timeout_s: float) -> object | None:
        try:
            ref = self._coordinator.handle_packed.remote(pack(request))
            return unpack(await asyncio.wait_for(ref, timeout_s))
        except (RayError, asyncio.TimeoutError) as e:
            self.failed_calls += 1
            log.debug("streams heartbeat failed: %s", e)
            return None
