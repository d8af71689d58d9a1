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
downtime).

A write that fails (a full disk, a failing fsync) leaves memory ahead of disk. The turn's
replies never go out: every request owed a reply gets COORDINATOR_NOT_AVAILABLE (clients retry),
the shard is dropped, and the partition, "recovering", keeps answering COORDINATOR_NOT_AVAILABLE
while it retries, with backoff, to cut the log back to its last durable append and reload from
it, in the same process (``PartitionLog.recover``); then it serves exactly what it had
acknowledged. A log that a newer incarnation of this partition opened (Ray restarted it while
this process, cut off, still ran) refuses this one's writes: it becomes "fenced", answers
NOT_COORDINATOR to everything from then on (clients go find the new one) and writes nothing.
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
from pathlib import Path

import ray

from actors.runtime.compaction import CompactedState
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE, ControllerImage
from actors.runtime.fileops import FileOps
from actors.runtime.loading import load_shard
from actors.runtime.log import LogFencedError, PartitionLog
from actors.runtime.mailbox import MAX_REQUESTS_PER_TURN, MAX_WAITING_REPLIES, Event, refusal
from actors.runtime.metrics import PartitionMetrics
from actors.runtime.wakers import Wakers
from protocol.api import error_response, group_ids_of, routing_error
from protocol.codec import encode_record
from protocol.config import CoordinatorConfig
from protocol.consumer.describe import summarize_group
from protocol.errors import Errors
from protocol.placement import partition_for
from protocol.records import ConsumerGroupMetadataKey, Record
from protocol.shard import CoordinatorResult, GroupCoordinatorShard

log = logging.getLogger(__name__)

# Snapshot once the log since the last snapshot outgrows this and the compacted state twice.
SNAPSHOT_MIN_BYTES = 16 << 20
# A snapshot that could not be written is tried again no sooner than this (the log is fine).
SNAPSHOT_RETRY_S = 10.0
# Reloading after a failed write (or a load that cannot write its epoch) is retried with a
# backoff doubling from the first bound to the second while the disk keeps failing.
RECOVERY_BACKOFF_S = (0.1, 5.0)
# How long the loop sleeps with no timer due; any event wakes it earlier.
IDLE_WAIT_S = 1.0
METRICS_EVERY_S = 1.0


def now_ms() -> int:
    return int(time.monotonic() * 1000)


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
                 config: CoordinatorConfig, file_ops: FileOps | None = None) -> None:
        self.partition = partition
        self.num_partitions = num_partitions
        self.config = config
        self.state = "loading"
        self.load_stats: dict = {}
        self.recoveries = 0  # reloads in place after a failed write
        self.load_failures = 0  # loads (or reloads) that the disk refused, retried
        self._log = PartitionLog(Path(storage_path) / f"offsets-{partition}", file_ops=file_ops)
        self._snapshot_retry_at = 0.0
        self._shard: GroupCoordinatorShard | None = None
        self._image_version = -1
        self._compacted = CompactedState()
        self._mailbox: collections.deque[Event] = collections.deque()
        self._queued = 0
        # id(request) -> (its event, its index, the request): replies still owed. With the
        # mailbox, at most MAX_WAITING_REPLIES (``refusal`` admits no more).
        self._waiting: dict[int, tuple[Event, int, object]] = {}
        self._wakeup = asyncio.Event()
        self._wakers = Wakers()  # client actors to tell of their members' new targets
        self._metrics = PartitionMetrics(partition)
        self._metrics.set_state("loading")
        self._metrics_at = 0.0
        self._loop_task = asyncio.get_running_loop().create_task(self._run())

    # ------------------------------------------------------------------ requests

    async def handle(self, request: object) -> object:
        return (await self.handle_batch([request]))[0]

    async def handle_batch(self, requests: list[object], waker=None) -> list[object]:
        """Many requests in one Ray call (one client actor's members); each answered alone.
        ``waker``: that client actor, to be woken when its members' targets change."""
        if type(requests) is not list:
            return [error_response(requests, Errors.INVALID_REQUEST, "expected a list")]
        error = refusal(self.state, self._queued, len(self._waiting), len(requests))
        if error is not None:
            return [self._refuse(r, error) for r in requests]
        replies: list[object | None] = [None] * len(requests)
        mine: list[int] = []
        for i, req in enumerate(requests):
            # The runtime's own guard: what is not a request, or names a group by something
            # no Kafka client could send, is answered here, never hashed nor enqueued.
            why = routing_error(req)
            if why is not None:
                replies[i] = error_response(req, Errors.INVALID_REQUEST, why)
            elif self._owns(req):
                mine.append(i)
            else:
                replies[i] = self._refuse(req, Errors.NOT_COORDINATOR)
        if mine and waker is not None:
            self._wakers.note(waker, [requests[i] for i in mine])
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
            event = Event(batch, done=done)
            self._enqueue(event)
            for i, reply in zip(mine, await event.done, strict=True):
                replies[i] = reply
        return replies

    async def update_image(self, image: ControllerImage) -> None:
        """The controller's push; older images than the one applied are ignored."""
        if self.state == "active":
            self._enqueue(Event(image=image))

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
            "records": len(self._compacted),  # live records: the latest of each key
            "image_version": self._image_version,
            "epoch": self._log.epoch,
            "recoveries": self.recoveries,
            "load_failures": self.load_failures,
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
        self._enqueue(Event(query=fn, done=done))
        return await done

    # ------------------------------------------------------------------ the loop

    def _enqueue(self, event: Event) -> None:
        self._mailbox.append(event)
        self._queued += len(event.requests)
        self._wakeup.set()

    async def _run(self) -> None:
        await self._load_until_serving()
        while self.state == "active":
            await self._wait_for_work()
            try:
                await self._turn()
            except LogFencedError:
                log.warning("offsets-%d: a newer incarnation owns the log", self.partition)
                self._fence()
            except OSError:
                log.exception("offsets-%d: a write failed; reloading from the log", self.partition)
                await self._recover()
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
        try:
            if records:
                await self._append(records)
            else:
                self._log.check_fence()  # a zombie's reads stop too
        except LogFencedError:
            self._abandon(Errors.NOT_COORDINATOR, events)
            raise
        except OSError:
            self._abandon(Errors.COORDINATOR_NOT_AVAILABLE, events)
            raise
        self._release(events, completed, answers)
        self._wakers.forget(records)
        self._wakers.wake(shard.take_wake_ups(decide=len(self._wakers) > 0))
        self._observe(busy, records)
        await self._maybe_snapshot()

    def _take_events(self) -> list[Event]:
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

    async def _append(self, records: list[Record]) -> None:
        """Make the records durable (one write, one fsync); raises what the log raises."""
        encoded = [encode_record(r) for r in records]
        await asyncio.to_thread(self._log.append, encoded)
        for record, data in zip(records, encoded, strict=True):
            self._compacted.add(record, data)

    async def _maybe_snapshot(self) -> None:
        """Compact the log once it outgrows the state; a snapshot that cannot be written costs
        nothing but a retry later, unless it broke the log (then the turn loop recovers)."""
        grown = self._log.bytes_since_snapshot > max(
            SNAPSHOT_MIN_BYTES, 2 * self._compacted.size_bytes
        )
        if not grown or time.monotonic() < self._snapshot_retry_at:
            return
        try:
            await asyncio.to_thread(self._log.write_snapshot, self._compacted.records())
        except OSError:
            if self._log.failed:
                raise
            log.warning("offsets-%d: snapshot not written; retrying later", self.partition,
                        exc_info=True)
            self._snapshot_retry_at = time.monotonic() + SNAPSHOT_RETRY_S

    def _abandon(self, error: Errors, taken: list[Event]) -> None:
        """Answer every request still owed a reply with ``error`` (the records behind its real
        reply are not durable, or this incarnation may no longer write), and empty the mailbox.
        Reads of the shard taken into the failed turn fail the same way."""
        for ev, i, req in self._waiting.values():
            ev.replies[i] = self._refuse(req, error)
            ev.remaining -= 1
            if ev.remaining == 0 and ev.done is not None and not ev.done.done():
                ev.done.set_result(ev.replies)
        self._waiting.clear()
        while self._mailbox:
            ev = self._mailbox.popleft()
            if ev.requests and ev.done is not None and not ev.done.done():
                ev.done.set_result([self._refuse(req, error) for req in ev.requests])
            taken.append(ev)
        self._queued = 0
        for ev in taken:
            if ev.query is not None and ev.done is not None and not ev.done.done():
                ev.done.set_exception(RuntimeError(f"offsets-{self.partition}: {error.name}"))

    def _release(
        self, events: list[Event], completed: list[tuple[object, object]], answers: list
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

    async def _load_until_serving(self) -> None:
        """Load (or reload after a failed write) until it works, the log turns out corrupt, or
        a newer incarnation fenced this one; a disk that fails is retried with backoff."""
        delay_s, max_delay_s = RECOVERY_BACKOFF_S
        while True:
            try:
                await self._load()
                return
            except LogFencedError:
                self._fence()
                return
            except OSError:
                self.load_failures += 1
                log.warning("offsets-%d: cannot load (disk); retrying in %.1f s", self.partition,
                            delay_s, exc_info=True)
            except Exception:  # LogCorruptError among them: lost acknowledged state
                log.exception("offsets-%d failed to load", self.partition)
                self.state = "failed"
                self._metrics.set_state("failed")
                return
            self._shard = None
            await asyncio.sleep(delay_s)
            delay_s = min(2 * delay_s, max_delay_s)

    async def _recover(self) -> None:
        """After a failed write: drop memory (it is ahead of disk) and reload from the log."""
        self.state = "recovering"
        self._metrics.set_state("recovering")
        self.recoveries += 1
        self._abandon(Errors.COORDINATOR_NOT_AVAILABLE, [])
        self._shard = None
        self._compacted = CompactedState()
        await self._load_until_serving()

    def _fence(self) -> None:
        """A newer incarnation owns the log: stop serving, for good, and write nothing."""
        self.state = "fenced"
        self._metrics.set_state("fenced")
        self._abandon(Errors.NOT_COORDINATOR, [])
        self._shard = None
        self._log.close()

    async def _load(self) -> None:
        started = time.perf_counter()
        controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        image: ControllerImage = await controller.image.remote()
        shard, self._compacted, stats = await asyncio.to_thread(
            load_shard, self._log, self.config, image.metadata, os.getpid(),
            self._log.epoch is not None,  # loaded before: recover, keeping the epoch
        )
        shard.take_wake_ups(decide=False)  # what the load replayed is no news to any client
        self._shard = shard
        self._image_version = -1
        records = self._apply_image(image).records  # changes made while down bump epochs now
        if records:
            await self._append(records)
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
