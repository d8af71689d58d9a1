"""The cluster's topic and connector metadata as the coordinator sees it: an immutable image.

The controller owns topics and, for Connect groups, the connectors of each Connect cluster
(Cohort's stand-in for Connect's config topic); a partition actor receives a new
``MetadataImage`` whenever one changes and hands it to the shard, which compares each group's
slice with what it recorded (the partition metadata record, a Connect group's connectors) to
decide on an epoch bump.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class TopicMetadata:
    topic_id: str
    name: str
    num_partitions: int
    # partition_racks[p] = racks holding replicas of partition p; None = unknown.
    partition_racks: tuple[frozenset[str], ...] | None = None

    def __post_init__(self) -> None:
        if self.num_partitions < 0:
            raise ValueError("num_partitions must be >= 0")
        if self.partition_racks is not None:
            racks = tuple(frozenset(r) for r in self.partition_racks)
            if len(racks) != self.num_partitions:
                raise ValueError("partition_racks needs one entry per partition")
            object.__setattr__(self, "partition_racks", racks)

    def racks_digest(self) -> int:
        """A stable fingerprint of the rack layout, so a rack change is noticed cheaply."""
        if self.partition_racks is None:
            return 0
        text = "|".join(",".join(sorted(r)) for r in self.partition_racks)
        return zlib.crc32(text.encode())


@dataclass(frozen=True)
class ConnectorMetadata:
    """A connector of a Connect cluster (``group_id``) and its task count (tasks 0..n-1)."""

    group_id: str
    name: str
    task_count: int

    def __post_init__(self) -> None:
        if self.task_count < 0:
            raise ValueError("task_count must be >= 0")


class MetadataImage:
    """Topics by id and by name, connectors by Connect group. Immutable once built."""

    def __init__(
        self,
        topics: Iterable[TopicMetadata] = (),
        connectors: Iterable[ConnectorMetadata] = (),
    ) -> None:
        self._by_id: dict[str, TopicMetadata] = {}
        self._by_name: dict[str, TopicMetadata] = {}
        for t in topics:
            if t.topic_id in self._by_id or t.name in self._by_name:
                raise ValueError(f"duplicate topic {t.name!r} / {t.topic_id!r}")
            self._by_id[t.topic_id] = t
            self._by_name[t.name] = t
        self._connectors: dict[str, dict[str, int]] = {}
        for c in connectors:
            of_group = self._connectors.setdefault(c.group_id, {})
            if c.name in of_group:
                raise ValueError(f"duplicate connector {c.name!r} in {c.group_id!r}")
            of_group[c.name] = c.task_count

    def connectors_of(self, group_id: str) -> dict[str, int]:
        """The connectors of Connect group ``group_id``: ``{name: task_count}`` (a copy)."""
        return dict(self._connectors.get(group_id, {}))

    def connectors(self) -> list[ConnectorMetadata]:
        return [
            ConnectorMetadata(group_id, name, count)
            for group_id, of_group in self._connectors.items()
            for name, count in of_group.items()
        ]

    def topic(self, topic_id: str) -> TopicMetadata | None:
        return self._by_id.get(topic_id)

    def topic_by_name(self, name: str) -> TopicMetadata | None:
        return self._by_name.get(name)

    def topics(self) -> list[TopicMetadata]:
        return list(self._by_id.values())

    def topic_names(self) -> list[str]:
        return list(self._by_name)

    def named(self, parts: Mapping[str, Iterable[int]]) -> list[tuple[str, list[int]]]:
        """``{topic_id: partitions}`` as the classic protocol names them: ``[(name, [p])]``,
        topics this image no longer has left out."""
        out = []
        for topic_id, partitions in sorted(parts.items()):
            topic = self._by_id.get(topic_id)
            if topic is not None:
                out.append((topic.name, list(partitions)))
        return out

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, MetadataImage)
            and self._by_id == other._by_id
            and self._connectors == other._connectors
        )

    def __repr__(self) -> str:
        if not self._connectors:
            return f"MetadataImage({list(self._by_id.values())!r})"
        return f"MetadataImage({list(self._by_id.values())!r}, connectors={self.connectors()!r})"
