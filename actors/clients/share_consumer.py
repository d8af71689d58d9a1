"""``ShareConsumer``: a Ray actor running one share group member (KIP-932) against Cohort.

Its protocol logic is the pure client half ``ShareMemberClient``
(``protocol/client/share_member.py``); this actor is its I/O. It sends the heartbeats and
fetches the client asks for to the partition actor its group hashes to (one call at a time),
"processes" each acquired range of the synthetic stream at once and acknowledges it ACCEPT with
its next fetch. In front of an upstream it plays its share-partitions' leader for itself: it
reads each assigned partition's bounds and the records of what it acquired from the upstream,
hands them to the user's ``process(records)`` and acknowledges after it returns
(``real_records.ShareRecords``). The synthetic stream's end it fetches up to is the gateway's
stream (the same anchor and rate by default, so Ray and Kafka share consumers of one group see
one stream). A fetch that acquires nothing waits for the stream's next batch (or, over real
records, ``READ_IDLE_S``) and asks again. A dead or restarting coordinator is a
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
from actors.clients.real_records import Process, ShareRecords
from actors.clients.timeline import TimelineSink
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE, partition_actor_name
from actors.runtime.packed import pack, unpack
from protocol.client.share_member import Acquired, ShareMemberClient
from protocol.placement import partition_for
from protocol.share.messages import ACK_ACCEPT, ACK_RELEASE
from protocol.wire.stream import SyntheticStream

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 30.0
LEAVE_TIMEOUT_S = 10.0
IDLE_S = 0.05
READ_IDLE_S = 0.1  # over real records: how long a fetch that got nothing waits to ask again


@ray.remote(num_cpus=0, max_restarts=0)
class ShareConsumer:
    def __init__(self, group_id: str, num_partitions: int, topics: list[str],
                 member_id: str | None = None, max_records: int = 500,
                 records_per_s: float = 50.0, batch_interval_ms: int = 200,
                 stream_anchor_ms: int = 0, timeline_path: str | None = None,
                 owner: Any = None, process: Process | None = None) -> None:
        """``owner``: the spawner's ``OwnerAnchor``; when it dies the member closes its
        session, leaves and the actor exits (``owner_watch.py``). ``process``: in front of an
        upstream, the function each acquired range's records go to."""
        self._client = ShareMemberClient(group_id, member_id or new_member_id(), topics,
                                         max_records=max_records)
        self._stream = SyntheticStream(stream_anchor_ms, records_per_s, batch_interval_ms)
        self._coordinator = ray.get_actor(
            partition_actor_name(partition_for(group_id, num_partitions)), namespace=NAMESPACE)
        self._controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        self._names: dict[str, str] = {}
        self._sink = TimelineSink(timeline_path)
        self._process = process
        self._records: ShareRecords | None = None  # in front of an upstream (``_run``)
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
        real = self._records
        return {"acquired": self.acquired, "failed_calls": self.failed_calls,
                "epoch": self._client.epoch,
                "records_processed": real.records_processed if real else 0,
                "process_errors": list(real.errors) if real else []}

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
        if self._records is not None:
            self._records.close()

    async def _owner_gone(self) -> None:
        """The driver that spawned this actor exited: leave, unless already stopped."""
        if not self._stopping:
            await self.stop(leave=True)

    # -------------------------------------------------------------------- the loop

    async def _run(self) -> None:
        await self._find_records()
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
            fetch = self._client.poll_fetch(time.monotonic(), **await self._log_bounds())
            if fetch is not None:
                reply = await self._call(fetch)
                if reply is None:
                    self._client.on_fetch_failure(time.monotonic())
                else:
                    for records in self._client.on_fetch(time.monotonic(), reply):
                        got += records.last_offset - records.first_offset + 1
                        self._client.acknowledge(records, await self._handle(records))
            self.acquired += got
            self._flush_timeline()
            if not got and hb is None:
                await asyncio.sleep(self._idle_s(fetch is not None))
        self._flush_timeline()

    def _flush_timeline(self) -> None:
        """Append new timeline events to ``timeline_path`` (it outlives this actor)."""
        c = self._client
        self._sink.collect(c.member_id, c.events_recorded, lambda: list(c.timeline))
        self._sink.write()

    async def _find_records(self) -> None:
        """In front of an upstream, read its real records (the controller says, once)."""
        while not self._stopping:
            try:
                settings = await self._controller.upstream_settings.remote()
            except RayError as e:  # restarting: ask again, never guess
                log.info("the controller did not say whether there is an upstream: %s", e)
                await asyncio.sleep(IDLE_S * 10)
                continue
            if settings is not None:
                self._records = ShareRecords(settings, self._process)
            return

    async def _log_bounds(self) -> dict:
        """What the next fetch may acquire up to: the stream's end, or each assigned
        partition's bounds at the upstream (read only when a fetch may go)."""
        if self._records is None:
            return {"log_end_offset": self._stream.end_offset(int(time.time() * 1000))}
        wanted = self._client.assignment if self._client.state == "stable" else []
        if any(tid not in self._names for tid, _ in wanted):
            await self._refresh_names()
        return {"bounds": await self._records.bounds(wanted, self._names) if wanted else {}}

    async def _handle(self, records: Acquired) -> int:
        """Process an acquired range; the acknowledgement it earns."""
        if self._records is None:
            return ACK_ACCEPT  # the synthetic stream: processed at once
        name = self._names.get(records.topic_id)
        if name is None:
            return ACK_RELEASE
        return await self._records.handle(name, records.partition, records.first_offset,
                                          records.last_offset)

    def _idle_s(self, fetched: bool) -> float:
        if not fetched:
            return IDLE_S
        if self._records is not None:
            return READ_IDLE_S
        return min(self._stream.next_batch_in_ms(int(time.time() * 1000)) / 1000, 0.2)

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
