"""``ConsumerClient``: a Ray actor running the client half of KIP-848 for one or many members.

Each member is a pure ``ConsumerMemberClient``; this actor is their I/O: it polls them for
due heartbeats, sends the heartbeats of all its members to their coordinator as *one*
``handle_batch`` call (one Ray call carrying many requests, each answered on its own, since a
Python actor handles only a few thousand calls a second), and feeds the replies back. It
keeps one call in flight to its coordinator at a time, as Kafka's clients keep one request in
flight, because Ray does not order calls to an async actor.

A dead or restarting coordinator shows up as a failed call: every member in it backs off and
retries, keeping its partitions until its own session deadline says the coordinator must
have fenced it. Timeline events can also be appended to a file (``timeline_path``), so a
chaos run can read the history of a consumer actor it killed.

In front of an upstream its members read their partitions' real records and hand them to the
user's ``process`` function before committing (``real_records.py``); without one they process
the synthetic stream.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import logging
import os
import time
import uuid
from typing import Any

import ray
from ray.exceptions import RayActorError

from actors.clients.owner_watch import watch_owner
from actors.clients.real_records import MAX_POLL_RECORDS, RealRecords
from actors.clients.timeline import TimelineSink
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE, partition_actor_name
from actors.runtime.packed import pack, unpack, waker_token
from assignors.client.interfaces import PartitionAssignor
from assignors.client.sticky import StickyPartitionAssignor
from protocol import messages as m
from protocol.client.consumer import ConsumerMemberClient
from protocol.client.stream_progress import StreamProgress
from protocol.placement import partition_for

log = logging.getLogger(__name__)

# How long one batched call may take before its members count it as failed.
CALL_TIMEOUT_S = 30.0
# The loop wakes at least this often, to notice stop() and due heartbeats.
MAX_SLEEP_S = 0.5
# How long a consumer of real records that found none waits before reading again.
READ_IDLE_S = 0.1
LEAVE_TIMEOUT_S = 10.0
MAX_MEMBERS_PER_ACTOR = 100_000


# What a member sends itself (its heartbeat, and the steps of a client-side assignment); the
# rest of a batch is its stream's offset fetches and commits.
MEMBER_REQUESTS = (
    m.ConsumerGroupHeartbeatRequest,
    m.ConsumerGroupPrepareAssignmentRequest,
    m.ConsumerGroupInstallAssignmentRequest,
)
CLIENT_ASSIGNORS = {"sticky": StickyPartitionAssignor}


def client_assignor(spec: str | PartitionAssignor) -> PartitionAssignor:
    """A fresh client-side assignor for one member: by name, or a copy of the one given."""
    if isinstance(spec, str):
        if spec not in CLIENT_ASSIGNORS:
            raise ValueError(f"unknown client assignor {spec!r}: one of {sorted(CLIENT_ASSIGNORS)}")
        return CLIENT_ASSIGNORS[spec]()
    return copy.deepcopy(spec)


def new_member_id() -> str:
    """Kafka 4's clients make their own member id: a random UUID, base64 without padding."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


@ray.remote(num_cpus=0, max_restarts=0)
class ConsumerClient:
    """A KIP-848 consumer process: one or many ``ConsumerMemberClient`` members and their I/O.

    It exists to run the pure client halves against the real coordinator on Ray, cheaply
    (``num_cpus=0``, many members per actor, their requests batched into one call), so groups
    of thousands of members and chaos runs are affordable. Guarantees: one call in flight to
    the coordinator at a time; a member's offset commits leave before the heartbeat that
    acknowledges a revocation; a failed call is a failure for every member in it (they back
    off and keep their partitions only as long as the session rules allow); with
    ``timeline_path``, every timeline event reaches the file before the requests it led to
    are sent.
    """

    def __init__(
        self,
        group_id: str,
        num_partitions: int,
        n: int = 1,
        instance_id: str | None = None,
        timeline_path: str | None = None,
        owner: Any = None,
        **member_options: Any,
    ) -> None:
        """``member_options`` go to every hosted ``ConsumerMemberClient``: ``topics`` or
        ``topic_regex``, ``rack_id``, ``rebalance_timeout_ms``, ``server_assignor``,
        ``session_timeout_ms``, and the ``on_revoke`` / ``on_assign`` / ``on_lost`` callbacks;
        ``client_assignors`` (names such as ``"sticky"``, or ``PartitionAssignor`` objects,
        copied for each member) to assign on the client instead of the coordinator.
        With ``n > 1`` and an ``instance_id``, member ``i`` is the static member
        ``<instance_id>-<i>``. The actor's own options: ``stream`` (process the partitions'
        records and commit, default on: the upstream's real records in front of one, handed
        to ``process(records)``, at most ``max_poll_records`` at a time; else a synthetic
        stream at ``records_per_s``), ``commit_interval_s``, and
        ``revocation_cost_ms``: what revoking one partition costs (a real consumer commits and
        flushes it), paid before the member's next requests (the acknowledgement, or the
        leave) go out, without holding up the other members of the actor; ``wake_ups``
        (default on): hand the coordinator this actor's handle, so that it can wake a member
        whose target changed instead of waiting for its next heartbeat
        (``actors/runtime/wakers.py``). ``owner``: the spawner's ``OwnerAnchor``; when it dies
        the members leave and the actor exits (``owner_watch.py``)."""
        if not 0 < n <= MAX_MEMBERS_PER_ACTOR:
            raise ValueError(f"n must be in 1..{MAX_MEMBERS_PER_ACTOR}")
        self.group_id = group_id
        self._topic_names: dict[str, str] = {}
        stream = member_options.pop("stream", True)
        records_per_s = member_options.pop("records_per_s", 50.0)
        commit_interval_s = member_options.pop("commit_interval_s", 0.5)
        assignor_specs = member_options.pop("client_assignors", None) or ()
        revocation_cost_ms = member_options.pop("revocation_cost_ms", 0)
        wake_ups = member_options.pop("wake_ups", True)
        self._process = member_options.pop("process", None)
        self._max_poll_records = member_options.pop("max_poll_records", MAX_POLL_RECORDS)
        self._records: RealRecords | None = None  # in front of an upstream (``_run``)
        # Whether the controller said if there is an upstream: until then nothing is processed
        # (a synthetic step taken in front of an upstream would commit records never read).
        self._source_known = False
        if revocation_cost_ms < 0:
            raise ValueError("revocation_cost_ms must not be negative")
        self._revocation_cost_s = revocation_cost_ms / 1000
        # Member index -> partitions it revoked whose commit-and-flush is not paid yet, and
        # the requests of a member paying it: (when they may leave, the requests).
        self._to_pay: dict[int, int] = {}
        self._held: dict[int, tuple[float, list[tuple[ConsumerMemberClient, object]]]] = {}
        self._members: list[ConsumerMemberClient] = []
        self._progress: list[StreamProgress | None] = []
        for i in range(n):
            progress = (
                StreamProgress(group_id, records_per_s, commit_interval_s) if stream else None
            )
            self._progress.append(progress)
            options = _with_progress(member_options, progress)
            if revocation_cost_ms > 0:
                options = dict(options, on_revoke=self._counting(i, options.get("on_revoke")))
            self._members.append(
                ConsumerMemberClient(
                    group_id,
                    new_member_id(),
                    instance_id=None if instance_id is None else (
                        instance_id if n == 1 else f"{instance_id}-{i}"
                    ),
                    topic_names=self._topic_names,
                    client_assignors=[client_assignor(s) for s in assignor_specs],
                    **options,
                )
            )
        self._coordinator = ray.get_actor(
            partition_actor_name(partition_for(group_id, num_partitions)), namespace=NAMESPACE
        )
        self._controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        # This actor's handle for the partition to wake it by, pickled once (packed.py).
        self._waker = (
            waker_token(ray.get_runtime_context().current_actor) if wake_ups else None
        )
        self._by_id: dict[str, ConsumerMemberClient] = {}
        self._woken = asyncio.Event()
        self._wake_ups = 0
        self._timeline = TimelineSink(timeline_path)
        self._progress_by_member = {
            id(mem): p for mem, p in zip(self._members, self._progress, strict=True)
        }
        self._stopping = False
        self._calls = 0
        self._requests = 0
        self._heartbeats = 0  # requests that were heartbeats (the rest: offset commits, fetches)
        self._failed_calls = 0
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._owner_watch = watch_owner(owner, self._owner_gone)

    # ------------------------------------------------------------------ the contract

    async def assignment(self) -> list[tuple[str, int]]:
        """What this actor's members own now (all of them, for a multi-member actor)."""
        return sorted(tp for mem in self._members for tp in mem.assignment)

    async def assignments(self) -> dict[str, list[tuple[str, int]]]:
        return {mem.member_id: mem.assignment for mem in self._members}

    async def timeline(self) -> list[dict]:
        """The members' events; over real records also what they processed and committed
        (the upstream's offsets)."""
        events = [dict(e, group_id=self.group_id) for mem in self._members for e in mem.timeline]
        if self._records is not None:
            events += [dict(e, group_id=self.group_id, member_id=mem.member_id)
                       for mem, p in zip(self._members, self._progress, strict=True)
                       if p is not None for e in p.events]
        return sorted(events, key=lambda e: e["t"])

    async def stop(self, leave: bool = True) -> None:
        """Leave the group (or, with ``leave=False``, just stop heartbeating) and halt."""
        if leave:
            for mem in self._members:
                mem.leave()
            self._woken.set()  # the leave goes out now, not when the loop next wakes
            deadline = time.monotonic() + LEAVE_TIMEOUT_S
            while time.monotonic() < deadline and any(
                mem.state not in ("stopped", "failed") for mem in self._members
            ):
                await asyncio.sleep(0.05)
        self._stopping = True
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._flush_timeline()
        if self._records is not None:
            self._records.close()

    async def members(self) -> list[dict[str, Any]]:
        return [
            {
                "member_id": mem.member_id,
                "epoch": mem.member_epoch,
                "state": mem.state,
                "error": mem.error,
                "assignment": mem.assignment,
            }
            for mem in self._members
        ]

    async def wake(self, member_ids: list[str]) -> None:
        """The coordinator's hint that these members' targets changed: heartbeat at once."""
        if any(mid not in self._by_id for mid in member_ids):
            self._by_id = {mem.member_id: mem for mem in self._members}
        for mid in member_ids:
            mem = self._by_id.get(mid)
            if mem is not None and mem.heartbeat_now():
                self._wake_ups += 1
        self._woken.set()

    async def stats(self) -> dict[str, int]:
        return {
            "wake_ups": self._wake_ups,
            "calls": self._calls,
            "requests": self._requests,
            "heartbeats": self._heartbeats,
            "failed_calls": self._failed_calls,
            "pid": os.getpid(),
            "records_processed": self._records.records_processed if self._records else 0,
            "process_errors": list(self._records.errors) if self._records else [],
        }

    async def _owner_gone(self) -> None:
        """The driver that spawned this actor exited (``owner_watch``): leave, unless
        already stopped."""
        if not self._stopping:
            await self.stop(leave=True)

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        await self._refresh_topic_names()
        await self._find_records()
        while not self._stopping:
            now_s = time.monotonic()
            batch = self._poll(now_s)
            if batch:
                # What was processed is on disk before its commit leaves: a killed actor's file
                # never shows less processing than the coordinator may have committed.
                self._flush_timeline()
                await self._send(batch)
                self._flush_timeline()
                if any(mem.partitions_unresolved for mem in self._members):
                    await self._refresh_topic_names()
                continue  # acknowledgements are due at once
            self._flush_timeline()  # a poll may have recorded a loss at its deadline
            if self._records is not None:
                read = await self._records.step([p for p in self._progress if p is not None])
                self._flush_timeline()
                if read:
                    continue  # more may be waiting; heartbeats and commits come first
            dues = [
                d
                for i, mem in enumerate(self._members)
                if (d := self._held[i][0] if i in self._held else mem.next_due()) is not None
            ]
            idle = READ_IDLE_S if self._records is not None else MAX_SLEEP_S
            wait = min([idle, *[d - time.monotonic() for d in dues]])
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._woken.wait(), max(wait, 0.001))
            self._woken.clear()

    def _poll(self, now_s: float) -> list[tuple[ConsumerMemberClient, object]]:
        """Each member's due requests: its offset fetches and commits first, then its
        heartbeat, so a revoked partition's last commit lands before the acknowledgement."""
        batch: list[tuple[ConsumerMemberClient, object]] = []
        for i, (mem, progress) in enumerate(zip(self._members, self._progress, strict=True)):
            if i in self._held:
                if now_s < self._held[i][0]:
                    continue  # still committing and flushing what it revoked
                batch += self._held.pop(i)[1]
                continue
            epoch = mem.member_epoch  # a leave changes it inside poll; commit with this one
            heartbeat = mem.poll(now_s)
            requests: list[tuple[ConsumerMemberClient, object]] = []
            if progress is not None:
                if self._records is None and self._source_known:
                    progress.advance(now_s)  # the synthetic stream
                requests += [(mem, req) for req in progress.requests(mem.member_id, epoch, now_s)]
            if heartbeat is not None:
                requests.append((mem, heartbeat))
            revoked = self._to_pay.pop(i, 0)
            if revoked and requests:
                self._held[i] = (now_s + revoked * self._revocation_cost_s, requests)
                continue
            batch += requests
        return batch

    def _counting(self, i: int, then):
        """An ``on_revoke`` that notes how many partitions member ``i`` must pay for."""

        def on_revoke(parts):
            self._to_pay[i] = self._to_pay.get(i, 0) + len(parts)
            if then is not None:
                then(parts)

        return on_revoke

    async def _send(self, batch: list[tuple[ConsumerMemberClient, object]]) -> None:
        self._calls += 1
        self._requests += len(batch)
        self._heartbeats += sum(
            isinstance(req, m.ConsumerGroupHeartbeatRequest) for _, req in batch
        )
        try:
            # Pickled by us, not by Ray: ~150 µs less a call, ~300 µs with the waker
            # (actors/runtime/packed.py).
            packed = pack([req for _, req in batch])
            if self._waker is None:
                ref = self._coordinator.handle_batch_packed.remote(packed)
            else:
                ref = self._coordinator.handle_batch_packed.remote(packed, waker=self._waker)
            replies = unpack(await asyncio.wait_for(ref, CALL_TIMEOUT_S))
        except (RayActorError, asyncio.TimeoutError, ray.exceptions.RayError) as e:
            self._failed_calls += 1
            log.debug("heartbeat batch failed: %s", e)
            now_s = time.monotonic()
            for mem, req in batch:
                if isinstance(req, MEMBER_REQUESTS):
                    mem.on_failure(now_s)
                else:
                    self._progress_of(mem).on_failure(req)
            return
        now_s = time.monotonic()
        for (mem, req), reply in zip(batch, replies, strict=True):
            if isinstance(req, MEMBER_REQUESTS):
                mem.on_response(now_s, reply)
            else:
                self._progress_of(mem).on_reply(req, reply, now_s)

    def _progress_of(self, mem: ConsumerMemberClient) -> StreamProgress:
        return self._progress_by_member[id(mem)]

    async def _find_records(self) -> None:
        """In front of an upstream, read its real records (asked of the controller once: a
        Cohort's upstream does not change while it runs). Asked whether or not members are
        hosted yet: members added after the loop started process the same source (a host that
        took the synthetic stream for them committed records it never read)."""
        while not self._stopping:
            try:
                settings = await self._controller.upstream_settings.remote()
            except ray.exceptions.RayError as e:  # restarting: ask again, never guess
                log.info("the controller did not say whether there is an upstream: %s", e)
                await asyncio.sleep(MAX_SLEEP_S)
                continue
            if settings is not None:
                self._records = RealRecords(settings, self._process, self._max_poll_records)
            self._source_known = True
            return

    async def _refresh_topic_names(self) -> None:
        try:
            topics = await self._controller.topics.remote()
        except ray.exceptions.RayError as e:
            log.debug("topic names not refreshed: %s", e)
            return
        self._topic_names.update({t.topic_id: t.name for t in topics})

    def _flush_timeline(self) -> None:
        """Append new timeline events to ``timeline_path`` (survives this actor's death)."""
        sink = self._timeline
        if sink.path is None:
            return
        for i, (mem, progress) in enumerate(zip(self._members, self._progress, strict=True)):
            sink.collect(("member", i), mem.events_recorded, lambda mem=mem: mem.timeline,
                         group_id=self.group_id)
            if progress is not None:  # it keeps every event: their count is what it recorded
                sink.collect(("progress", i), len(progress.events), lambda p=progress: p.events,
                             group_id=self.group_id, member_id=mem.member_id)
        sink.write()


def _with_progress(options: dict[str, Any], progress: StreamProgress | None) -> dict[str, Any]:
    """The member's callbacks, with the stream's bookkeeping run first (a user callback
    given in ``options`` still runs after it)."""
    if progress is None:
        return options
    out = dict(options)
    user = {k: options.get(k) for k in ("on_assign", "on_revoke", "on_lost")}

    def chain(own, theirs):
        def callback(parts):
            own(parts)
            if theirs is not None:
                theirs(parts)

        return callback

    out["on_assign"] = chain(progress.assigned, user["on_assign"])
    out["on_revoke"] = chain(lambda p: progress.revoked(p, time.monotonic()), user["on_revoke"])
    out["on_lost"] = chain(lambda p: progress.lost(p, time.monotonic()), user["on_lost"])
    return out
