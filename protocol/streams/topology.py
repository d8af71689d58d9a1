"""A streams group's topology against the metadata image: Kafka's ``InternalTopicManager``.

``configure(topology, image)`` decides whether the group can be assigned tasks, and if not,
why (a status of the heartbeat reply) and which internal topics the entry point should create:

1. every source topic that is not a repartition topic of the same topology must exist
   (else MISSING_SOURCE_TOPICS);
2. each repartition topic without a fixed partition count is sized as the largest input of
   the subtopologies writing to it (repeated until nothing changes, since repartition topics
   feed each other);
3. each copartition group's topics must agree: existing source topics of different sizes are
   INCORRECTLY_PARTITIONED_TOPICS, and an unsized repartition topic in a group takes the
   group's size;
4. each changelog is sized as the largest input of its subtopology;
5. an internal topic that exists with another size is INCORRECTLY_PARTITIONED_TOPICS; missing
   ones are returned to create and the group is MISSING_INTERNAL_TOPICS until they exist.

Ready, each subtopology has as many tasks as its largest input topic has partitions. The
result is a pure function of the topology and the topics it names, so it is never persisted:
a reloaded partition computes it again (as Kafka does).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from enum import IntEnum

from protocol.metadata import MetadataImage
from protocol.streams.messages import CreatableTopic
from protocol.streams.records import KeyValue, StreamsGroupTopologyValue, TopicInfo


class Status(IntEnum):
    """The heartbeat reply's status codes (``StreamsGroupHeartbeatResponse.Status``)."""

    STALE_TOPOLOGY = 0
    MISSING_SOURCE_TOPICS = 1
    INCORRECTLY_PARTITIONED_TOPICS = 2
    MISSING_INTERNAL_TOPICS = 3
    SHUTDOWN_APPLICATION = 4
    ASSIGNMENT_DELAYED = 5
    MISSING_CLIENT_TAGS = 6  # told to v1+ members only (KAFKA-20744)




@dataclass(frozen=True)
class ConfiguredTopology:
    """The topology as the metadata image allows it: ``tasks`` (subtopology -> task count)
    when ready; otherwise ``status`` and ``detail`` say why, and ``to_create`` names the
    internal topics to create. ``stateful``: subtopologies with changelogs."""

    topology_epoch: int
    tasks: dict[str, int] = field(default_factory=dict)
    stateful: frozenset[str] = frozenset()
    status: Status | None = None
    detail: str = ""
    to_create: dict[str, CreatableTopic] = field(default_factory=dict)
    # subtopology -> its input topic names (sources and repartition sources): what endpoints
    # of interactive queries name per task
    inputs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # input topic id -> the subtopologies reading it (which tasks a committed partition is of)
    readers: dict[str, tuple[str, ...]] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return self.status is None

    # The assignor's ``TopologyDescriber``.
    def subtopologies(self) -> list[str]:
        return sorted(self.tasks)

    def max_number_of_partitions(self, subtopology_id: str) -> int:
        return self.tasks[subtopology_id]

    def is_stateful(self, subtopology_id: str) -> bool:
        return subtopology_id in self.stateful


class _Refused(Exception):
    def __init__(self, status: Status, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def referenced_topics(topology: StreamsGroupTopologyValue) -> set[str]:
    """Every topic name the topology reads, writes or keeps state in."""
    out: set[str] = set()
    for s in topology.subtopologies:
        out.update(s.source_topics)
        out.update(s.repartition_sink_topics)
        out.update(t.name for t in s.repartition_source_topics)
        out.update(t.name for t in s.state_changelog_topics)
    return out


def metadata_hash(topology: StreamsGroupTopologyValue | None, image: MetadataImage) -> int:
    """A digest of the topics the topology names as the image has them (id, partition count):
    a change of it is a reason to configure the topology again and bump the group epoch."""
    if topology is None:
        return 0
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(referenced_topics(topology)):
        t = image.topic_by_name(name)
        h.update(f"{name}\0{t.topic_id if t else ''}\0{t.num_partitions if t else -1}\n".encode())
    return int.from_bytes(h.digest(), "big", signed=True)


def configure(topology: StreamsGroupTopologyValue, image: MetadataImage) -> ConfiguredTopology:
    """``topology`` against ``image`` (module docstring)."""
    try:
        return _configure(topology, image)
    except _Refused as e:
        return ConfiguredTopology(topology.epoch, status=e.status, detail=e.detail)


def _partitions(image: MetadataImage, name: str) -> int | None:
    t = image.topic_by_name(name)
    return t.num_partitions if t is not None else None


def _configure(topology: StreamsGroupTopologyValue, image: MetadataImage) -> ConfiguredTopology:
    subs = topology.subtopologies
    repartition: dict[str, TopicInfo] = {}
    for s in subs:
        for t in s.repartition_source_topics:
            repartition[t.name] = t
    missing = sorted({n for s in subs for n in s.source_topics
                      if n not in repartition and image.topic_by_name(n) is None})
    if missing:
        raise _Refused(Status.MISSING_SOURCE_TOPICS, f"Source topics {', '.join(missing)} are "
                       "missing.")
    sizes: dict[str, int] = {n: _partitions(image, n) for s in subs for n in s.source_topics
                             if n not in repartition}
    for name, info in repartition.items():
        if info.partitions > 0:
            sizes[name] = info.partitions
    _size_repartition_topics(subs, repartition, sizes)
    _enforce_copartitioning(subs, repartition, sizes, image)
    unsized = sorted(n for n in repartition if n not in sizes)
    if unsized:
        raise _Refused(Status.INCORRECTLY_PARTITIONED_TOPICS,
                       f"Could not compute the number of partitions of repartition topics "
                       f"{', '.join(unsized)}.")
    internal: dict[str, CreatableTopic] = {}
    for name, info in repartition.items():
        internal[name] = _creatable(info, sizes[name])
    tasks: dict[str, int] = {}
    inputs: dict[str, tuple[str, ...]] = {}
    for s in subs:
        names = (*s.source_topics, *(t.name for t in s.repartition_source_topics))
        inputs[s.subtopology_id] = tuple(names)
        tasks[s.subtopology_id] = max((sizes[n] for n in names), default=0)
        for info in s.state_changelog_topics:
            internal[info.name] = _creatable(info, tasks[s.subtopology_id])
    wrong = sorted(n for n, c in internal.items()
                   if (p := _partitions(image, n)) is not None and p != c.num_partitions)
    if wrong:
        raise _Refused(Status.INCORRECTLY_PARTITIONED_TOPICS, "Internal topics "
                       + ", ".join(f"{n} (expected {internal[n].num_partitions} partitions, "
                                   f"has {_partitions(image, n)})" for n in wrong)
                       + " have the wrong number of partitions.")
    to_create = {n: c for n, c in sorted(internal.items()) if image.topic_by_name(n) is None}
    stateful = frozenset(s.subtopology_id for s in subs if s.state_changelog_topics)
    if to_create:
        return ConfiguredTopology(
            topology.epoch, stateful=stateful, status=Status.MISSING_INTERNAL_TOPICS,
            detail=f"Internal topics are missing: [{', '.join(to_create)}]",
            to_create=to_create, inputs=inputs)
    readers: dict[str, list[str]] = {}
    for sub, names in inputs.items():
        for n in names:
            t = image.topic_by_name(n)
            if t is not None:
                readers.setdefault(t.topic_id, []).append(sub)
    return ConfiguredTopology(topology.epoch, tasks, stateful, inputs=inputs,
                              readers={k: tuple(v) for k, v in readers.items()})


def _creatable(info: TopicInfo, partitions: int) -> CreatableTopic:
    """Kafka's ``toCreatableTopic``: the topology's own configs for the topic, no others (Kafka
    Streams names ``cleanup.policy=compact`` for a changelog, ``delete`` and its retention for
    a repartition topic), and its replication factor (-1: the cluster's default)."""
    configs = {kv.key: kv.value for kv in info.topic_configs}
    return CreatableTopic(
        info.name, partitions, info.replication_factor or -1,
        tuple(KeyValue(k, v) for k, v in sorted(configs.items())))


def _size_repartition_topics(subs, repartition, sizes) -> None:
    """Unsized repartition topics: the largest input of the subtopologies writing to them,
    repeated until nothing changes (one repartition topic may feed the next)."""
    changed = True
    while changed:
        changed = False
        for s in subs:
            known = [sizes[n] for n in (*s.source_topics,
                                        *(t.name for t in s.repartition_source_topics))
                     if n in sizes]
            if not known:
                continue
            for sink in s.repartition_sink_topics:
                if sink in repartition and repartition[sink].partitions <= 0:
                    size = max(known)
                    if sizes.get(sink, 0) < size:
                        sizes[sink] = size
                        changed = True


def _enforce_copartitioning(subs, repartition, sizes, image) -> None:
    for s in subs:
        for group in s.copartition_groups:
            sources = [s.source_topics[i] for i in group.source_topics
                       if 0 <= i < len(s.source_topics)]
            reparts = [s.repartition_source_topics[i].name for i in group.repartition_source_topics
                       if 0 <= i < len(s.repartition_source_topics)]
            existing = {n: sizes[n] for n in sources if n in sizes and n not in repartition}
            if len(set(existing.values())) > 1:
                raise _Refused(
                    Status.INCORRECTLY_PARTITIONED_TOPICS,
                    "Following topics do not have the same number of partitions: ["
                    + ", ".join(f"{n}={p}" for n, p in sorted(existing.items())) + "]")
            fixed = {n: repartition[n].partitions for n in reparts if repartition[n].partitions > 0}
            target = next(iter(existing.values()), None)
            if target is None:
                target = max(fixed.values(), default=None) or max(
                    (sizes[n] for n in reparts if n in sizes), default=None)
            if target is None:
                continue
            bad = sorted(n for n, p in fixed.items() if p != target)
            if bad:
                raise _Refused(
                    Status.INCORRECTLY_PARTITIONED_TOPICS,
                    f"Repartition topics {', '.join(bad)} of a copartition group have a fixed "
                    f"number of partitions other than {target}.")
            for n in reparts:
                if n not in fixed:
                    sizes[n] = target
