"""``ClassicConsumer``: a Ray actor running the classic (JoinGroup/SyncGroup) consumer protocol.

The member itself is a pure ``ClassicMemberClient``; this actor is its I/O: it sends what the
client's ``poll`` returns to the coordinator partition the group hashes to, one request at a
time (Kafka's clients keep one in flight; Ray does not order calls to an async actor), and
feeds the reply back. A JoinGroup reply may be held by the coordinator until the whole group
has rejoined, so a call may last up to the rebalance timeout; while it waits the actor still
polls the client, so a partition whose ownership deadline passes is given up on time.

A group leader runs the assignor, which needs partition counts: the actor reads them from
the controller's image before each JoinGroup (any join may make it the leader) and, while
leading, every ``METADATA_REFRESH_S``, telling the client to rejoin when they changed (KIP-800
``topic_metadata_change``). A dead or restarting coordinator shows up as a failed call: the
client backs off and rejoins. Timeline events can also be appended to a file
(``timeline_path``), so a chaos run can read the history of a consumer it killed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from typing import Any

import ray

from actors.clients.owner_watch import watch_owner
from actors.clients.timeline import TimelineSink
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE, partition_actor_name
from actors.runtime.packed import pack, unpack
from protocol import messages as m
from protocol.client.classic import ClassicMemberClient
from protocol.placement import partition_for

log = logging.getLogger(__name__)

# The loop wakes at least this often, to notice stop() and due requests.
MAX_SLEEP_S = 0.5
# A call that is not held by the coordinator (heartbeat, SyncGroup, LeaveGroup) fails after this.
CALL_TIMEOUT_S = 30.0
# A JoinGroup may be held for the group's rebalance timeout: wait that long and then some.
JOIN_CALL_MARGIN_S = 10.0
LEAVE_TIMEOUT_S = 10.0
METADATA_REFRESH_S = 1.0


@ray.remote(num_cpus=0, max_restarts=0)
class ClassicConsumer:
    """A classic (JoinGroup/SyncGroup) consumer process: one ``ClassicMemberClient`` and its I/O.

    It exists to run the pure classic client half against the real coordinator on Ray, next
    to KIP-848 consumers in the same group (online migration), and to be killed in chaos runs.
    Guarantees: one request in flight at a time; while the coordinator holds a JoinGroup the
    member's ownership deadline is still watched, so partitions are given up on time; a
    leader assigns with the partition counts it just read, and rejoins when they change; with
    ``timeline_path``, every timeline event reaches the file after each exchange.
    """

    def __init__(
        self,
        group_id: str,
        num_partitions: int,
        topics: list[str] | None = None,
        instance_id: str | None = None,
        timeline_path: str | None = None,
        owner: Any = None,
        **options: Any,
    ) -> None:
        """``options`` go to ``ClassicMemberClient``: ``assignors``, ``session_timeout_ms``,
        ``rebalance_timeout_ms``, ``heartbeat_interval_ms``, ``join_reason``, ``rack_id``
        and the ``on_revoke`` / ``on_assign`` / ``on_lost`` callbacks; and the actor's own
        ``revocation_cost_ms``: what revoking one partition costs (a real consumer commits
        and flushes it), paid before the request that follows the revocation (JoinGroup,
        LeaveGroup) goes out, with the actor still answering calls meanwhile. ``owner``: the
        spawner's ``OwnerAnchor``; when it dies the member leaves (``owner_watch.py``)."""
        if not topics:
            raise ValueError("a classic consumer subscribes to a list of topic names")
        revocation_cost_ms = options.pop("revocation_cost_ms", 0)
        if revocation_cost_ms < 0:
            raise ValueError("revocation_cost_ms must not be negative")
        self._revocation_cost_s = revocation_cost_ms / 1000
        self._to_pay = 0  # partitions revoked whose commit-and-flush is not paid yet
        if revocation_cost_ms > 0:
            options["on_revoke"] = self._counting(options.get("on_revoke"))
        self.group_id = group_id
        self._counts: dict[str, int] = {}
        self.client = ClassicMemberClient(
            group_id,
            topics=topics,
            instance_id=instance_id,
            partitions_per_topic=self._counts,
            **options,
        )
        self._coordinator = ray.get_actor(
            partition_actor_name(partition_for(group_id, num_partitions)), namespace=NAMESPACE
        )
        self._controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        self._timeline = TimelineSink(timeline_path)
        self._metadata_checked_at = -float("inf")
        self._stopping = False
        self._stats = {"calls": 0, "failed_calls": 0, "joins": 0, "syncs": 0, "heartbeats": 0}
        self._task = asyncio.get_running_loop().create_task(self._run())
        self._owner_watch = watch_owner(owner, self._owner_gone)

    # ------------------------------------------------------------------ the contract

    async def assignment(self) -> list[tuple[str, int]]:
        return self.client.assignment

    async def assignments(self) -> dict[str, list[tuple[str, int]]]:
        return {self.client.member_id: self.client.assignment}

    async def timeline(self) -> list[dict]:
        return [dict(e, group_id=self.group_id) for e in self.client.timeline]

    async def state(self) -> str:
        return self.client.state

    async def generation(self) -> int:
        return self.client.generation

    async def members(self) -> list[dict[str, Any]]:
        c = self.client
        return [
            {
                "member_id": c.member_id,
                "epoch": c.generation,
                "state": c.state,
                "error": c.error,
                "assignment": c.assignment,
                "leader": c.is_leader,
            }
        ]

    async def stats(self) -> dict[str, Any]:
        return {
            **self._stats,
            "pid": os.getpid(),
            "member_id": self.client.member_id,
            "generation": self.client.generation,
            "state": self.client.state,
            "leader": self.client.is_leader,
        }

    async def stop(self, leave: bool = True, force: bool = False) -> None:
        """Close the consumer: revoke everything and, if dynamic (or ``force``), send
        LeaveGroup; a static member keeps its place until its session ends (Kafka's rule).
        With ``leave=False`` just stop calling, as a process that dies would."""
        self._stopping = True
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        c = self.client
        if leave:
            if c.in_flight:
                c.on_failure(time.monotonic())  # abandoned: the leave must not wait behind it
            c.leave(force=force)
            req = c.poll(time.monotonic())
            await self._pay_revocations()
            if req is not None:
                await self._call(req, LEAVE_TIMEOUT_S)
        self._flush_timeline()

    async def _owner_gone(self) -> None:
        """The driver that spawned this actor exited (``owner_watch``): leave, unless
        already stopped."""
        if not self._stopping:
            await self.stop(leave=True)

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        try:
            await self._loop()
        except Exception:
            log.exception("classic consumer of %s stopped on a bug", self.group_id)
            raise

    async def _loop(self) -> None:
        while not self._stopping:
            await self._maybe_check_metadata()
            req = self.client.poll(time.monotonic())
            if isinstance(req, m.JoinGroupRequest):
                await self._refresh_counts()  # this join may make us the leader
            await self._pay_revocations()
            if req is not None:
                await self._call(req, self._timeout_s(req))
                self._flush_timeline()
                continue
            self._flush_timeline()  # a poll may have recorded a loss at its deadline
            due = self.client.next_due()
            wait = MAX_SLEEP_S if due is None else min(MAX_SLEEP_S, due - time.monotonic())
            await asyncio.sleep(max(wait, 0.001))

    async def _call(self, req: object, timeout_s: float) -> None:
        """Send ``req``, feed the reply (or the failure) to the client. While waiting, poll
        the client so that an ownership deadline passing mid-call is recorded on time."""
        kind = type(req).__name__
        self._stats["calls"] += 1
        for name, cls in (
            ("joins", m.JoinGroupRequest),
            ("syncs", m.SyncGroupRequest),
            ("heartbeats", m.HeartbeatRequest),
        ):
            if isinstance(req, cls):
                self._stats[name] += 1
        # Pickled by us, not by Ray: ~150 µs less a call (actors/runtime/packed.py).
        call = asyncio.ensure_future(self._coordinator.handle_packed.remote(pack(req)))
        give_up = time.monotonic() + timeout_s
        try:
            while not call.done():
                now_s = time.monotonic()
                if now_s >= give_up:
                    raise asyncio.TimeoutError
                deadline = self.client.ownership_deadline
                wait = min(MAX_SLEEP_S, give_up - now_s)
                if deadline is not None:
                    wait = min(wait, deadline - now_s)
                await asyncio.wait({call}, timeout=max(wait, 0.001))
                if not call.done():
                    self.client.poll(time.monotonic())  # in flight: only checks the deadline
                    self._flush_timeline()
            reply = unpack(call.result())
        except (asyncio.TimeoutError, ray.exceptions.RayError) as e:
            call.cancel()
            self._stats["failed_calls"] += 1
            log.debug("%s to the coordinator of %s failed: %r", kind, self.group_id, e)
            self.client.on_failure(time.monotonic())
            return
        self.client.on_response(time.monotonic(), reply)

    def _counting(self, then):
        """An ``on_revoke`` that notes how many partitions must be paid for."""

        def on_revoke(parts):
            self._to_pay += len(parts)
            if then is not None:
                then(parts)

        return on_revoke

    async def _pay_revocations(self) -> None:
        """Commit and flush what was just revoked (simulated: ``revocation_cost_ms`` per
        partition), before the request that tells the coordinator it is released."""
        if self._to_pay:
            cost_s, self._to_pay = self._to_pay * self._revocation_cost_s, 0
            await asyncio.sleep(cost_s)

    def _timeout_s(self, req: object) -> float:
        if isinstance(req, m.JoinGroupRequest):
            c = self.client
            held_s = (c.rebalance_timeout_ms + c.session_timeout_ms) / 1000
            return held_s + JOIN_CALL_MARGIN_S
        return CALL_TIMEOUT_S

    async def _maybe_check_metadata(self) -> None:
        """The leader watches the partition counts it assigned with (Kafka's metadata
        snapshot): a change makes it rejoin with reason ``topic_metadata_change``."""
        now_s = time.monotonic()
        if not self.client.is_leader or now_s - self._metadata_checked_at < METADATA_REFRESH_S:
            return
        self._metadata_checked_at = now_s
        if await self._refresh_counts():
            self.client.check_metadata()

    async def _refresh_counts(self) -> bool:
        try:
            image = await self._controller.image.remote()
        except ray.exceptions.RayError as e:
            log.debug("partition counts not refreshed: %s", e)
            return False
        counts = {t.name: t.num_partitions for t in image.metadata.topics()}
        self._counts.clear()
        self._counts.update(counts)
        return True

    def _flush_timeline(self) -> None:
        """Append new timeline events to ``timeline_path`` (survives this actor's death)."""
        c = self.client
        self._timeline.collect("member", c.events_recorded, lambda: c.timeline,
                               group_id=self.group_id)
        self._timeline.write()
