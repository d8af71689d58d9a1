"""``Gateway``: an asyncio TCP server speaking Kafka's protocol, inside a Ray actor.

One detached, named actor (``gateway`` in namespace ``cohort``, ``num_cpus=0``) listens on
``host:port``: the bootstrap address clients are given. It plays broker ``node_id``: it leads
every topic partition (the synthetic stream), is the controller, and answers Metadata and the
admin APIs. Group coordinators are the partition actors, each listening itself
(``actors.gateway.broker``): Metadata lists them as brokers ``1000 + p`` and FindCoordinator
sends each group's clients to its own, so group traffic does not pass through here. The
gateway keeps every partition listening for its clients (``brokers.PartitionBrokers``) and
still answers any group request a client sends it (routed to the partition by Ray), and what
needs every partition (ListGroups, DescribeGroups naming groups of many). Ray restarts it if it
dies (``max_restarts=-1``) and it listens again on the same port; the clients reconnect as they
would to a restarted broker. It holds no state worth keeping: groups live in the partitions,
topics, ACLs and users in the controller.
"""

from __future__ import annotations

import asyncio
import functools
import logging

import ray

from actors.gateway.admission import Admission
from actors.gateway.connection import Connection
from actors.gateway.core import GatewayCore, GatewayOptions
from actors.gateway.dispatch import HANDLERS
from actors.gateway.listener import PARTITION_NODE_BASE, ListenerSpec, tls_context
from actors.gateway.serving import WireRequest
from actors.runtime import gc_policy
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE, ControllerImage
from actors.runtime.controller_security import GATEWAY_NAME, SecurityImage
from actors.runtime.loop_watch import running_watch
from actors.runtime.offload import big_request, off_loop, serving_body
from actors.runtime.packed import unpack
from actors.upstream.relay import ClientRelay
from actors.upstream.view import UpstreamView
from protocol.api import BY_API_KEY
from protocol.config import CoordinatorConfig
from protocol.wire.codec import RequestHeader, encode_response
from protocol.wire.topics import Node

log = logging.getLogger(__name__)

__all__ = ["GATEWAY_NAME", "Gateway", "tls_context"]


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class Gateway:
    """Kafka's wire protocol in front of the partition actors (see the module docstring)."""

    def __init__(self, host: str, port: int, num_partitions: int, config: CoordinatorConfig,
                 options: GatewayOptions, name: str = GATEWAY_NAME) -> None:
        self.host, self.port = host, port
        self.name = name
        self.num_partitions = num_partitions
        self.config = config
        self.options = options
        self.core: GatewayCore | None = None
        self._server: asyncio.base_events.Server | None = None
        # In front of an upstream: one more server per upstream broker, by its node id.
        self._broker_servers: dict[int, asyncio.base_events.Server] = {}
        self._tls = None
        self._watch: asyncio.Task | None = None
        self.admission = Admission(options.max_connections)
        self._started = asyncio.get_running_loop().create_task(self._start())

    async def _start(self) -> None:
        if self.options.tls_certfile:
            self._tls = tls_context(self.options.tls_certfile, self.options.tls_keyfile)
        self._server = await asyncio.start_server(
            self.admission.accepting(functools.partial(self._serve, None)), self.host,
            self.port, ssl=self._tls, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        node = Node(self.options.node_id, self.options.advertised_host or self.host, self.port)
        controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        settings = await controller.upstream_settings.remote()
        view, spec = None, ListenerSpec(self.name, self.host, self.options)
        if settings is not None:  # its brokers and versions first: the partitions' spec says
            view = UpstreamView(settings)
            await view.refresh()
            versions = (await view.link()).versions
            probe_core = GatewayCore.relay_plan(versions)
            spec = ListenerSpec(self.name, self.host, self.options, upstream=settings,
                                relay_keys=probe_core[0], versions=probe_core[1])
        self.core = GatewayCore(self.num_partitions, self.config, node, self.options, spec)
        if view is not None:
            self.core.set_upstream(view, versions)
        await self.core.start()
        if view is not None:
            await self._open_broker_listeners(view)
            self._watch = asyncio.get_running_loop().create_task(self._watch_brokers(view))
        gc_policy.tune()
        gc_policy.settle()
        log.info("gateway listening on %s:%d", self.host, self.port)

    async def _open_broker_listeners(self, view: UpstreamView) -> None:
        for node_id in sorted(set(view.brokers) - set(self._broker_servers)):
            if node_id == self.options.node_id or node_id >= PARTITION_NODE_BASE:
                log.error("upstream broker id %d clashes with Cohort's own node ids (the "
                          "gateway's node_id, partitions from %d): not presented",
                          node_id, PARTITION_NODE_BASE)
                continue
            base = self.options.broker_port_base
            port = base + len(self._broker_servers) if base else 0
            server = await asyncio.start_server(
                self.admission.accepting(functools.partial(self._serve, node_id)), self.host,
                port, ssl=self._tls, reuse_address=True)
            self._broker_servers[node_id] = server
            self.core.listeners[node_id] = (self.core.node.host,
                                            server.sockets[0].getsockname()[1])
            log.info("upstream broker %d (%s:%d) presented at %s:%d", node_id,  # one a broker
                     *view.brokers[node_id], *self.core.listeners[node_id])

    async def _watch_brokers(self, view: UpstreamView) -> None:
        while True:
            await asyncio.sleep(view.settings.poll_interval_s)
            try:
                await view.refresh()
                await self._open_broker_listeners(view)
            except Exception as e:  # the upstream away: clients get broker errors meanwhile
                log.info("upstream refresh failed: %s", e)

    async def _serve(self, node_id: int | None, reader: asyncio.StreamReader,
                     writer: asyncio.StreamWriter) -> None:
        await self._started
        relay = None
        if self.core.upstream is not None:
            relay = ClientRelay(self.core.upstream, node_id, self.core.listener_of,
                                self.core.upstream_topics_changed)
        await Connection(self.core, reader, writer, relay=relay).run()

    async def forwarded(self, header: RequestHeader, body: dict, principal: str,
                        client_host: str) -> bytes | None:
        """A request a partition's listener received and does not serve itself (Metadata,
        FindCoordinator, the admin APIs, Fetch ...), already decoded and authenticated there:
        answered here as if it had come on one of this gateway's connections."""
        await self._started
        key = header.api_key
        self.core.count(key, header.api_version)
        req = WireRequest(header, body, principal, client_host, BY_API_KEY[key])
        if not serving_body(body):  # a big one's pure steps run off the loop (``offload``)
            reply = await HANDLERS[key](self.core, req)
            return None if reply is None else encode_response(header, reply)
        async with big_request():
            reply = await HANDLERS[key](self.core, req)
            return None if reply is None else await off_loop(encode_response, header, reply)

    async def forwarded_packed(self, packed: bytes) -> bytes | None:
        """``forwarded`` for a big request, its arguments pickled off the partition's loop
        (``actors.runtime.packed``) and unpickled off this one: a body of 100,000 entries
        held either loop for tens of milliseconds in Ray's own (de)serialization."""
        header, body, principal, client_host = await off_loop(unpack, packed)
        return await self.forwarded(header, body, principal, client_host)

    async def address(self) -> str:
        """``host:port`` for ``bootstrap.servers``, once the server listens."""
        await self._started
        return f"{self.core.node.host}:{self.port}"

    async def coordinators(self) -> dict[int, str]:
        """Where each partition listens for this gateway's clients now (``host:port``), for
        the partitions known to listen."""
        await self._started
        return {p: f"{n.host}:{n.port}" for p in range(self.num_partitions)
                if (n := self.core.brokers.node_of(p)) is not None}

    async def update_security(self, image: SecurityImage) -> None:
        await self._started
        self.core.update_security(image)

    async def update_image(self, image: ControllerImage) -> None:
        """The controller's push of its image (topics), as to every partition."""
        await self._started
        self.core.update_image(image)

    async def drop_share_session(self, group_id: str, member_id: str) -> None:
        """A share member left through its coordinator: its share session goes too."""
        await self._started
        self.core.share_sessions.drop(group_id, member_id)

    async def stats(self) -> dict:
        """This listener's figures; ``served_by_coordinators``: requests by (API key,
        version) that the partitions' listeners for this gateway served (those that
        answered)."""
        await self._started
        by_coordinators: dict[tuple[int, int], int] = {}
        for listeners in await self.core.brokers.listener_stats():
            for key, n in listeners.get(self.name, {}).get("served", {}).items():
                by_coordinators[key] = by_coordinators.get(key, 0) + n
        return {"connections": self.admission.open, "port": self.port,
                "upstream_listeners": dict(self.core.listeners),
                "upstream": self.core.upstream.status() if self.core.upstream else None,
                "max_connections": self.admission.max_connections,
                "refused_connections": self.admission.refused,
                "reclaimed_connections": self.admission.reclaimed,
                "security_version": self.core.security.version,
                "served": dict(self.core.served),
                "coordinators": len(self.core.brokers.nodes()),
                "served_by_coordinators": by_coordinators}

    async def loop_stalls(self, reset: bool = True) -> dict:
        """The event loop's longest stalls since the last reading (``loop_watch``); the
        first call starts watching (it costs a wake-up every 10 ms, so only when asked)."""
        return running_watch().read(reset)

    async def heap_census(self, top: int = 8) -> dict:
        """What this process's cyclic collector walks (``LoopWatch.census``): why a long
        ``gc_ms`` is long."""
        return running_watch().census(top)

    async def member_epoch(self, group_id: str, member_id: str) -> int:
        """The epoch (or generation) last sent to this member, by its coordinator's listener
        for this gateway (or by the gateway itself); -1 if none is known."""
        await self._started
        p = self.core.router.partition_of(group_id)
        try:
            epoch = await self.core.router.handles[p].member_epoch.remote(
                self.name, group_id, member_id)
        except Exception:  # restarting: what the gateway itself saw, if anything
            epoch = -1
        return epoch if epoch >= 0 else self.core.epochs.get((group_id, member_id), -1)

    async def stop(self) -> None:
        """Stop listening and drop every connection (before the actor is killed); the
        partitions stop listening for this gateway too."""
        await self._started
        self._server.close()
        for server in self._broker_servers.values():
            server.close()
        if self._watch is not None:
            self._watch.cancel()
        if self.core.upstream is not None:
            self.core.upstream.close()
        self.admission.drop_all()
        self.core.stop()
        await self.core.brokers.close_listeners()
