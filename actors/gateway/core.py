"""What every request handler of the gateway shares: the node it plays, the routes to the
partitions, the partitions' own listeners (``brokers``: where FindCoordinator sends a group's
clients), the controller's topics and security image (cached, refreshed), the stream clock,
and the authorization decision (``serving.Serving``, which the partitions' listeners share).

Caches are bounded in age, not trusted forever: the controller pushes its image (topics) and
its security image on every change, before the change returns; topics are also re-read when
older than ``TOPICS_TTL_S`` or when a request names one the cache lacks, and the security image
every ``SECURITY_REFRESH_S``. No Metadata request waits on the controller.
"""

from __future__ import annotations

import asyncio
import logging
import time

import ray

from actors.gateway.brokers import PartitionBrokers
from actors.gateway.kept_metadata import KeptAnswers
from actors.gateway.listener import ListenerSpec
from actors.gateway.routing import Router
from actors.gateway.serving import GatewayOptions, Serving, WireRequest
from actors.runtime.controller import CONTROLLER_NAME, NAMESPACE, ControllerImage
from actors.upstream.reader import UpstreamReader
from actors.upstream.relay import UPSTREAMS_OWN_ROWS, relayed_keys
from actors.upstream.view import UpstreamView
from protocol.config import CoordinatorConfig
from protocol.wire.codec import EncodedBody
from protocol.wire.share_session import ShareSessions
from protocol.wire.stream import SyntheticStream
from protocol.wire.topics import Node, TopicIndex
from protocol.wire.upstream import relayed_versions, versions_reply, with_txn_offset_commit
from protocol.wire.versions import api_versions_body

log = logging.getLogger(__name__)

__all__ = ["GatewayCore", "GatewayOptions", "WireRequest"]

TOPICS_TTL_S = 1.0
SECURITY_REFRESH_S = 1.0


class GatewayCore(Serving):
    def __init__(self, num_partitions: int, config: CoordinatorConfig, node: Node,
                 options: GatewayOptions, listener: ListenerSpec) -> None:
        super().__init__(node, options)
        self.config = config
        self.router = Router(num_partitions)
        self.brokers = PartitionBrokers(self.router.handles, listener, node,
                                        lambda: self.security)
        self.controller = ray.get_actor(CONTROLLER_NAME, namespace=NAMESPACE)
        self.stream = SyntheticStream(options.stream_anchor_ms, options.records_per_s,
                                      options.batch_interval_ms)
        self._index = TopicIndex()
        self._index_at = float("-inf")
        self._image_version = -1
        self._refresher: asyncio.Task | None = None
        # KIP-932's share sessions: the gateway is every share-partition's leader.
        # group.share.max.share.sessions: 2,000; idle a member's session timeout, one may
        # make room for a new one.
        self.share_sessions = ShareSessions(
            idle_timeout_ms=config.group_share_session_timeout_ms)
        # In front of an upstream (``set_upstream``): its view, the APIs relayed to it, the
        # listener presenting each upstream broker, and ApiVersions' replies.
        self.upstream: UpstreamView | None = None
        # Cohort's own reads of the upstream's records (the share-partitions' batches).
        self.upstream_reader: UpstreamReader | None = None
        self.relay_keys: frozenset[int] = frozenset()
        self.listeners: dict[int, tuple[str, int]] = {}
        # Its Metadata replies, asked and written once per question (``kept_metadata``).
        self.kept_metadata: KeptAnswers[EncodedBody] = KeptAnswers()

    @staticmethod
    def relay_plan(upstream_versions: dict[int, tuple[int, int]]
                   ) -> tuple[frozenset[int], tuple[tuple[int, int, int], ...]]:
        """In front of an upstream serving ``upstream_versions``: the keys relayed, and what
        ApiVersions advertises ((key, min, max) ...): Cohort's APIs and the upstream's."""
        keys = relayed_keys(upstream_versions)
        body = with_txn_offset_commit(api_versions_body())
        own = {k["api_key"]: (k["min_version"], k["max_version"]) for k in body["api_keys"]}
        merged = relayed_versions(upstream_versions, keys | UPSTREAMS_OWN_ROWS, own)
        return keys, tuple((k, lo, hi) for k, (lo, hi) in sorted(merged.items()))

    def set_upstream(self, view: UpstreamView, upstream_versions: dict[int, tuple[int, int]]
                     ) -> None:
        """Relay to ``view``'s upstream from now on (its brokers read already)."""
        self.upstream = view
        self.upstream_reader = UpstreamReader(view)
        self.relay_keys, self._versions = self.relay_plan(upstream_versions)

    async def upstream_topics_changed(self, expect: dict[str, int | None]) -> None:
        """A relayed topic change landed upstream: the controller reads the upstream's topics
        now, until they show it (and pushes them here), before the client hears the reply."""
        try:
            await self.controller.sync_upstream.remote(expect)
        except Exception as e:  # its next poll takes the change
            log.info("the controller could not read the upstream's topics now: %s", e)

    def listener_of(self, node_id: int) -> tuple[str, int] | None:
        """The Cohort listener presenting upstream broker ``node_id``, if one is open."""
        return self.listeners.get(node_id)

    def relayed_api_versions(self, version: int) -> EncodedBody | None:
        if self.upstream is None:
            return None
        return versions_reply(version, self._versions)

    async def start(self) -> None:
        self.security = await self.controller.security_image.remote()
        await self.topics(refresh=True)
        self.router.start()
        self.brokers.start()
        self._refresher = asyncio.get_running_loop().create_task(self._refresh_security())

    def stop(self) -> None:
        if self.upstream_reader is not None:
            self.upstream_reader.close()
        self.router.stop()
        self.brokers.stop()
        if self._refresher is not None:
            self._refresher.cancel()

    @property
    def leader(self) -> Node:
        """The broker that leads every topic partition: this gateway."""
        return self.node

    # ------------------------------------------------------------------- topics

    def update_image(self, image: ControllerImage) -> None:
        """The controller's push (before its change returns): the topics, current."""
        if image.version >= self._image_version:
            self._image_version = image.version
            self._index = TopicIndex(image.metadata.topics())
            self._index_at = time.monotonic()

    def topics_now(self) -> TopicIndex:
        """The topic index as last read or pushed (a new one after every change)."""
        return self._index

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

    async def _refresh_security(self) -> None:
        while True:
            await asyncio.sleep(SECURITY_REFRESH_S)
            try:
                self.update_security(await self.controller.security_image.remote())
            except Exception as e:  # the controller restarting: try again next round
                log.info("security refresh failed: %s", e)
