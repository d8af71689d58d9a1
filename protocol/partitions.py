"""Set algebra on partition maps (``{topic_id: (sorted partitions)}``).

Assignments move between records, the reconciler, the assignors and the wire; keeping one
canonical shape (sorted tuples, no empty topics) means equal assignments compare equal and
encode to equal bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from protocol import messages as m
from protocol.records import PartitionMap

EMPTY: PartitionMap = {}


def normalize(parts: Mapping[str, Iterable[int]]) -> PartitionMap:
    return {t: tuple(sorted(set(ps))) for t, ps in sorted(parts.items()) if ps}


def pairs(parts: Mapping[str, Iterable[int]]) -> set[tuple[str, int]]:
    return {(t, p) for t, ps in parts.items() for p in ps}


def from_pairs(items: Iterable[tuple[str, int]]) -> PartitionMap:
    out: dict[str, set[int]] = {}
    for t, p in items:
        out.setdefault(t, set()).add(p)
    return normalize(out)


def union(a: PartitionMap, b: PartitionMap) -> PartitionMap:
    return from_pairs(pairs(a) | pairs(b))


def minus(a: PartitionMap, b: PartitionMap) -> PartitionMap:
    return from_pairs(pairs(a) - pairs(b))


def is_subset(a: PartitionMap, b: PartitionMap) -> bool:
    return pairs(a) <= pairs(b)


def count(parts: PartitionMap) -> int:
    return sum(len(ps) for ps in parts.values())


def from_wire(tps: Iterable[m.TopicPartitions]) -> PartitionMap:
    out: dict[str, set[int]] = {}
    for tp in tps:
        out.setdefault(tp.topic_id, set()).update(tp.partitions)
    return normalize(out)


def to_wire(parts: PartitionMap) -> list[m.TopicPartitions]:
    return [m.TopicPartitions(t, list(ps)) for t, ps in sorted(parts.items())]
