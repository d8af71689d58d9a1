"""One client connection's relay to the upstream: which requests go there, and over which link.

A client connection to one of Cohort's listeners relays to one upstream broker (the broker
that listener presents, or for the bootstrap listener any of them) over a link of its own, so
the upstream sees one connection per client connection, answers it in order, and Cohort
passes each reply back under the client's own correlation id. A link that breaks fails the
client's connection: the client reconnects, as after a broker failure.

Which APIs go upstream (``relayed_keys``): every one the upstream serves except Cohort's own:
the group APIs (answered by Cohort's partitions), the connection's own (ApiVersions, SASL),
and Metadata (answered by Cohort from the upstream's, with Cohort's listeners as brokers).
DescribeConfigs and IncrementalAlterConfigs go upstream unless they name a group (group
configs are Cohort's); ListConfigResources goes upstream unless it may list groups (v1 asking
for every type, or for GROUP: Cohort answers it, from the image that follows the upstream);
FindCoordinator goes upstream for transactions only. The client telemetry APIs (KIP-714) are
neither relayed nor advertised (``NOT_RELAYED``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from actors.upstream.link import UpstreamLink, UpstreamUnavailable
from actors.upstream.view import UpstreamView
from protocol.wire.codec import RequestHeader, decode_request
from protocol.wire.upstream import (
    ADDRESS_APIS,
    FIND_COORDINATOR,
    TRANSACTION_KEY,
    TXN_OFFSET_COMMIT,
    decode_reply,
    encode_reply,
    expects_reply,
    rewrite_addresses,
)

# Cohort's own, whatever the upstream serves: the group APIs (classic, KIP-848, share,
# streams, their offsets and admin; TxnOffsetCommit, refused by Cohort), the connection's
# (ApiVersions, SASL), Metadata, the share coordinator's inter-broker APIs.
OWN_KEYS = frozenset({3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 28, 36, 42, 47, 68, 69,
                      76, 77, 78, 79, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92})
# GetTelemetrySubscriptions and PushTelemetry (KIP-714): not offered in front of an upstream,
# as Kafka itself leaves them out of ApiVersions without a telemetry plugin. Relayed, they
# cost Cohort's listeners (mostly the coordinators', where clients' telemetry lands) a round
# trip upstream per client every push interval for nothing: Tansu 0.6 answers every one with
# no metrics requested, a new client instance id and a 5 s interval, so 1,000 librdkafka
# consumers asked 110-200 times a second, forever, through the partitions that run the group
# (counted by the listeners, the 1,000-consumer group of bench/upstream.py --stable over
# Tansu); in front of Kafka 4.4, which does not advertise them, the same group sent none.
NOT_RELAYED = frozenset({71, 72})
DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, LIST_CONFIG_RESOURCES = 32, 44, 74
GROUP_RESOURCE = 32
# Relayed only when the request names no group (or, for FindCoordinator, only transactions).
DEPENDS_ON_BODY = frozenset({DESCRIBE_CONFIGS, INCREMENTAL_ALTER_CONFIGS, LIST_CONFIG_RESOURCES,
                             FIND_COORDINATOR})
# CreateTopics, DeleteTopics, CreatePartitions: Cohort's image takes the change before the
# client hears of it, so a group the client joins next sees the topic as it now is.
TOPIC_CHANGES = frozenset({19, 20, 37})
# Replies Cohort reads before the client does: topic changes, and those naming brokers.
REWRITTEN = TOPIC_CHANGES | ADDRESS_APIS


# Cohort's own rows that are the upstream's in front of one (the synthetic stream's and the
# topic admin): advertised only as far as the upstream serves them.
UPSTREAMS_OWN_ROWS = frozenset({0, 1, 2, 19, 20, 37})


def relayed_keys(upstream_keys) -> frozenset[int]:
    """The API keys this room takes in front of an upstream that serves ``upstream_keys``:
    relayed, or (TxnOffsetCommit) refused here."""
    return frozenset(k for k in upstream_keys if k not in OWN_KEYS | NOT_RELAYED) | (
        DEPENDS_ON_BODY & frozenset(upstream_keys)) | {TXN_OFFSET_COMMIT}


def goes_upstream(header: RequestHeader, frame: bytes, keys: frozenset[int]) -> bool:
    """Whether this request (``frame`` without its size prefix) is relayed."""
    key = header.api_key
    if key not in keys:
        return False
    if key not in DEPENDS_ON_BODY:
        return True
    try:
        body = decode_request(frame).body
    except Exception:
        return False  # Cohort's own decoder answers (or closes) as for any bad frame
    if key == FIND_COORDINATOR:
        return (body.get("key_type") or 0) == TRANSACTION_KEY
    if key == LIST_CONFIG_RESOURCES:  # v0 lists client metrics only; v1 with no type, all
        types = body.get("resource_types") or []
        return header.api_version == 0 or (bool(types) and GROUP_RESOURCE not in types)
    return all(r.get("resource_type") != GROUP_RESOURCE for r in body.get("resources", []))


def topic_changes(header: RequestHeader, frame: bytes, reply: bytes) -> dict[str, int | None]:
    """What a relayed topic change did, by topic: its partitions (0 when the upstream's
    default), or None for deleted; only the topics the upstream's reply accepted."""
    try:
        body = decode_request(frame).body
        answer = decode_reply(header.api_key, header.api_version, reply[4:])
    except Exception:
        return {}
    if header.api_key == 19:  # CreateTopics
        ok = {t["name"] for t in answer.get("topics", []) if t.get("error_code") == 0}
        return {t["name"]: max(t.get("num_partitions", 0), 0)
                for t in body.get("topics", []) if t["name"] in ok}
    if header.api_key == 37:  # CreatePartitions
        ok = {t["name"] for t in answer.get("results", []) if t.get("error_code") == 0}
        return {t["name"]: t["count"] for t in body.get("topics", []) if t["name"] in ok}
    ok = {t.get("name") for t in answer.get("responses", []) if t.get("error_code") == 0}
    return {name: None for name in ok if name}


class ClientRelay:
    """The links of one client connection (see the module docstring)."""

    def __init__(self, view: UpstreamView, node_id: int | None,
                 listener_of: Callable[[int], tuple[str, int] | None],
                 topics_changed: Callable[[dict], Awaitable[object]] | None = None) -> None:
        self.view = view
        self.node_id = node_id
        self.listener_of = listener_of
        self.topics_changed = topics_changed
        self._link: asyncio.Future | None = None

    async def _open(self) -> UpstreamLink:
        node = self.node_id
        if node is None:  # the bootstrap listener: any broker, the controller's first
            known = sorted(self.view.brokers, key=lambda n: (n != self.view.controller_id, n))
            node = known[0] if known else None
        where = self.view.brokers.get(node) if node is not None else None
        if where is None:
            where = self.view.settings.bootstrap[0]
        return await UpstreamLink(*where, self.view.settings).open()

    def _opened(self) -> UpstreamLink | None:
        """The link, if it is open already (not opening, nor failed to open)."""
        link = self._link
        if link is None or not link.done() or link.cancelled() or link.exception() is not None:
            return None
        return link.result()

    def passes_through(self, header: RequestHeader) -> bool:
        """Whether the reply to ``header``'s request goes back to the client as the upstream
        sent it, over a link open already: no broker address to rewrite, no topic change for
        the image to take (``send``'s fast path)."""
        return header.api_key not in REWRITTEN and self._opened() is not None

    def send(self, header: RequestHeader, frame: bytes, body_offset: int | None = None,
             then: Callable[[], object] | None = None) -> asyncio.Future | None:
        """Relay ``frame`` (without its size prefix; its header ends at ``body_offset``) over
        the open link (``passes_through``): the link's own future of the framed reply, which
        the client's connection writes as it comes (``then`` is called once it is resolved,
        in the callback that read it), or None when Kafka sends no reply. A Produce's round
        trip through Cohort is then one callback of the event loop each way, no task
        between them."""
        sized = len(frame).to_bytes(4, "big") + frame
        return self._link.result().relay(
            sized, expects_reply(frame, header.api_version, body_offset), then)

    @property
    def writing_paused(self) -> bool:
        """Whether the open link's socket buffer is full (``drain`` would wait)."""
        link = self._opened()
        return link is not None and link.writing_paused

    async def drain(self) -> None:
        """Wait while the link's socket buffer is full (backpressure toward the client)."""
        if self._link is not None and self._link.done():
            await self._link.result().drain()

    async def forward(self, header: RequestHeader, frame: bytes,
                      merge: Callable[[dict], dict] | None = None) -> bytes | None:
        """Relay ``frame`` (without its size prefix); the framed reply, rewritten where it
        names brokers, or None when Kafka sends no reply. ``merge``: what the reply gains
        before the client sees it (entries an ACL refused, ``protocol.security.relay_acls``)."""
        if self._link is None:
            self._link = asyncio.ensure_future(self._open())
        link = await self._link
        sized = len(frame).to_bytes(4, "big") + frame
        pending = link.relay(sized, expects_reply(frame, header.api_version))
        await link.drain()
        if pending is None:
            return None
        reply = await pending
        if header.api_key in TOPIC_CHANGES and self.topics_changed is not None:
            await self.topics_changed(topic_changes(header, frame, reply))
        if header.api_key in ADDRESS_APIS:
            body = rewrite_addresses(header.api_key, header.api_version, reply[4:],
                                     self.listener_of)
            reply = len(body).to_bytes(4, "big") + body
        if merge is not None:
            body = encode_reply(header.api_key, header.api_version, header.correlation_id,
                                merge(decode_reply(header.api_key, header.api_version,
                                                   reply[4:])))
            reply = len(body).to_bytes(4, "big") + body
        return reply

    def close(self) -> None:
        link = self._opened()
        if link is not None:
            link.close("the client closed its connection")
        elif self._link is not None:
            self._link.cancel()


__all__ = ["ClientRelay", "UpstreamUnavailable", "goes_upstream", "relayed_keys"]
