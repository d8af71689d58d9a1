"""The gateway's dispatch, derived from the one API table (``protocol.api``).

Each row Kafka's wire carries (``protocol.api.BY_API_KEY``) is served by one coroutine here,
found by the row's name; ``HANDLERS`` maps API keys to them. The two must agree, and this
module refuses to load if they do not: a row with no coroutine, or a coroutine for no row, is
an ``ImportError`` at the gateway's start, not an unknown API at a client's first request.
SaslHandshake and SaslAuthenticate are rows the connection serves itself, since they change
its state (``CONNECTION_APIS``). The group APIs' coroutines translate through their row's
``decode`` / ``encode``; ApiVersions answers with what ``protocol.wire.versions`` reads off
the same table, so what is advertised, decoded and dispatched is one list.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from actors.gateway import group_handlers as groups
from actors.gateway import share_handlers as shares
from actors.gateway import streams_handlers as streams
from actors.gateway import topic_handlers as brokers
from actors.gateway.core import GatewayCore, WireRequest
from protocol.api import BY_API_KEY
from protocol.wire.codec import EncodedBody, encode_body
from protocol.wire.versions import (
    API_VERSIONS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    api_versions_body,
)

Handler = Callable[[GatewayCore, WireRequest], Awaitable[dict | EncodedBody | None]]

# Served by the connection itself: the SASL exchange changes the connection's state.
CONNECTION_APIS = frozenset({SASL_HANDSHAKE, SASL_AUTHENTICATE})


async def api_versions(core: GatewayCore, req: WireRequest) -> EncodedBody:
    # In front of an upstream, the listener's own (``Serving.relayed_api_versions``); a core
    # without the method (a test's stand-in) serves the table's.
    relayed = getattr(core, "relayed_api_versions", None)
    reply = relayed(req.header.api_version) if relayed is not None else None
    return reply if reply is not None else _api_versions_reply(req.header.api_version)


@functools.cache
def _api_versions_reply(version: int) -> EncodedBody:
    """ApiVersions' reply never changes: written once per version (kio took ~0.3 ms a reply,
    15% of a partition's time while 100 consumers connected to it at once)."""
    return encode_body(API_VERSIONS, version, api_versions_body())


# The I/O coroutine of each row, by the row's name.
BY_NAME: dict[str, Handler] = {
    "Produce": brokers.produce,
    "Fetch": brokers.fetch,
    "ListOffsets": brokers.list_offsets,
    "Metadata": brokers.metadata,
    "OffsetCommit": groups.offset_commit,
    "OffsetFetch": groups.offset_fetch,
    "FindCoordinator": groups.find_coordinator,
    "JoinGroup": groups.join_group,
    "Heartbeat": groups.heartbeat,
    "LeaveGroup": groups.leave_group,
    "SyncGroup": groups.sync_group,
    "DescribeGroups": groups.describe_groups,
    "ListGroups": groups.list_groups,
    "ApiVersions": api_versions,
    "CreateTopics": brokers.create_topics,
    "DeleteTopics": brokers.delete_topics,
    "DescribeConfigs": brokers.describe_configs,
    "CreatePartitions": brokers.create_partitions,
    "DeleteGroups": groups.delete_groups,
    "IncrementalAlterConfigs": brokers.incremental_alter_configs,
    "ListConfigResources": brokers.list_config_resources,
    "OffsetDelete": groups.offset_delete,
    "ConsumerGroupHeartbeat": groups.consumer_group_heartbeat,
    "ConsumerGroupDescribe": groups.consumer_group_describe,
    "ShareGroupHeartbeat": shares.share_group_heartbeat,
    "ShareGroupDescribe": shares.share_group_describe,
    "ShareFetch": shares.share_fetch,
    "ShareAcknowledge": shares.share_acknowledge,
    "DescribeShareGroupOffsets": shares.describe_share_group_offsets,
    "AlterShareGroupOffsets": shares.alter_share_group_offsets,
    "DeleteShareGroupOffsets": shares.delete_share_group_offsets,
    "StreamsGroupHeartbeat": streams.streams_group_heartbeat,
    "StreamsGroupDescribe": streams.streams_group_describe,
    "StreamsGroupTopologyDescriptionUpdate": streams.streams_group_topology_description_update,
}


def _handlers() -> dict[int, Handler]:
    rows = {api.name: key for key, api in BY_API_KEY.items() if key not in CONNECTION_APIS}
    missing = sorted(set(rows) - set(BY_NAME))
    stray = sorted(set(BY_NAME) - set(rows))
    if missing or stray:
        raise ImportError(f"the gateway's handlers and protocol.api disagree: rows without a "
                          f"handler {missing}, handlers without a row {stray}")
    return {key: BY_NAME[name] for name, key in rows.items()}


HANDLERS: dict[int, Handler] = _handlers()
