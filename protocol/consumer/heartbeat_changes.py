"""What a heartbeat changes about its member, and which changes matter.

A heartbeat's null fields mean "unchanged"; the rest are applied to the member. Some changes
trigger a rebalance (subscription, regex, assignors, and a regex subscriber's view of the
topics, which every heartbeat states: seed 000's trigger chapter is elided, and Kafka 4.4 does
not rebalance for a member's new rack); some replies must carry the assignment (a full
heartbeat, or one whose member's assigned partitions moved).
"""

from __future__ import annotations

from collections.abc import Callable

from protocol import messages as m
from protocol.consumer.member import ConsumerGroupMember, MemberState
from protocol.modern.changes import common_changes

_UNRELEASED = MemberState.UNRELEASED_PARTITIONS


def is_full(req: m.ConsumerGroupHeartbeatRequest) -> bool:
    """Kafka resends the assignment to a heartbeat that restates everything (e.g. a retry)."""
    return (
        req.rebalance_timeout_ms != -1
        and (req.subscribed_topic_names is not None or req.subscribed_topic_regex is not None)
        and req.topic_partitions is not None
    )


def assignment_changed(before: ConsumerGroupMember | None, after: ConsumerGroupMember) -> bool:
    """Whether a reply carries the assignment although the request did not ask for it:
    Kafka's rule (``hasAssignedPartitionsChanged``), the partitions the member may own moved.
    A new epoch alone, or a revocation acknowledged, is told by the epoch field. Also when
    the member stopped waiting for partitions with its own unchanged: its target no longer
    holds them, and the reply's pending list (seed 000's, not Kafka's) says so; without it
    the member would wait for them for good (``test_consumer_client``'s chaos found it)."""
    if before is None or before.assigned_partitions != after.assigned_partitions:
        return True
    return before.state == _UNRELEASED and after.state != _UNRELEASED


_TRIGGERS: tuple[Callable[[ConsumerGroupMember], object], ...] = (
    lambda x: x.subscribed_topic_names,
    lambda x: x.subscribed_topic_regex,
    lambda x: x.topic_view,
    lambda x: x.server_assignor,
    lambda x: x.client_assignors,
)


def subscription_changed(a: ConsumerGroupMember, b: ConsumerGroupMember) -> bool:
    """The member-side rebalance triggers: subscription, regex, topic view, assignors (not the
    rack)."""
    return any(f(a) != f(b) for f in _TRIGGERS)


def apply_request(
    member: ConsumerGroupMember, req: m.ConsumerGroupHeartbeatRequest
) -> ConsumerGroupMember:
    """The member with the request's non-null fields applied (null means unchanged)."""
    changes = common_changes(req)
    if req.rack_id is not None:
        changes["rack_id"] = req.rack_id
    if req.subscribed_topic_names is not None:
        changes["subscribed_topic_names"] = tuple(sorted(set(req.subscribed_topic_names)))
        changes["subscribed_topic_regex"] = None
    if req.subscribed_topic_regex is not None:
        changes["subscribed_topic_regex"] = req.subscribed_topic_regex
        changes["subscribed_topic_names"] = ()
    # What a regex resolves to depends on what its member may DESCRIBE (KAFKA-18813); names
    # are checked where the heartbeat arrives, so only a regex subscriber keeps its view.
    regex = changes.get("subscribed_topic_regex", member.subscribed_topic_regex)
    changes["topic_view"] = req.topic_view if regex else None
    return member.updated(**changes)
