"""Kafka's classic ``range`` assignor, as its clients run it when they lead a group.

It exists for co-partitioned joins: with one subscriber set, partition ``p`` of every topic
of equal size lands on the same member, without any coordination between topics. The
price is imbalance across topics (the first members get the extra partition of every
topic) and no stickiness: it is an eager assignor, members give up everything before
each rebalance, so owned partitions are not read.
"""

from __future__ import annotations

from assignors.classic.spec import ClassicSubscription, assignable_topics, member_sort_key


class RangeAssignor:
    """Per topic: contiguous ranges over its subscribers in Kafka's member order.

    Each of the topic's ``m`` subscribers gets ``n // m`` partitions, the first ``n % m``
    of them one more (Kafka's ``RangeAssignor`` without rack information).
    """

    name = "range"
    rebalance_protocol = "eager"

    def assign(
        self,
        partitions_per_topic: dict[str, int],
        subscriptions: dict[str, ClassicSubscription],
    ) -> dict[str, list[tuple[str, int]]]:
        order = sorted(subscriptions, key=lambda m: member_sort_key(m, subscriptions[m]))
        topics_of = {
            m: assignable_topics(partitions_per_topic, s) for m, s in subscriptions.items()
        }
        result: dict[str, list[tuple[str, int]]] = {m: [] for m in subscriptions}
        for topic in sorted({t for ts in topics_of.values() for t in ts}):
            members = [m for m in order if topic in topics_of[m]]
            per_member, extra = divmod(partitions_per_topic[topic], len(members))
            start = 0
            for i, member in enumerate(members):
                length = per_member + (1 if i < extra else 0)
                result[member].extend((topic, p) for p in range(start, start + length))
                start += length
        return {m: sorted(tps) for m, tps in result.items()}
