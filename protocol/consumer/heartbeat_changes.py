"""What a heartbeat changes about its member, and which changes matter.

A heartbeat's null fields mean "unchanged"; the rest are applied to the member. Some changes
trigger a rebalance (seed 000: subscription, regex, rack, assignors); some replies must carry
the assignment (a full heartbeat, or one whose member's assignment moved).
"""

from __future__ import annotations

from collections.abc import Callable

from protocol import messages as m
from protocol.consumer.member import ConsumerGroupMember
from protocol.records import ClientAssignorEntry


def is_full(req: m.ConsumerGroupHeartbeatRequest) -> bool:
    """Kafka resends the assignment to a heartbeat that restates everything (e.g. a retry)."""
    return (
        req.rebalance_timeout_ms != -1
        and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
        and req.topic_partitions is not None
    )


def assignment_changed(before: ConsumerGroupMember | None, after: ConsumerGroupMember) -> bool:
    return (
        before is None
        or before.member_epoch != after.member_epoch
        or before.assigned_partitions != after.assigned_partitions
        or before.partitions_pending_revocation != after.partitions_pending_revocation
    )


_TRIGGERS: tuple[Callable[[ConsumerGroupMember], object], ...] = (
    lambda x: x.subscribed_topic_names,
    lambda x: x.subscribed_topic_regex,
    lambda x: x.rack_id,
    lambda x: x.server_assignor,
    lambda x: x.client_assignors,
)


def subscription_changed(a: ConsumerGroupMember, b: ConsumerGroupMember) -> bool:
    """Seed 000's member-side rebalance triggers: subscription, regex, rack, assignors."""
    return any(f(a) != f(b) for f in _TRIGGERS)


def apply_request(
    member: ConsumerGroupMember, req: m.ConsumerGroupHeartbeatRequest
) -> ConsumerGroupMember:
    """The member with the request's non-null fields applied (null means unchanged)."""
    changes: dict[str, object] = {}
    if req.instance_id is not None:
        changes["instance_id"] = req.instance_id
    if req.rack_id is not None:
        changes["rack_id"] = req.rack_id
    if req.rebalance_timeout_ms != -1:
        changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
    if req.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = tuple(sorted(set(req.subscribed_topic_names)))
        changes["subscribed_topic_regex"] = None
    if req.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = req.subscribed_topic_regex
        changes["subscribed_topic_names"] = ()
    if req.server_assignor is not None:
        changes["server_assignor"] = req.server_assignor
        changes["client_assignors"] = ()
    if req.client_assignors is not None:
        changes["client_assignors"] = tuple(
            ClientAssignorEntry(
                a.name,
                a.minimum_version,
                a.maximum_version,
                a.reason,
                a.metadata_version,
                a.metadata_bytes,
            )
            for a in req.client_assignors
        )
        changes["server_assignor"] = None
    if req.client_id:
        changes["client_id"] = req.client_id
    if req.client_host:
        changes["client_host"] = req.client_host
    return member.updated(**changes)
