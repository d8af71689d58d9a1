"""The turn logic of one ``__consumer_offsets`` partition, with no Ray in it.

The runtime half of Kafka's ``CoordinatorRuntime``: the rules live in the pure
``GroupCoordinatorShard``; ``PartitionTurns`` owns the mailbox, the timers and a
``PartitionStorage``, driven by asyncio alone, so tests run it over ``MemoryStorage`` with an
injected clock. ``OffsetsPartition`` (``partition.py``) is its Ray shell.

One loop task drains the mailbox in turns. A turn fires due timers, applies the newest pending
controller image and every queued request (no ``await`` inside a state change; one
``handle_batch``, so a group's target is computed once per turn), appends all the records the
turn produced as one batch (group commit), and only then releases the turn's replies
(invariant 4). A classic JoinGroup or SyncGroup may be answered in a later turn: replies are
matched to requests by identity (``OwedReplies``). While it loads (in a worker thread) it
answers COORDINATOR_LOAD_IN_PROGRESS; the shard's clock starts at the load, so no member is
fenced for the coordinator's own downtime.

A turn fails three ways, and none leaves memory unlike the storage:

- a write fails (a full disk): memory is ahead of storage. Every reply owed gets
  COORDINATOR_NOT_AVAILABLE (clients retry), the shard is dropped, and the partition,
  "recovering", retries with backoff to read back what was durable (``recover``), then serves
  exactly what it had acknowledged;
- a handler, timer or metadata change raises anything but ``CoordinatorError`` (a bug; the shard
  raises it rather than answer over half-applied state): the same, before anything of the turn
  was written, so nothing it emitted survives; logged, counted (``turn_failures``), and reloaded
  with backoff if it recurs turn after turn;
- a newer incarnation loaded the storage (Ray restarted the actor while this process, cut off,
  still ran): its writes are refused; it becomes "fenced" and answers NOT_COORDINATOR for good.

Bounds: ``MAX_QUEUED_REQUESTS`` mailbox entries (a request or a query counts one), at most
``MAX_WAITING_REPLIES`` owed, ``MAX_REQUESTS_PER_TURN``, one pending image, ``MAX_WAKER_MEMBERS``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable

from actors.runtime.compaction import CompactedState
from actors.runtime.controller import ControllerImage
from actors.runtime.fencing import LogFencedError
from actors.runtime.loading import load_shard
from actors.runtime.mailbox import (
    MAX_WAITING_REPLIES,
    Event,
    Mailbox,
    OwedReplies,
    distinct,
    merge_replies,
    refusal,
)
from actors.runtime.metrics import NoMetrics, PartitionMetrics, ThrottledMetrics
from actors.runtime.offload import BIG, off_loop
from actors.runtime.storage import PartitionStorage
from actors.runtime.turn_log import TurnLog
from actors.runtime.wakers import Wakers
from protocol.api import error_response, routing_error
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from protocol.records import Record
from protocol.shard import CoordinatorResult, GroupCoordinatorShard

log = logging.getLogger(__name__)

# Reloading after a failed write (or a load that cannot write its epoch, or a bug that failed
# turn after turn) is retried with a backoff doubling from the first bound to the second.
RECOVERY_BACKOFF_S = (0.1, 5.0)
# How long the loop sleeps with no timer due; any event wakes it earlier.
IDLE_WAIT_S = 1.0


def now_ms() -> int:
    return int(time.monotonic() * 1000)


class PartitionTurns:
    """One partition's mailbox, turns and storage; the shard's only caller.

    Guarantees: events are applied one at a time, in turns; no reply leaves before every record
    its turn produced is durable (invariant 4); a turn that fails leaves nothing of itself, in
    the storage or in the shard that serves next (it is rebuilt from the storage); a restarted
    partition serves the state it had acknowledged; what it holds is bounded, and beyond a
    bound, or while loading, a request gets a retriable Kafka error, never a hang. It knows no
    group type: what differs by type, the shard answers (its runtime hooks).
    """

    def __init__(
        self,
        name: str,
        storage: PartitionStorage,
        config: CoordinatorConfig,
        fetch_image: Callable[[], Awaitable[ControllerImage]],
        owns: Callable[[object], bool] = lambda request: True,
        clock_ms: Callable[[], int] = now_ms,
        in_thread: Callable[..., Awaitable] = asyncio.to_thread,
        metrics: PartitionMetrics | NoMetrics | None = None,
        seed: int = 0,
        on_loaded: Callable[[], None] = lambda: None,
    ) -> None:
        """``fetch_image``: the controller's current image (read at every load); ``owns``:
        whether a request's groups hash to this partition; ``in_thread``: how blocking storage
        calls run off the event loop; ``seed``: of the shard's member ids; ``on_loaded``: run
        after every load, before the first turn (the process's garbage policy)."""
        self.name = name
        self.storage = storage
        self.config = config
        self.state = "loading"
        self.load_stats: dict = {}
        self.recoveries = 0  # reloads in place after a failed write
        self.load_failures = 0  # loads (or reloads) that the storage refused, retried
        self.turn_failures = 0  # turns a bug failed (each reloaded the shard)
        self.failure: str | None = None  # why the load was refused for good ("failed")
        self.shard: GroupCoordinatorShard | None = None
        self.image_version = -1
        self._fetch_image = fetch_image
        self._owns = owns
        self._clock_ms = clock_ms
        self._in_thread = in_thread
        self._seed = seed
        self._on_loaded = on_loaded
        self._failed_in_a_row = 0  # turns failed by a bug since the last that worked
        self._log = TurnLog(name, storage, in_thread)  # appends, compacted state, snapshots
        self._mailbox = Mailbox()
        self._pending_image: ControllerImage | None = None
        # With the mailbox, at most MAX_WAITING_REPLIES (``refusal`` admits no more).
        self._owed = OwedReplies()
        # The idle loop's wake-up, resolved by the next piece of work (``_nudge``).
        self._wake: asyncio.Future | None = None
        self._wakers = Wakers()  # client actors to tell of their members' new targets
        self._metrics = ThrottledMetrics(metrics if metrics is not None else NoMetrics())
        self._metrics.set_state("loading")

    # ------------------------------------------------------------------ what callers ask

    async def handle_batch(self, requests: list[object], waker: object = None,
                           typed: bool = False) -> list[object]:
        """A reply for each request, once the records behind it are durable. ``waker``: the
        client actor that sent them, to be woken when its members' targets change.
        ``typed``: the caller built every request with the Kafka wire codec in this process,
        so the shard need not type-check them again; only an in-process caller may say so (a
        Ray method must never pass a caller's word on, or any client could forge it)."""
        if type(requests) is not list:
            return [error_response(requests, Errors.INVALID_REQUEST, "expected a list")]
        done = asyncio.get_running_loop().create_future()
        self.submit(requests, done, typed, waker)
        return await done

    def submit(self, requests: list[object], done: asyncio.Future, typed: bool = True,
               waker: object = None) -> None:
        """``handle_batch`` without a coroutine: ``requests`` enter the mailbox now, as one
        entry, and ``done`` gets the list of their replies, in order, once the records behind
        them are durable (at once for those refused; never if the caller cancelled it). What
        a partition's own listener sends on its hot path, with ``typed``."""
        error = refusal(self.state, self.queued, len(self._owed), len(requests))
        if error is not None:
            if not done.done():
                done.set_result([self._refuse(r, error) for r in requests])
            return
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
        if not mine:
            if not done.done():
                done.set_result(replies)
            return
        if waker is not None:
            members = GroupCoordinatorShard.wakeable_members([requests[i] for i in mine])
            self._wakers.note(waker, members)
        if len(mine) < len(requests):  # the others are answered already: merged when done
            answered, done = done, asyncio.get_running_loop().create_future()
            done.add_done_callback(functools.partial(merge_replies, replies, mine, answered))
        self._enqueue(Event(distinct([requests[i] for i in mine]), done=done, typed=typed,
                            big=BIG.get()))

    def update_image(self, image: ControllerImage) -> None:
        """The controller's push: kept until the next turn, where it replaces the metadata if
        it is newer than the one applied. A newer push replaces a pending one (images are
        whole), so pushes cost the mailbox one slot at most. A push that arrives while the
        partition loads is kept too: the load read the controller's image when it began, and a
        newer one pushed since would otherwise wait for the controller's next change."""
        if self.state in ("fenced", "failed"):
            return
        if self._pending_image is None or image.version > self._pending_image.version:
            self._pending_image = image
        self._nudge()

    async def query(self, fn: Callable[[GroupCoordinatorShard], object]) -> object:
        """``fn(shard)`` between two turns, answered once the state it saw is durable. ``fn``
        must only read; what it raises is raised here and fails nothing else."""
        if self.state != "active":
            raise RuntimeError(f"{self.name} is {self.state}")
        if refusal(self.state, self.queued, len(self._owed), 1) is not None:
            raise RuntimeError(f"{self.name}: mailbox full")
        done = asyncio.get_running_loop().create_future()
        self._enqueue(Event(query=fn, done=done))
        return await done

    def info(self) -> dict:
        shard = self.shard
        return {
            "state": self.state,
            "groups": len(shard.groups) if shard else 0,
            "records": len(self._log.compacted),  # live records: the latest of each key
            "image_version": self.image_version,
            "epoch": self.storage.epoch,
            "recoveries": self.recoveries,
            "load_failures": self.load_failures,
            "turn_failures": self.turn_failures,
            "load": self.load_stats,
            "queued": self.queued,
        }

    # ------------------------------------------------------------------ the loop

    async def run(self) -> None:
        """Load, then serve turn after turn until fenced or failed for good."""
        await self._load_until_serving()
        while self.state == "active":
            await self._wait_for_work()
            await self._take_turn()

    async def _take_turn(self) -> None:
        """One turn over what the mailbox holds, and what a failed one costs. Its entries are
        this frame's alone: they hold the turn's requests and replies (a big one's hundreds of
        thousands of objects), which must not outlive the turn while the loop waits for the
        next (``offload.big_request`` turns the collector back on when its request has been
        answered; objects still alive then are a young collection's to scan, on the loop)."""
        events = self._mailbox.take()
        try:
            await self._turn(events)
        except LogFencedError:
            log.warning("%s: a newer incarnation owns the storage", self.name)
            self._abandon(Errors.NOT_COORDINATOR, events)
            self._fence()
        except OSError:
            log.exception("%s: a write failed; reloading from storage", self.name)
            self._abandon(Errors.COORDINATOR_NOT_AVAILABLE, events)
            await self._recover()
        except Exception:
            # A bug: memory may hold half a request; only a reload from storage, which
            # holds nothing of this turn, reconciles them.
            log.exception("%s: a turn failed (a bug); reloading from storage", self.name)
            self._abandon(Errors.COORDINATOR_NOT_AVAILABLE, events)
            await self._reload_after_bug()
        else:
            self._failed_in_a_row = 0

    @property
    def queued(self) -> int:
        """Mailbox entries, by ``Event.weight``."""
        return self._mailbox.queued

    def _enqueue(self, event: Event) -> None:
        self._mailbox.put(event)
        self._nudge()

    def _nudge(self) -> None:
        """Wake the idle loop: its task resumes in the next loop iteration (an
        ``asyncio.Event`` under ``wait_for`` took three: the waiting task, the timeout
        wrapper's callback, then the loop's task)."""
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def _wait_for_work(self) -> None:
        if self._mailbox or self._pending_image is not None:
            return
        deadline = self.shard.next_deadline_ms()
        timeout = IDLE_WAIT_S
        if deadline is not None:
            timeout = min(timeout, max(0.0, (deadline - self._clock_ms()) / 1000))
        loop = asyncio.get_running_loop()
        self._wake = wake = loop.create_future()
        timer = loop.call_later(timeout, _resolve, wake)
        try:
            await wake
        finally:
            timer.cancel()
            self._wake = None

    async def _turn(self, events: list[Event]) -> None:
        """Apply ``events`` (and due timers, and a pending image), persist what they emitted,
        then release their replies. Raises what the shard or the storage raises; the caller
        then answers what the turn owed (``_abandon``)."""
        started = time.perf_counter()
        shard = self.shard
        ticked = shard.tick(self._clock_ms())
        records, completed = list(ticked.records), list(ticked.replies)
        image, self._pending_image = self._pending_image, None
        if image is not None:
            result = self._apply_image(image)
            records += result.records
            completed += result.replies
        requests: list[object] = []
        for ev in events:
            if ev.requests:
                self._owed.owe(ev)
                requests += ev.requests
        assert len(self._owed) + self.queued <= MAX_WAITING_REPLIES, "owed replies bounded"
        if requests:
            checked = {id(req) for ev in events if ev.typed for req in ev.requests}
            if any(ev.big for ev in events):  # seconds of work: the loop serves meanwhile
                result = await off_loop(shard.handle_batch, requests, checked=checked)
            else:
                result = shard.handle_batch(requests, checked=checked)
            records += result.records
            completed += result.replies
        answers = [_ask(ev.query, shard) if ev.query else None for ev in events]
        busy = time.perf_counter() - started
        if records:
            await self._log.append(records)
        else:
            await self._log.check_fence()  # a zombie's reads stop too
        self._release(events, completed, answers)
        self._wakers.forget(shard.departed_members(records))
        self._wakers.wake(shard.take_wake_ups(decide=len(self._wakers) > 0))
        self._observe(busy, records)
        await self._log.maybe_snapshot()

    def _apply_image(self, image: ControllerImage) -> CoordinatorResult:
        if image.version <= self.image_version:
            return CoordinatorResult()
        self.image_version = image.version
        self.shard.set_group_configs(image.group_configs)
        return self.shard.update_metadata(image.metadata)

    def _abandon(self, error: Errors, taken: list[Event]) -> None:
        """Answer every request still owed a reply with ``error`` (the records behind its real
        reply are not durable, or this incarnation may no longer write), and empty the mailbox.
        Reads of the shard taken into the failed turn fail the same way."""
        self._owed.refuse_all(lambda req: self._refuse(req, error))
        dropped = [*taken, *self._mailbox.drain()]
        for ev in dropped:
            if ev.done is None or ev.done.done():
                continue
            if ev.requests:  # not taken yet, or the turn failed before it owed them
                ev.done.set_result([self._refuse(req, error) for req in ev.requests])
            else:
                ev.done.set_exception(RuntimeError(f"{self.name}: {error.name}"))

    def _release(
        self, events: list[Event], completed: list[tuple[object, object]], answers: list
    ) -> None:
        """Hand out the replies the turn completed (now durable), wherever they were asked."""
        self._owed.settle(completed)
        for ev, answer in zip(events, answers, strict=True):
            if ev.query is not None and ev.done is not None and not ev.done.done():
                failed, value = answer
                if failed:
                    ev.done.set_exception(value)
                else:
                    ev.done.set_result(value)

    def _observe(self, busy_s: float, records: list[Record]) -> None:
        shard = self.shard
        self._metrics.turn(busy_s, self.queued, shard.epoch_bumps(records), shard.census)

    # ------------------------------------------------------------------ loading

    async def _load_until_serving(self) -> None:
        """Load (or reload) until it works, the storage turns out corrupt, or a newer
        incarnation fenced this one; a storage that fails is retried with backoff."""
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
                log.warning("%s: cannot load (storage); retrying in %.1f s", self.name,
                            delay_s, exc_info=True)
            except Exception as e:  # LogCorruptError among them: lost acknowledged state
                log.exception("%s failed to load", self.name)
                self.failure = f"{type(e).__name__}: {e}"
                self._set_state("failed")
                return
            self.shard = None
            await asyncio.sleep(delay_s)
            delay_s = min(2 * delay_s, max_delay_s)

    async def _recover(self) -> None:
        """After a failed write: drop memory (it is ahead of storage) and reload."""
        self.recoveries += 1
        await self._reload()

    async def _reload_after_bug(self) -> None:
        """After a turn a bug failed: drop memory (it may hold half a request) and reload; a
        bug that fails turn after turn waits longer each time, so it cannot spin the CPU."""
        self.turn_failures += 1
        self._failed_in_a_row += 1
        if self._failed_in_a_row > 1:
            low_s, high_s = RECOVERY_BACKOFF_S
            self._set_state("recovering")
            self._abandon(Errors.COORDINATOR_NOT_AVAILABLE, [])
            await asyncio.sleep(min(low_s * 2 ** (self._failed_in_a_row - 2), high_s))
        await self._reload()

    async def _reload(self) -> None:
        self._set_state("recovering")
        self._abandon(Errors.COORDINATOR_NOT_AVAILABLE, [])
        self.shard = None
        self._log.compacted = CompactedState()
        await self._load_until_serving()

    def _fence(self) -> None:
        """A newer incarnation owns the storage: stop serving, for good, and write nothing."""
        self._set_state("fenced")
        self._abandon(Errors.NOT_COORDINATOR, [])
        self.shard = None
        self.storage.close()

    async def _load(self) -> None:
        started = time.perf_counter()
        image = await self._fetch_image()
        shard, self._log.compacted, stats = await self._in_thread(
            load_shard, self.storage, self.config, image.metadata, self._seed,
            self.storage.epoch is not None,  # loaded before: recover, keeping the epoch
            self._clock_ms, image.group_configs,
        )
        shard.take_wake_ups(decide=False)  # what the load replayed is no news to any client
        self.shard = shard
        self.image_version = -1
        records = self._apply_image(image).records  # changes made while down bump epochs now
        if records:
            await self._log.append(records)
        stats["seconds"] = time.perf_counter() - started
        self.load_stats = stats
        self._metrics.loaded(stats["seconds"])
        self._on_loaded()
        self._set_state("active")
        log.info("%s loaded %s", self.name, stats)

    def _set_state(self, state: str) -> None:
        self.state = state
        self._metrics.set_state(state)

    def _refuse(self, req: object, error: Errors) -> object:
        return error_response(req, error, f"{self.name}: {error.name}")


def _resolve(wake: asyncio.Future) -> None:
    if not wake.done():
        wake.set_result(None)


def _ask(fn: Callable[[GroupCoordinatorShard], object], shard: GroupCoordinatorShard) -> tuple:
    """(failed, answer or exception) of a read: a query that raises fails alone."""
    try:
        return False, fn(shard)
    except Exception as e:
        return True, e
