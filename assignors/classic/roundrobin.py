"""Kafka's classic ``roundrobin`` assignor, as its clients run it when they lead a group.

It exists for balance without co-partitioning: with identical subscriptions, member
counts differ by at most one over the whole group, not per topic as with ``range``. With
differing subscriptions it can be lopsided (a member is skipped, not compensated, when it
does not subscribe to a topic). Eager: owned partitions are not read.
"""

from __future__ import annotations

from assignors.classic.spec import (
    ClassicSubscription,
    assignable_topics,
    java_string_key,
    member_sort_key,
)


class RoundRobinAssignor:
    """All subscribed partitions, sorted by (topic, partition), dealt to members in turn.

    Members circle in Kafka's member order; one not subscribed to a partition's topic is
    skipped and the partition goes to the next one that is (Kafka's ``RoundRobinAssignor``).
    """

    name = "roundrobin"
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
        topics = sorted({t for ts in topics_of.values() for t in ts}, key=java_string_key)
        turn = 0
        for topic in topics:
            for partition in range(partitions_per_topic[topic]):
                # Terminates: someone subscribes to every topic in ``topics``.
                while topic not in topics_of[order[turn]]:
                    turn = (turn + 1) % len(order)
                result[order[turn]].append((topic, partition))
                turn = (turn + 1) % len(order)
        return {m: sorted(tps) for m, tps in result.items()}
