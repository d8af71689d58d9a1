"""``ShareConsumer``: a Ray actor running one share group member (KIP-932) against Cohort.

Its protocol logic is the pure client half ``ShareMemberClient``
(``protocol/client/share_member.py``); this actor is its I/O. It sends the heartbeats and
fetches the client asks for to the partition actor its group hashes to (one call at a time),
"processes" each acquired range of the synthetic stream at once and acknowledges it ACCEPT with
its next fetch. The stream's end it fetches up to is the gateway's stream (the same anchor and
rate by default, so Ray and Kafka share consumers of one group see one stream). A fetch that
acquires nothing waits for the stream's next batch. A dead or restarting coordinator is a
failed call: the client retries shortly; what it held is released by lock expiry if the
acknowledgement was lost.

``timeline()`` lists what it was assigned, acquired and had acknowledged (with topic names);
with ``timeline_path`` the events are also appended to a JSON-lines file as they happen, so a
chaos run can read the history of a consumer it killed.
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
from protocol.client.share_member import ShareMemberClient
from protocol.placement import partition_for
from protocol.wire.stream import SyntheticStream

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 30.0
LEAVE_TIMEOUT_S = 10.0
IDLE_S = 0.05


@ray.remote(num_cpus=0, max_restarts=0)
class ShareConsumer:
    def __init__(self, group_id: str, num_partitions: int, topics: list[str],
                 member_id: str | None = None, max_records: int = 500,
                 records_per_s: float = 50.0, batch_interval_ms: int = 200,
                 stream_anchor_ms: int = 0, timeline_path: str | None = None,
                 owner: Any = None) -> None:
        """``owner``: the spawner's ``OwnerAnchor``; when it dies the member closes its
        session, leaves and the actor exits (``owner_watch.py``)."""
        self._client = ShareMemberClient(group_id, member_id or new_member_id(), topics,
                                         max_records=max_records)
        self._stream = SyntheticStream(stream_anchor_ms, records_per_s, batch_interval_ms)
        self._coordinator = ray.get_actor(
            partition_actor_name(partition_for(group_id, num_partitions)), namespace=NAMESPACE)
        self._controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        self._names: dict[str, str] = {}
        self._sink = TimelineSink(timeline_path)
        self.acquired = 0
        self.failed_calls = 0
        self._stopping = False
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._owner_watch = watch_owner(owner, self._owner_gone)

    # ------------------------------------------------------------------ the contract

    async def member_id(self) -> str:
        return self._client.member_id

    async def assignment(self) -> list[tuple[str, int]]:
        await self._refresh_names()
        return [(self._names.get(t, t), p) for t, p in self._client.assignment]

    async def timeline(self) -> list[dict]:
        await self._refresh_names()
        events = []
        for e in self._client.timeline:
            e = dict(e)
            if "topic_id" in e:
                e["topic"] = self._names.get(e["topic_id"], e["topic_id"])
            if "partitions" in e:
                e["partitions"] = [(self._names.get(t, t), p) for t, p in e["partitions"]]
            events.append(e)
        return events

    async def stats(self) -> dict[str, int]:
        return {"acquired": self.acquired, "failed_calls": self.failed_calls,
                "epoch": self._client.epoch}

    async def stop(self, leave: bool = True) -> None:
        """Stop; with ``leave``, close the share session (pending acknowledgements apply) and
        leave the group first."""
        self._stopping = True
        if leave:
            self._client.leave(time.monotonic())
            deadline = time.monotonic() + LEAVE_TIMEOUT_S
            while not self._client.done and time.monotonic() < deadline:
                await asyncio.sleep(IDLE_S)
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _owner_gone(self) -> None:
        """The driver that spawned this actor exited: leave, unless already stopped."""
        if not self._stopping:
            await self.stop(leave=True)

    # -------------------------------------------------------------------- the loop

    async def _run(self) -> None:
        while not self._client.done:
            now = time.monotonic()
            hb = self._client.poll_heartbeat(now)
            if hb is not None:
                reply = await self._call(hb)
                if reply is None:
                    self._client.on_heartbeat_failure(time.monotonic())
                else:
                    self._client.on_heartbeat(time.monotonic(), reply)
            got = 0
            fetch = self._client.poll_fetch(time.monotonic(), self._end_offset())
            if fetch is not None:
                reply = await self._call(fetch)
                if reply is None:
                    self._client.on_fetch_failure(time.monotonic())
                else:
                    for records in self._client.on_fetch(time.monotonic(), reply):
                        got += records.last_offset - records.first_offset + 1
                        self._client.acknowledge(records)
            self.acquired += got
            self._flush_timeline()
            if not got and hb is None:
                now_ms = int(time.time() * 1000)
                await asyncio.sleep(min(self._stream.next_batch_in_ms(now_ms) / 1000, 0.2)
                                    if fetch is not None else IDLE_S)
        self._flush_timeline()

    def _flush_timeline(self) -> None:
        """Append new timeline events to ``timeline_path`` (it outlives this actor)."""
        c = self._client
        self._sink.collect(c.member_id, c.events_recorded, lambda: list(c.timeline))
        self._sink.write()

    def _end_offset(self) -> int:
        return self._stream.end_offset(int(time.time() * 1000))

    async def _call(self, request: object) -> object | None:
        try:
            # Pickled by us, not by Ray: ~150 µs less a call (actors/runtime/packed.py).
            ref = self._coordinator.handle_packed.remote(pack(request))
            return unpack(await asyncio.wait_for(ref, CALL_TIMEOUT_S))
        except (RayError, asyncio.TimeoutError) as e:
            self.failed_calls += 1
            log.debug("share call failed: %s", e)
            return None

    async def _refresh_names(self) -> None:
        with contextlib.suppress(RayError):
            topics = await self._controller.topics.remote()
            self._names.update({t.topic_id: t.name for t in topics})
