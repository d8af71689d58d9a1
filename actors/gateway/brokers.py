"""The gateway's directory of coordinators: where each partition's listener for this gateway
is now, kept by asking each partition to listen, over and over.

A partition actor that Ray restarts (maybe on another node) comes back without a listener; the
gateway is the one that knows its listener spec, so it keeps every partition listening: one
``listen`` call per partition every ``WATCH_EVERY_S`` (idempotent: a partition that listens
already answers at once with its address). The port the partition had is passed back as a
hint, so a partition restarted on the same node listens where its clients last saw it and they
reconnect without asking anew. Each call also carries the directory as it stands (and the
gateway's own node), which the partition answers Metadata and FindCoordinator with. A call
unanswered for ``SUSPECT_AFTER_S`` (a restart, a dead
node) takes the partition out of the directory until it answers again: meanwhile FindCoordinator
answers COORDINATOR_NOT_AVAILABLE for its groups and clients retry, as with a broker that is
down. The same call carries the security image to a partition that is behind the gateway's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from actors.gateway.listener import ListenerSpec, partition_node_id
from actors.runtime.controller_security import SecurityImage
from protocol.wire.topics import Node

log = logging.getLogger(__name__)

WATCH_EVERY_S = 0.25
SUSPECT_AFTER_S = 1.0
RETRY_AFTER_FAILURE_S = 0.5
CLOSE_TIMEOUT_S = 5.0


class PartitionBrokers:
    """Where each ``offsets-<p>`` listens for this gateway's clients (see the module
    docstring). ``node_of(p)`` is None while the partition is not known to listen."""

    def __init__(self, handles: list, spec: ListenerSpec, leader: Node,
                 security: Callable[[], SecurityImage]) -> None:
        self._handles = handles
        self._spec = spec
        self._leader = leader
        self._security = security
        self._nodes: dict[int, Node] = {}
        self._port_hints: dict[int, int] = {}
        self._keepers: list[asyncio.Task] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._keepers = [loop.create_task(self._keep(p)) for p in range(len(self._handles))]

    def stop(self) -> None:
        for task in self._keepers:
            task.cancel()

    async def close_listeners(self) -> None:
        """Ask every partition to stop listening for this gateway (it is being stopped)."""
        calls = [asyncio.ensure_future(_quiet(h.close_listener.remote(self._spec.gateway)))
                 for h in self._handles]
        if calls:
            await asyncio.wait(calls, timeout=CLOSE_TIMEOUT_S)

    async def listener_stats(self) -> list[dict]:
        """Each answering partition's ``listeners()`` (bounded by ``CLOSE_TIMEOUT_S``)."""
        calls = [asyncio.ensure_future(h.listeners.remote()) for h in self._handles]
        if not calls:
            return []
        done, pending = await asyncio.wait(calls, timeout=CLOSE_TIMEOUT_S)
        for call in pending:
            call.cancel()
        return [c.result() for c in done if c.exception() is None]

    def node_of(self, p: int) -> Node | None:
        return self._nodes.get(p)

    def nodes(self) -> list[Node]:
        return [self._nodes[p] for p in sorted(self._nodes)]

    async def _keep(self, p: int) -> None:
        handle = self._handles[p]
        while True:
            call = asyncio.ensure_future(self._listen(handle, p))
            done, _ = await asyncio.wait({call}, timeout=SUSPECT_AFTER_S)
            if not done:
                self._nodes.pop(p, None)  # restarting or unreachable: not a coordinator now
            try:
                await call  # a restarting actor answers once it is back
            except Exception as e:  # dead for good, fenced, or refusing its storage
                self._nodes.pop(p, None)
                log.info("offsets-%d does not listen for %s: %s", p, self._spec.gateway, e)
                await asyncio.sleep(RETRY_AFTER_FAILURE_S)
                continue
            await asyncio.sleep(WATCH_EVERY_S)

    async def _listen(self, handle, p: int) -> None:
        base = self._spec.options.coordinator_port
        hint = base + p if base else self._port_hints.get(p, 0)
        host, port, security_version = await handle.listen.remote(
            self._spec, hint, self._leader, dict(self._nodes))
        image = self._security()
        if security_version < image.version:
            await handle.update_security.remote(image)
        self._nodes[p] = Node(partition_node_id(p), host, port)
        self._port_hints[p] = port


async def _quiet(ref) -> None:
    with contextlib.suppress(Exception):
        await ref
