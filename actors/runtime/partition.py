"""``OffsetsPartition``: one ``__consumer_offsets`` partition as a durable Ray actor.

This is the runtime half of Kafka's ``CoordinatorRuntime``: the rules live in the pure
``GroupCoordinatorShard``; this actor owns the mailbox, the clock, the timers and the log.

One loop task drains the mailbox in turns. A turn fires due timers, applies every queued
event to the shard one after another (no ``await`` inside a state change), appends all the
records the turn produced as one batch (one write, one fsync: group commit), and only then
releases the turn's replies (invariant 4). Requests that arrive while a turn writes wait for
the next turn. All heartbeats of a turn go through one ``handle_batch``, so a group's target
assignment is computed once per turn however many members joined in it. A classic JoinGroup or
SyncGroup may be answered in a later turn (when the rest of its group arrives or a timer
fires): replies are matched to their requests by identity, whichever turn completes them.

On (re)start it loads snapshot + log in a worker thread and answers
COORDINATOR_LOAD_IN_PROGRESS meanwhile; the shard is built with the load time as its clock, so
session timers restart from the load (a member is never fenced for the coordinator's own
downtime). A failed write leaves memory ahead of disk, so the process exits and Ray restarts
it from the log.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import copy
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import ray

from actors.runtime.compaction import CompactedState
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE, ControllerImage
from actors.runtime.loading import load_shard
from actors.runtime.log import PartitionLog
from actors.runtime.metrics import PartitionMetrics
from protocol.api import error_response, group_ids_of
from protocol.codec import encode_record
from protocol.config import CoordinatorConfig
from protocol.consumer.describe import summarize_group
from protocol.errors import Errors
from protocol.placement import partition_for
from protocol.records import ConsumerGroupMetadataKey, Record
from protocol.shard import CoordinatorResult, GroupCoordinatorShard

log = logging.getLogger(__name__)

# Bounds (TigerStyle): how much one turn takes from the mailbox, how big the mailbox grows.
MAX_REQUESTS_PER_TURN = 20_000
MAX_QUEUED_REQUESTS = 200_000
# Replies owed at once: requests in the mailbox plus those taken into a turn and not answered
# yet (``_waiting``). A classic JoinGroup or SyncGroup stays owed until its group completes
# the phase or a timer ends it (up to a rebalance timeout), so this bounds the delayed ones;
# a turn's own requests count too while it writes. Beyond it requests are refused with
# COORDINATOR_NOT_AVAILABLE, as a full mailbox refuses them: clients back off and retry, and
# the timers that end the waits run with no request arriving. Above MAX_QUEUED_REQUESTS, so
# that a full mailbox still has room for 50,000 delayed replies.
MAX_WAITING_REPLIES = 250_000
# Snapshot once the log since the last snapshot outgrows this and the compacted state twice.
SNAPSHOT_MIN_BYTES = 16 << 20
# How long the loop sleeps with no timer due; any event wakes it earlier.
IDLE_WAIT_S = 1.0
METRICS_EVERY_S = 1.0


def now_ms() -> int:
    return int(time.monotonic() * 1000)


def refusal(state: str, queued: int, waiting: int, incoming: int) -> Errors | None:
    """Why a partition in ``state``, with ``queued`` requests in its mailbox and ``waiting``
    replies owed, turns away ``incoming`` more (all of them), or None to take them."""
    if state != "active":
        return (
            Errors.COORDINATOR_LOAD_IN_PROGRESS
            if state == "loading"
            else Errors.COORDINATOR_NOT_AVAILABLE
        )
    if queued + incoming > MAX_QUEUED_REQUESTS:
        return Errors.COORDINATOR_NOT_AVAILABLE
    if waiting + queued + incoming > MAX_WAITING_REPLIES:
        return Errors.COORDINATOR_NOT_AVAILABLE
    return None


@dataclass
class _Event:
    """One mailbox entry: requests to apply (answered together), a new controller image, or
    a read of the shard (answered, like requests, only once the turn's records are durable)."""

    requests: list[object] = field(default_factory=list)
    image: ControllerImage | None = None
    query: Callable[[GroupCoordinatorShard], object] | None = None
    done: asyncio.Future | None = None
    # Requests' replies as they come: a delayed one (JoinGroup, SyncGroup) turns later.
    replies: list[object] = field(default_factory=list)
    remaining: int = 0


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class OffsetsPartition:
    """The coordinator of the groups that hash to one ``__consumer_offsets`` partition.

    It exists to give the pure shard what the shard refuses to have: a mailbox, a clock,
    timers and a durable log, and to survive its own death (a detached, named actor that Ray
    restarts and that reloads its log). Guarantees: events are applied one at a time, in
    turns; no reply leaves before every record its turn produced is durable (invariant 4);
    a restarted partition serves the state it had acknowledged; what it holds is bounded
    (``MAX_QUEUED_REQUESTS``, ``MAX_WAITING_REPLIES``, ``MAX_REQUESTS_PER_TURN``), and beyond a
    bound, or while loading, a request gets a retriable Kafka error, never a hang.
    """

    def __init__(self, partition: int, num_partitions: int, storage_path: str,
                 config: CoordinatorConfig) -> None:
        self.partition = partition
        self.num_partitions = num_partitions
        self.config = config
        self.state = "loading"
        self.load_stats: dict = {}
        self._log = PartitionLog(Path(storage_path) / f"offsets-{partition}")
        self._shard: GroupCoordinatorShard | None = None
        self._image_version = -1
        self._compacted = CompactedState()
        self._mailbox: collections.deque[_Event] = collections.deque()
        self._queued = 0
        # id(request) -> (its event, its index, the request): replies still owed. With the
        # mailbox, at most MAX_WAITING_REPLIES (``refusal`` admits no more).
        self._waiting: dict[int, tuple[_Event, int, object]] = {}
        self._wakeup = asyncio.Event()
        self._metrics = PartitionMetrics(partition)
        self._metrics.set_state("loading")
        self._metrics_at = 0.0
        self._loop_task = asyncio.get_running_loop().create_task(self._run())

    # ------------------------------------------------------------------ requests

    async def handle(self, request: object) -> object:
        return (await self.handle_batch([request]))[0]

    async def handle_batch(self, requests: list[object]) -> list[object]:
        """Many requests in one Ray call (one client actor's members); each answered alone."""
        if not isinstance(requests, list):
            return [error_response(requests, Errors.INVALID_REQUEST, "expected a list")]
        error = refusal(self.state, self._queued, len(self._waiting), len(requests))
        if error is not None:
            return [self._refuse(r, error) for r in requests]
        replies: list[object | None] = [None] * len(requests)
        mine: list[int] = []
        for i, req in enumerate(requests):
            if self._owns(req):
                mine.append(i)
            else:
                replies[i] = self._refuse(req, Errors.NOT_COORDINATOR)
        if mine:
            done = asyncio.get_running_loop().create_future()
            # Replies are matched to requests by identity: the same object twice is two.
            seen: set[int] = set()
            batch = []
            for i in mine:
                req = requests[i]
                if id(req) in seen:
                    req = copy.copy(req)
                seen.add(id(req))
                batch.append(req)
            event = _Event(batch, done=done)
            self._enqueue(event)
            for i, reply in zip(mine, await event.done, strict=True):
                replies[i] = reply
        return replies

    async def update_image(self, image: ControllerImage) -> None:
        """The controller's push; older images than the one applied are ignored."""
        if self.state == "active":
            self._enqueue(_Event(image=image))

    # ------------------------------------------------------------------ inspection

    async def ready(self) -> str:
        return self.state

    async def info(self) -> dict:
        shard = self._shard
        return {
            "partition": self.partition,
            "state": self.state,
            "pid": os.getpid(),
            "groups": len(shard.groups) if shard else 0,
            "image_version": self._image_version,
            "load": self.load_stats,
            "queued": self._queued,
        }

    async def group_ids(self) -> list[str]:
        return await self._query(lambda shard: sorted(shard.groups))

    async def group_summary(self, group_id: str) -> dict | None:
        """State, epochs and member counts of one group: describe without the assignments,
        cheap enough to poll for a group of 10,000 members."""
        return await self._query(lambda shard: summarize_group(shard.groups.get(group_id)))

    async def export_tables(self) -> dict:
        """This partition's groups as Arrow tables (``actors.tools.state_tables``), for export."""
        from actors.tools.state_tables import shard_tables

        return await self._query(shard_tables)

    async def _query(self, fn: Callable[[GroupCoordinatorShard], object]) -> object:
        if self.state != "active":
            raise RuntimeError(f"offsets-{self.partition} is {self.state}")
        done = asyncio.get_running_loop().create_future()
        self._enqueue(_Event(query=fn, done=done))
        return await done

    # ------------------------------------------------------------------ the loop

    def _enqueue(self, event: _Event) -> None:
        self._mailbox.append(event)
        self._queued += len(event.requests)
        self._wakeup.set()

    async def _run(self) -> None:
        try:
            await self._load()
        except Exception:
            log.exception("offsets-%d failed to load", self.partition)
            self.state = "failed"
            self._metrics.set_state("failed")
            return
        while True:
            await self._wait_for_work()
            try:
                await self._turn()
            except Exception:
                # A bug in a turn leaves memory unlike the log; only a reload reconciles them.
                log.exception("offsets-%d: a turn failed; restarting from the log", self.partition)
                os._exit(1)

    async def _wait_for_work(self) -> None:
        if self._mailbox:
            return
        deadline = self._shard.next_deadline_ms()
        timeout = IDLE_WAIT_S if deadline is None else max(0.0, (deadline - now_ms()) / 1000)
        self._wakeup.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wakeup.wait(), min(timeout, IDLE_WAIT_S))

    async def _turn(self) -> None:
        started = time.perf_counter()
        shard = self._shard
        events = self._take_events()
        ticked = shard.tick(now_ms())
        records, completed = list(ticked.records), list(ticked.replies)
        requests: list[object] = []
        for ev in events:
            if ev.image is not None:
                result = self._apply_image(ev.image)
                records += result.records
                completed += result.replies
            if ev.requests:
                ev.replies, ev.remaining = [None] * len(ev.requests), len(ev.requests)
                for i, req in enumerate(ev.requests):
                    self._waiting[id(req)] = (ev, i, req)
                requests += ev.requests
        assert len(self._waiting) + self._queued <= MAX_WAITING_REPLIES, "owed replies bounded"
        if requests:
            result = shard.handle_batch(requests)
            records += result.records
            completed += result.replies
        answers = [ev.query(shard) if ev.query else None for ev in events]
        busy = time.perf_counter() - started
        if records:
            await self._persist(records)
        self._release(events, completed, answers)
        self._observe(busy, records)

    def _take_events(self) -> list[_Event]:
        taken, count = [], 0
        while self._mailbox and (not taken or count < MAX_REQUESTS_PER_TURN):
            ev = self._mailbox.popleft()
            taken.append(ev)
            count += len(ev.requests)
        self._queued -= count
        return taken

    def _apply_image(self, image: ControllerImage) -> CoordinatorResult:
        if image.version <= self._image_version:
            return CoordinatorResult()
        self._image_version = image.version
        self._shard.set_group_configs(image.group_configs)
        return self._shard.update_metadata(image.metadata)

    async def _persist(self, records: list[Record]) -> None:
        encoded = [encode_record(r) for r in records]
        try:
            await asyncio.to_thread(self._log.append, encoded)
        except Exception:
            log.exception("offsets-%d could not write; restarting from the log", self.partition)
            os._exit(1)  # memory is ahead of disk: only a reload makes them agree again
        for record, data in zip(records, encoded, strict=True):
            self._compacted.add(record, data)
        if self._log.bytes_since_snapshot > max(SNAPSHOT_MIN_BYTES, 2 * self._compacted.size_bytes):
            snapshot = self._compacted.records()
            await asyncio.to_thread(self._log.write_snapshot, snapshot)

    def _release(
        self, events: list[_Event], completed: list[tuple[object, object]], answers: list
    ) -> None:
        """Hand out the replies the turn completed (now durable), wherever they were asked."""
        for req, reply in completed:
            entry = self._waiting.pop(id(req), None)
            if entry is None:
                continue
            ev, i, _ = entry
            ev.replies[i] = reply
            ev.remaining -= 1
            if ev.remaining == 0 and ev.done is not None and not ev.done.done():
                ev.done.set_result(ev.replies)
        for ev, answer in zip(events, answers, strict=True):
            if ev.query is not None and ev.done is not None and not ev.done.done():
                ev.done.set_result(answer)

    def _observe(self, busy_s: float, records: list[Record]) -> None:
        bumps = sum(
            1 for r in records if isinstance(r.key, ConsumerGroupMetadataKey) and r.value
        )
        self._metrics.turn(busy_s, self._queued, bumps)
        if time.monotonic() - self._metrics_at >= METRICS_EVERY_S:
            self._metrics_at = time.monotonic()
            by_state: dict[str, int] = {}
            for g in self._shard.groups.values():
                if g.group_type == "consumer":
                    by_state[g.state] = by_state.get(g.state, 0) + 1
            classic = sum(1 for g in self._shard.groups.values() if g.group_type == "classic")
            self._metrics.groups(
                {"consumer": len(self._shard.groups) - classic, "generic": classic}, by_state
            )

    # ------------------------------------------------------------------ loading

    async def _load(self) -> None:
        started = time.perf_counter()
        controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        image: ControllerImage = await controller.image.remote()
        shard, self._compacted, stats = await asyncio.to_thread(
            load_shard, self._log, self.config, image.metadata, os.getpid()
        )
        self._shard = shard
        self._image_version = -1
        records = self._apply_image(image).records  # changes made while down bump epochs now
        if records:
            await self._persist(records)
        stats["seconds"] = time.perf_counter() - started
        self.load_stats = stats
        self._metrics.loaded(stats["seconds"])
        self.state = "active"
        self._metrics.set_state("active")
        log.info("offsets-%d loaded %s", self.partition, stats)

    # ------------------------------------------------------------------ routing

    def _owns(self, req: object) -> bool:
        return all(
            partition_for(g, self.num_partitions) == self.partition for g in group_ids_of(req)
        )

    def _refuse(self, req: object, error: Errors) -> object:
        return error_response(req, error, f"offsets-{self.partition}: {error.name}")
