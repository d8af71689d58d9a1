"""What every request handler of the gateway shares: the node it plays, the routes to the
partitions, the controller's topics and security image (cached, refreshed), the stream clock,
and the authorization decision.

Caches are bounded in age, not trusted forever: topics are re-read when older than
``TOPICS_TTL_S`` or when a request names one the cache lacks (and on every Metadata request,
which is how clients learn of changes); the security image is re-read every
``SECURITY_REFRESH_S`` and pushed by the controller on every change.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from dataclasses import dataclass

import ray

from actors.gateway.admission import MAX_CONNECTIONS
from actors.gateway.routing import Router
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE
from actors.runtime.controller_security import SecurityImage
from protocol.api import Api
from protocol.config import CoordinatorConfig
from protocol.security.acls import authorize
from protocol.security.scram import ScramCredential
from protocol.wire.codec import RequestHeader
from protocol.wire.framing import MAX_REQUEST_BYTES
from protocol.wire.share_session import ShareSessions
from protocol.wire.stream import SyntheticStream
from protocol.wire.topics import Node, TopicIndex

log = logging.getLogger(__name__)

TOPICS_TTL_S = 1.0
SECURITY_REFRESH_S = 1.0
MAX_TRACKED_MEMBERS = 100_000


@dataclass(frozen=True)
class GatewayOptions:
    """How the gateway listens and what it demands (Kafka's listener and broker settings).

    ``sasl_mechanisms``: empty for no authentication (PLAINTEXT / SSL), else any of ``PLAIN``
    and ``SCRAM-SHA-256`` (SASL_PLAINTEXT / SASL_SSL). ``tls_certfile`` / ``tls_keyfile``: PEM
    files that turn TLS on. ``authorizer``: check ACLs (Kafka's ``authorizer.class.name``);
    off, everything is allowed. ``super_users``: principals the authorizer always allows.
    ``max_connections``: open client connections at most (Kafka's ``max.connections``); one
    more is closed at once (``actors.gateway.admission``).
    """

    sasl_mechanisms: tuple[str, ...] = ()
    tls_certfile: str | None = None
    tls_keyfile: str | None = None
    authorizer: bool = False
    super_users: tuple[str, ...] = ()
    node_id: int = 0
    advertised_host: str | None = None
    max_request_bytes: int = MAX_REQUEST_BYTES
    max_connections: int = MAX_CONNECTIONS
    records_per_s: float = 50.0
    batch_interval_ms: int = 200
    # The stream began at the Unix epoch: its end is past any Ray consumer's position (they
    # process at the same rate, from later), and the same for every gateway and restart.
    stream_anchor_ms: int = 0


@dataclass
class WireRequest:
    """One decoded request, who sent it, and its row of the API table (``protocol.api``):
    what a handler translates it with."""

    header: RequestHeader
    body: dict
    principal: str
    client_host: str
    api: Api

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def client_id(self) -> str:
        return self.header.client_id or ""


class GatewayCore:
    def __init__(self, num_partitions: int, config: CoordinatorConfig, node: Node,
                 options: GatewayOptions) -> None:
        self.node = node
        self.options = options
        self.config = config
        self.router = Router(num_partitions)
        self.controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        self.stream = SyntheticStream(options.stream_anchor_ms, options.records_per_s,
                                      options.batch_interval_ms)
        self._index = TopicIndex()
        self._index_at = float("-inf")
        self.security = SecurityImage(-1)
        self._refresher: asyncio.Task | None = None
        # Requests served, by (API key, version): what clients actually spoke (bounded by the
        # number of versions the API table serves).
        self.served: dict[tuple[int, int], int] = {}
        # The epoch (or classic generation) last sent to each member, newest last: what a
        # real client's callbacks ran under, for timelines. At most MAX_TRACKED_MEMBERS.
        self.epochs: collections.OrderedDict[tuple[str, str], int] = collections.OrderedDict()
        # KIP-932's share sessions: the gateway is every share-partition's leader.
        self.share_sessions = ShareSessions()  # group.share.max.share.sessions: 2,000

    async def start(self) -> None:
        self.security = await self.controller.security_image.remote()
        await self.topics(refresh=True)
        self.router.start()
        self._refresher = asyncio.get_running_loop().create_task(self._refresh_security())

    def stop(self) -> None:
        self.router.stop()
        if self._refresher is not None:
            self._refresher.cancel()

    # ------------------------------------------------------------------- topics

    async def topics(self, refresh: bool = False) -> TopicIndex:
        if refresh or time.monotonic() - self._index_at > TOPICS_TTL_S:
            self._index = TopicIndex(await self.controller.topics.remote())
            self._index_at = time.monotonic()
        return self._index

    async def topics_knowing(self, names=(), uuids=()) -> TopicIndex:
        """The topic index, re-read first if it lacks any of ``names`` / ``uuids``."""
        index = await self.topics()
        if any(n not in index.by_name for n in names) or any(
                u is not None and u not in index.by_uuid for u in uuids):
            index = await self.topics(refresh=True)
        return index

    # ----------------------------------------------------------------- security

    def update_security(self, image: SecurityImage) -> None:
        if image.version >= self.security.version:
            self.security = image

    def user(self, name: str) -> ScramCredential | None:
        return self.security.users.get(name)

    def may(self, req: WireRequest, operation: str, resource_type: str, name: str) -> bool:
        if not self.options.authorizer:
            return True
        return authorize(self.security.acls, req.principal, req.client_host, operation,
                         resource_type, name, self.options.super_users)

    async def _refresh_security(self) -> None:
        while True:
            await asyncio.sleep(SECURITY_REFRESH_S)
            try:
                self.update_security(await self.controller.security_image.remote())
            except Exception as e:  # the controller restarting: try again next round
                log.info("security refresh failed: %s", e)

    def saw_epoch(self, group_id: str, member_id: str | None, epoch: int) -> None:
        if not member_id or epoch < 0:
            return
        self.epochs[(group_id, member_id)] = epoch
        self.epochs.move_to_end((group_id, member_id))
        while len(self.epochs) > MAX_TRACKED_MEMBERS:
            self.epochs.popitem(last=False)

    def count(self, api_key: int, version: int) -> None:
        self.served[(api_key, version)] = self.served.get((api_key, version), 0) + 1

    # --------------------------------------------------------------------- time

    @staticmethod
    def now_ms() -> int:
        return int(time.time() * 1000)
