"""The leader's part of a classic rebalance: run the group's assignor over every subscription.

In the classic protocol the coordinator does not assign: it elects one member leader, hands it
every member's JoinGroup metadata, and the leader's SyncGroup carries the whole group's
assignment. That work is a pure function of the JoinGroup reply and the partition counts, so it
lives apart from the member's join/sync state machine (``protocol/client/classic.py``), with the
consumer protocol's encodings it needs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from assignors.classic import ClassicSubscription, classic_assignor
from protocol import messages as m
from protocol.classic.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    decode_subscription,
    encode_assignment,
)
from protocol.client.ownership import TopicPartition

EAGER, COOPERATIVE = "eager", "cooperative"


def lead(
    resp: m.JoinGroupResponse, own_topics: Iterable[str], counts: Mapping[str, int]
) -> tuple[dict[str, int], list[m.SyncGroupRequestAssignment]]:
    """Run the group's assignor over every member's subscription (Kafka's
    ``ConsumerCoordinator.onLeaderElected``); with ``skip_assignment`` only watch the
    metadata (a static leader back from a restart, KIP-814).

    Returns the partition counts the leader assigned with (a change in them is a reason to
    rebalance) and the SyncGroup assignments. Raises ``KeyError`` for an assignor the leader
    does not know.
    """
    subscriptions = {mem.member_id: _subscription(mem) for mem in resp.members}
    topics = {t for s in subscriptions.values() for t in s.topics} or set(own_topics)
    metadata = {t: int(counts.get(t, 0)) for t in sorted(topics)}
    if resp.skip_assignment:
        return metadata, []
    assignor = classic_assignor(resp.protocol_name or "")
    sizes = {t: n for t, n in metadata.items() if n > 0}
    plan = assignor.assign(sizes, subscriptions)
    if assignor.rebalance_protocol == COOPERATIVE:
        _check_cooperative(plan, subscriptions)
    return metadata, [
        m.SyncGroupRequestAssignment(
            mid, encode_assignment(Assignment(grouped(plan.get(mid, []))))
        )
        for mid in subscriptions
    ]


def grouped(parts: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """(topic, p) pairs -> the consumer protocol's [(topic, [partitions])], sorted."""
    out: dict[str, list[int]] = {}
    for t, p in sorted(parts):
        out.setdefault(t, []).append(p)
    return list(out.items())


def _subscription(member: m.JoinGroupResponseMember) -> ClassicSubscription:
    """A member's JoinGroup metadata as the assignor reads it; garbage subscribes to nothing."""
    try:
        s = decode_subscription(member.metadata)
    except ConsumerProtocolError:
        return ClassicSubscription(topics=[], group_instance_id=member.group_instance_id)
    return ClassicSubscription(
        topics=list(s.topics),
        owned_partitions=[(t, p) for t, ps in s.owned_partitions for p in ps],
        generation_id=s.generation_id,
        rack_id=s.rack_id,
        group_instance_id=member.group_instance_id,
    )


def _check_cooperative(
    plan: Mapping[str, list[TopicPartition]], subscriptions: Mapping[str, ClassicSubscription]
) -> None:
    """Kafka's ``validateCooperativeAssignment``: no partition is taken from one member and
    given to another in the same rebalance (it must be revoked first)."""
    revoked: set[TopicPartition] = set()
    added: set[TopicPartition] = set()
    for mid, s in subscriptions.items():
        owned, assigned = set(s.owned_partitions), set(plan.get(mid, []))
        revoked |= owned - assigned
        added |= assigned - owned
    assert not revoked & added, f"cooperative assignment moves {sorted(revoked & added)} at once"

