"""Which topics a classic group's members subscribe to, read from their protocol bytes.

A classic group's subscriptions are opaque to the coordinator except under the "consumer"
embedded protocol (``consumer_protocol``). The rebalance rules (which topics' metadata a
generation saw) and the offsets rules (which offsets may expire) both read them here.
"""

from __future__ import annotations

from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_subscription,
)
from protocol.classic.group import ClassicGroup


def subscribed_topic_names(group: ClassicGroup, strict: bool) -> set[str] | None:
    """The topic names the members subscribe to (none for a group without members).

    ``strict``: ``None`` unless every member's bytes decode (expiry must not guess); otherwise
    the union of those that do (bytes that do not decode are opaque; the leader still sees
    them).
    """
    if not group.members:
        return set()
    if group.protocol_type != PROTOCOL_TYPE:
        return None if strict else set()
    topics: set[str] = set()
    for member in group.members.values():
        try:
            topics.update(decode_subscription(member.metadata_for(group.protocol_name)).topics)
        except ConsumerProtocolError:
            if strict:
                return None
    return topics
