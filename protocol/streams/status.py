"""The heartbeat reply's status list, in Kafka's order: stale topology, assignment delayed,
the topology's topic problem, shutdown requested, missing client tags. Pure: what the group,
the member, the configured topology and the assignment configs say."""

from __future__ import annotations

import re
from collections.abc import Iterable

from protocol.streams import messages as sm
from protocol.streams.group import StreamsGroup
from protocol.streams.member import StreamsGroupMember
from protocol.streams.records import KeyValue
from protocol.streams.topology import Status

RACK_AWARE_ASSIGNMENT_TAGS = "rack.aware.assignment.tags"
# The first StreamsGroupHeartbeat version that may be told MISSING_CLIENT_TAGS (KAFKA-20744).
MISSING_CLIENT_TAGS_VERSION = 1
# Kafka 4.4's two ASSIGNMENT_DELAYED details (``maybeUpdateStreamsTargetAssignment``): the
# initial rebalance delay runs, or the assignment interval (KIP-1263) holds the target back.
INITIAL_DELAY = "Assignment delayed due to the configured initial rebalance delay."
ASSIGNMENT_INTERVAL = "Assignment delayed due to the configured assignment interval."


def statuses(group: StreamsGroup, member: StreamsGroupMember, configured, version: int,
             delayed: str | None, assignment_configs: Iterable[KeyValue]) -> list:
    """The statuses of a reply to ``member`` (``delayed``: why its target is delayed, the
    detail of ASSIGNMENT_DELAYED: ``INITIAL_DELAY`` or ``ASSIGNMENT_INTERVAL``; None: it is
    not)."""
    out = []
    topology = group.topology
    if topology is not None and member.topology_epoch < topology.epoch:
        out.append(sm.StreamsStatus(
            Status.STALE_TOPOLOGY,
            f"The member's topology epoch {member.topology_epoch} is behind the group's "
            f"topology epoch {topology.epoch}."))
    if delayed is not None:
        out.append(sm.StreamsStatus(Status.ASSIGNMENT_DELAYED, delayed))
    if configured is not None and not configured.ready:
        out.append(sm.StreamsStatus(configured.status, configured.detail))
    if group.shutdown_requested_by is not None:
        out.append(sm.StreamsStatus(
            Status.SHUTDOWN_APPLICATION,
            f"Streams group member {group.shutdown_requested_by} encountered a fatal error "
            f"and requested a shutdown for the entire application."))
    missing = _missing_client_tags(member, version, assignment_configs)
    if missing:
        out.append(sm.StreamsStatus(
            Status.MISSING_CLIENT_TAGS,
            f"Missing required client tags for rack-aware standby assignment: "
            f"[{', '.join(missing)}]. Configure them via 'client.tag.<tagKey>' in your "
            f"Streams config."))
    return out


def _missing_client_tags(member: StreamsGroupMember, version: int,
                         assignment_configs: Iterable[KeyValue]) -> list[str]:
    """The rack-aware tags the member does not report (Kafka tells only a v1+ member: a v0
    client does not know the status)."""
    if version < MISSING_CLIENT_TAGS_VERSION:
        return []
    configs = {kv.key: kv.value for kv in assignment_configs}
    wanted = configs.get(RACK_AWARE_ASSIGNMENT_TAGS, "").strip()
    if not wanted:
        return []
    have = {kv.key for kv in member.metadata.client_tags}
    return [t for t in re.split(r"\s*,\s*", wanted) if t not in have]
