"""``Gateway``: an asyncio TCP server speaking Kafka's protocol, inside a Ray actor.

One detached, named actor (``gateway`` in namespace ``cohort``, ``num_cpus=0``) listens on
``host:port`` and plays a one-broker Kafka cluster: node ``node_id`` leads every partition and
coordinates every group, routing each group's requests to the partition actor that owns it.
Ray restarts it if it dies (``max_restarts=-1``) and it listens again on the same port; the
clients reconnect as they would to a restarted broker. It holds no state worth keeping: groups
live in the partitions, topics, ACLs and users in the controller.
"""

from __future__ import annotations

import asyncio
import logging
import ssl

import ray

from actors.gateway.admission import Admission
from actors.gateway.connection import Connection
from actors.gateway.core import GatewayCore, GatewayOptions
from actors.runtime.controller_security import GATEWAY_NAME, SecurityImage
from protocol.config import CoordinatorConfig
from protocol.wire.topics import Node

log = logging.getLogger(__name__)

__all__ = ["GATEWAY_NAME", "Gateway", "tls_context"]

def tls_context(certfile: str, keyfile: str) -> ssl.SSLContext:
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.load_cert_chain(certfile, keyfile)
    return ctx


@ray.remote(num_cpus=0, max_restarts=-1, max_task_retries=0)
class Gateway:
    """Kafka's wire protocol in front of the partition actors (see the module docstring)."""

    def __init__(self, host: str, port: int, num_partitions: int, config: CoordinatorConfig,
                 options: GatewayOptions) -> None:
        self.host, self.port = host, port
        self.num_partitions = num_partitions
        self.config = config
        self.options = options
        self.core: GatewayCore | None = None
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task] = set()
        self.admission = Admission(options.max_connections)
        self._started = asyncio.get_running_loop().create_task(self._start())

    async def _start(self) -> None:
        tls = None
        if self.options.tls_certfile:
            tls = tls_context(self.options.tls_certfile, self.options.tls_keyfile)
        self._server = await asyncio.start_server(self._accept, self.host, self.port, ssl=tls,
                                                  reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        node = Node(self.options.node_id, self.options.advertised_host or self.host, self.port)
        self.core = GatewayCore(self.num_partitions, self.config, node, self.options)
        await self.core.start()
        log.info("gateway listening on %s:%d", self.host, self.port)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        self._connections.add(task)
        try:
            await self.admission.serve(reader, writer, self._serve)
        finally:
            self._connections.discard(task)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await self._started
        await Connection(self.core, reader, writer).run()

    async def address(self) -> str:
        """``host:port`` for ``bootstrap.servers``, once the server listens."""
        await self._started
        return f"{self.core.node.host}:{self.port}"

    async def update_security(self, image: SecurityImage) -> None:
        await self._started
        self.core.update_security(image)

    async def stats(self) -> dict:
        await self._started
        return {"connections": self.admission.open, "port": self.port,
                "max_connections": self.admission.max_connections,
                "refused_connections": self.admission.refused,
                "security_version": self.core.security.version,
                "served": dict(self.core.served)}

    async def member_epoch(self, group_id: str, member_id: str) -> int:
        """The epoch (or generation) last sent to this member; -1 if none is known."""
        await self._started
        return self.core.epochs.get((group_id, member_id), -1)

    async def stop(self) -> None:
        """Stop listening and drop every connection (before the actor is killed)."""
        await self._started
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        self.core.stop()
