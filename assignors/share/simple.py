"""The simple share assignor: every subscribed partition to at least one member, shared when
members outnumber partitions.

Share groups need no stickiness (no partition is ever revoked: records, not partitions, are
what members hold exclusively), so the assignment is a pure function of the subscriptions and
partition counts. Per topic, with its subscribers in id order: when there are at least as
many partitions as subscribers, partition p goes to subscriber p mod k (each gets
floor or ceil of n/k); when there are more subscribers, subscriber i gets partition i mod n, so
every partition has floor or ceil of k/n members and every member has one. Deterministic:
the same input gives the same output on every coordinator.
"""

from __future__ import annotations

from collections.abc import Mapping

NAME = "simple"


def assign_simple(
    subscriptions: Mapping[str, frozenset[str]], partition_counts: Mapping[str, int]
) -> dict[str, dict[str, tuple[int, ...]]]:
    """``subscriptions``: member id -> subscribed topic ids; ``partition_counts``: topic id ->
    partitions (a topic missing here is not assigned). Returns member id -> {topic id:
    sorted partitions}, with an entry (maybe empty) for every member."""
    out: dict[str, dict[str, list[int]]] = {mid: {} for mid in sorted(subscriptions)}
    by_topic: dict[str, list[str]] = {}
    for mid in sorted(subscriptions):
        for topic in subscriptions[mid]:
            by_topic.setdefault(topic, []).append(mid)
    for topic in sorted(by_topic):
        n = partition_counts.get(topic, 0)
        if n <= 0:
            continue
        members = by_topic[topic]
        k = len(members)
        if n >= k:
            for p in range(n):
                out[members[p % k]].setdefault(topic, []).append(p)
        else:
            for i, mid in enumerate(members):
                out[mid].setdefault(topic, []).append(i % n)
    return {mid: {t: tuple(sorted(ps)) for t, ps in sorted(parts.items())}
            for mid, parts in out.items()}
