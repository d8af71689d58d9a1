"""The gateway's way to the partition actors: ``Cluster.call``'s routing and retries, awaited.

A request goes to the partition its group hashes to (``protocol.placement``, through
``protocol.api.group_ids_of``), exactly where a Ray client's request goes, so a Kafka client
and a Ray client in one group meet the same coordinator. While that partition is moving,
loading or dead (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, a
dead actor) the call is retried with ``protocol.retry``'s backoff up to ``CALL_DEADLINE_S``;
after that the client gets the last retriable error (or COORDINATOR_NOT_AVAILABLE) and retries
on its own, as it would against a Kafka broker. The deadline is below every Kafka client's
request timeout, so the client hears back before it gives up on the connection. A long-poll
(JoinGroup, SyncGroup) waits as long as its group needs: only retriable outcomes are bounded.
Requests naming many groups are split by partition, sent in parallel and put back in order.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from ray.exceptions import RayActorError

from actors.runtime.controller import partition_handles
from protocol.api import error_response, group_ids_of
from protocol.errors import COORDINATOR_UNAVAILABLE, Errors
from protocol.placement import partition_for
from protocol.retry import backoff_s, next_retries

log = logging.getLogger(__name__)

CALL_DEADLINE_S = 20.0


def _retriable(resp: object) -> bool:
    """Whether the reply says "ask again later" (for a per-group reply: for any group)."""
    if hasattr(resp, "error_code"):
        return resp.error_code in COORDINATOR_UNAVAILABLE
    entries = getattr(resp, "groups", None) or getattr(resp, "results", None) or []
    return any(getattr(e, "error_code", Errors.NONE) in COORDINATOR_UNAVAILABLE for e in entries)


class Router:
    """Async routing to ``offsets-<p>`` with retries; one per gateway."""

    def __init__(self, num_partitions: int, deadline_s: float = CALL_DEADLINE_S) -> None:
        self.num_partitions = num_partitions
        self.deadline_s = deadline_s
        self._handles = partition_handles(num_partitions)

    def partition_of(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    async def call(self, request: object) -> object:
        """``request`` answered by its group's partition (retried while it is unavailable)."""
        ids = group_ids_of(request)
        return await self.call_partition(self.partition_of(ids[0] if ids else ""), request)

    async def call_partition(self, p: int, request: object) -> object:
        deadline = time.monotonic() + self.deadline_s
        retries, resp = 0, None
        while True:
            try:
                resp = await self._handles[p].handle.remote(request)
                if not _retriable(resp):
                    return resp
            except RayActorError as e:
                log.debug("offsets-%d unavailable: %s", p, e)
            wait_s = backoff_s(retries)
            if time.monotonic() + wait_s > deadline:
                return resp if resp is not None else error_response(
                    request, Errors.COORDINATOR_NOT_AVAILABLE,
                    f"offsets-{p} did not answer within {self.deadline_s} s")
            await asyncio.sleep(wait_s)
            retries = next_retries(retries)

    async def call_by_partition(self, group_ids: list[str],
                                make: Callable[[list[str]], object]) -> dict[str, object]:
        """``make(ids)`` sent once per partition holding some of ``group_ids``; each
        partition's reply keyed by the groups it was asked about."""
        by_p: dict[int, list[str]] = {}
        for g in group_ids:
            by_p.setdefault(self.partition_of(g), []).append(g)
        parts = list(by_p.items())
        replies = await asyncio.gather(*(self.call_partition(p, make(ids)) for p, ids in parts))
        return {g: reply for (_, ids), reply in zip(parts, replies, strict=True) for g in ids}

    async def call_all(self, request: object) -> list[object]:
        """``request`` answered by every partition (ListGroups)."""
        return list(await asyncio.gather(
            *(self.call_partition(p, request) for p in range(self.num_partitions))))
