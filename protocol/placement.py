"""Which ``__consumer_offsets`` partition owns a group: Kafka's rule, bit for bit.

Kafka places a group at ``Utils.abs(groupId.hashCode()) % numPartitions``, where
``hashCode`` is Java's ``String.hashCode`` over UTF-16 code units with 32-bit overflow and
``Utils.abs`` is ``Math.abs`` except that ``Integer.MIN_VALUE`` maps to 0 instead of
overflowing. Using the same rule
means a group lands on the same partition number here as on a Kafka cluster with as many
partitions, which makes the two easy to compare.
"""

from __future__ import annotations

import functools

from assignors.java_order import java_string_hash

__all__ = ["java_string_hash", "kafka_abs", "partition_for"]


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs``, but ``Integer.MIN_VALUE`` gives 0."""
    return 0 if n == -(1 << 31) else abs(n)


# Every request a partition serves asks where its group lives, and Java's hash costs a
# Python loop over the id's characters: the answers for the groups seen lately are kept.
@functools.lru_cache(maxsize=1 << 16)
def partition_for(group_id: str, num_partitions: int) -> int:
    if num_partitions <= 0:
        raise ValueError("num_partitions must be positive")
    return kafka_abs(java_string_hash(group_id)) % num_partitions
