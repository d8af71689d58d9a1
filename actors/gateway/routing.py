"""The gateway's way to the partition actors: ``Cluster.call``'s routing and retries, awaited,
on a Kafka client's clock.

A request goes to the partition its group hashes to (``protocol.placement``, through
``protocol.api.group_ids_of``), exactly where a Ray client's request goes, so a Kafka client
and a Ray client in one group meet the same coordinator. While that partition is moving,
loading or dead (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, a
dead actor) the call is retried with ``protocol.retry``'s backoff, as ``Cluster.call`` does,
but only for ``RETRY_BUDGET_S``: a Kafka client times a heartbeat out after its heartbeat
interval and resends it, so a gateway that sat on the request for seconds would only feed
it stale retries (which fence the member once its epoch moved on). Past the budget the
client gets the retriable error at once, as a Kafka broker answers while a coordinator
loads, and retries on its own.

A call that fails because the actor died is never resent: the dead actor may have applied it
(durably) before dying, and a resend would be answered as an ordinary request, its first
reply lost; the client gets COORDINATOR_NOT_AVAILABLE and resends in full, as after a broker's
disconnect.

A call to an actor that Ray is restarting does not fail: it waits for the restart, seconds
on a busy machine, holding the client's connection. So each partition is watched: a
``ready()`` probe every ``WATCH_EVERY_S``; one that takes longer than ``SUSPECT_AFTER_S``, or a
call that fails with a dead actor, marks the partition down until a probe answers "active",
and meanwhile requests for it are answered COORDINATOR_LOAD_IN_PROGRESS without being sent
(a request sent anyway would be applied whenever the actor came back, long after its client
gave up on it). A long-poll (JoinGroup, SyncGroup) waits as long as its group needs: only
retriable outcomes are bounded. Commits, offset fetches and heartbeats that must be retried are
retried one at a time per partition, in order, so a connection's pipelined requests keep their
order through a restart. Requests naming many groups are split by partition, sent in
parallel and put back in order.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from ray.exceptions import RayActorError

from actors.gateway.batcher import BATCHED, Batcher
from actors.runtime.controller import partition_handles
from protocol.api import error_response, group_ids_of, reply_error_codes
from protocol.errors import COORDINATOR_UNAVAILABLE, Errors
from protocol.placement import partition_for
from protocol.retry import backoff_s, next_retries

log = logging.getLogger(__name__)

RETRY_BUDGET_S = 0.3
WATCH_EVERY_S = 0.25
SUSPECT_AFTER_S = 0.5
UP_POLL_S = 0.02


def _retriable(resp: object) -> bool:
    """Whether the reply says "ask again later" (for a per-group reply: for any group), read
    as ``Cluster.call`` reads it: the API table says where a reply keeps its error codes."""
    return any(code in COORDINATOR_UNAVAILABLE for code in reply_error_codes(resp))


class Router:
    """Async routing to ``offsets-<p>`` with bounded retries and a liveness watch."""

    def __init__(self, num_partitions: int, retry_budget_s: float = RETRY_BUDGET_S,
                 handles: list | None = None) -> None:
        self.num_partitions = num_partitions
        self.retry_budget_s = retry_budget_s
        self._handles = handles if handles is not None else partition_handles(num_partitions)
        self._batchers = [Batcher(h) for h in self._handles]
        self._up = [True] * num_partitions
        self._in_order = [asyncio.Lock() for _ in range(num_partitions)]
        self._watchers: list[asyncio.Task] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._watchers = [loop.create_task(self._watch(p)) for p in range(self.num_partitions)]

    def stop(self) -> None:
        for task in self._watchers:
            task.cancel()
        for batcher in self._batchers:
            batcher.close()

    @property
    def handles(self) -> list:
        """The ``offsets-<p>`` actor handles, by partition."""
        return self._handles

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def is_up(self, p: int) -> bool:
        return self._up[p]

    async def call(self, request: object) -> object:
        """``request`` answered by its group's partition (see the module docstring)."""
        ids = group_ids_of(request)
        return await self.call_partition(self.partition_of(ids[0] if ids else ""), request)

    async def call_partition(self, p: int, request: object) -> object:
        deadline = time.monotonic() + self.retry_budget_s
        if not isinstance(request, BATCHED):  # a long-poll never waits behind others' retries
            return await self._answered(p, request, deadline)
        resp = None
        if self._up[p]:
            done, resp = await self._attempt(p, request)
            if done:
                return resp
        # Retried one at a time per partition, in the order the first answers came back (or
        # the calls came, while it is down): asyncio's Lock is FIFO. A connection submits what
        # it read at once (pipelining); without this, two of its commits retried after a
        # restart could land in either order and take the committed offset back.
        async with self._in_order[p]:
            return await self._answered(p, request, deadline, resp)

    async def _answered(self, p: int, request: object, deadline: float,
                        resp: object = None) -> object:
        """Attempts until an answer that is not retriable, or the deadline; ``resp`` is a
        retriable answer already had (the next attempt then backs off first)."""
        retries = 0
        while True:
            if resp is not None:
                wait_s = backoff_s(retries)
                if time.monotonic() + wait_s > deadline:
                    return resp
                await asyncio.sleep(wait_s)
                retries = next_retries(retries)
            if not await self._wait_up(p, deadline):
                return resp if resp is not None else error_response(
                    request, Errors.COORDINATOR_LOAD_IN_PROGRESS,
                    f"offsets-{p} is restarting; retry")
            done, resp = await self._attempt(p, request)
            if done:
                return resp

    async def _attempt(self, p: int, request: object) -> tuple[bool, object]:
        """One send: (whether the answer is final, the answer)."""
        try:
            resp = await self._batchers[p].call(request)
        except RayActorError as e:
            # The actor died with the request in hand: it may have applied it and made it
            # durable before dying. A resend would be answered as an ordinary, successful
            # request, and the reply that carried what the first one changed (a KIP-848
            # member's new assignment) would be lost for good, leaving the client stuck.
            # Answered retriable instead, as a broker that drops the connection: the client
            # resends in full and learns its state.
            log.info("offsets-%d died with a request in hand: %s", p, e)
            self._up[p] = False
            return True, error_response(
                request, Errors.COORDINATOR_NOT_AVAILABLE,
                f"offsets-{p} died with the request in hand; retry")
        return not _retriable(resp), resp

    async def call_by_partition(self, group_ids: list[str],
                                make: Callable[[list[str]], object]) -> dict[str, object]:
        """``make(ids)`` sent once per partition holding some of ``group_ids``; each
        partition's reply keyed by the groups it was asked about."""
        by_p: dict[int, list[str]] = {}
        for g in dict.fromkeys(group_ids):  # each group asked about once
            by_p.setdefault(self.partition_of(g), []).append(g)
        parts = list(by_p.items())
        replies = await asyncio.gather(*(self.call_partition(p, make(ids)) for p, ids in parts))
        return {g: reply for (_, ids), reply in zip(parts, replies, strict=True) for g in ids}

    async def call_all(self, request: object) -> list[object]:
        """``request`` answered by every partition (ListGroups)."""
        return list(await asyncio.gather(
            *(self.call_partition(p, request) for p in range(self.num_partitions))))

    # ------------------------------------------------------------------- liveness

    async def _wait_up(self, p: int, deadline: float) -> bool:
        while not self._up[p]:
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(UP_POLL_S)
        return True

    async def _probe(self, p: int) -> str:
        try:
            return await self._handles[p].ready.remote()
        except RayActorError:
            return "dead"

    async def _watch(self, p: int) -> None:
        """Probe ``offsets-<p>`` forever; mark it down while a probe goes unanswered."""
        while True:
            probe = asyncio.ensure_future(self._probe(p))
            done, _ = await asyncio.wait({probe}, timeout=SUSPECT_AFTER_S)
            if not done:
                self._up[p] = False
            state = await probe  # a restarting actor answers once it is back
            self._up[p] = state == "active"
            await asyncio.sleep(WATCH_EVERY_S if state != "dead" else UP_POLL_S)
