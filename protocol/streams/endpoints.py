"""The reply's ``PartitionsByUserEndpoint`` (interactive queries): each member's endpoint with
the input partitions of its tasks. Its own module: a pure function of the group, its
configured topology and the image, read only when a member's endpoint epoch is behind."""

from __future__ import annotations

from collections.abc import Iterable

from protocol.metadata import MetadataImage
from protocol.streams import messages as sm
from protocol.streams.group import StreamsGroup


def endpoints(group: StreamsGroup, configured, image: MetadataImage
              ) -> list[sm.EndpointToPartitions]:
    """One entry per member with an endpoint: its actives' input partitions, then its
    standbys' and warm-ups'."""
    inputs = configured.inputs if configured is not None else {}
    out = []
    for _mid, mm in sorted(group.members.items()):
        if mm.metadata.user_endpoint is None:
            continue
        tasks = mm.tasks
        out.append(sm.EndpointToPartitions(
            mm.metadata.user_endpoint,
            _partitions(inputs, tasks.active, image),
            _partitions(inputs, tasks.standby | tasks.warmup, image)))
    return out


def _partitions(inputs: dict, tasks: Iterable[tuple[str, int]],
                image: MetadataImage) -> dict[str, list[int]]:
    out: dict[str, set[int]] = {}
    for sub, p in tasks:
        for name in inputs.get(sub, ()):
            topic = image.topic_by_name(name)
            if topic is not None and p < topic.num_partitions:
                out.setdefault(name, set()).add(p)
    return {n: sorted(ps) for n, ps in sorted(out.items())}
