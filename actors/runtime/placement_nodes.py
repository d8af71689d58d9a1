"""Where Cohort's coordinator actors run on a Ray cluster of several nodes.

Kafka spreads the ``__consumer_offsets`` partitions' leaders over its brokers, so that one
broker's death moves a share of the groups, not all of them. Cohort does the same with its
actors: partition ``p`` asks (softly) for the ``p % n``-th alive node, in node-id order, and the
controller for the node after the last partition's. "Softly" is Ray's soft node affinity: on the
node's death Ray restarts the actor on any node that is alive, and the actor loads its log
from the storage there.

That is only safe when every node reads the same storage. A local path that is not a mount every
node shares would give the restarted actor an empty directory on its new node: an empty
coordinator, every group and committed offset of the partition silently gone. So ``plan``:

- an object store (``s3://...``, any ``scheme://``): spread, soft;
- a local path declared shared (``shared_storage=True``: an EFS/NFS mount on every node):
  spread, soft;
- a local path not declared shared, on a Ray cluster of one alive node: every actor pinned
  (hard affinity) to that node, the one that has the data; a node that joins later never
  receives a partition;
- a local path not declared shared, on more than one alive node: refused
  (``StoragePlacementError``: INVALID_CONFIG and what to do), before any actor starts.

Pure except ``alive_nodes`` (which asks Ray); ``plan`` takes the node ids as data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from protocol.errors import CoordinatorError, Errors

# Ray ignores a soft node affinity when the actor asks for no resource at all (it picks a random
# node; ray-project/ray#25360 fixed only the hard case; measured here: 1 of 3 actors landed
# where asked). The partition actors take no CPU, so they ask for a token amount of memory.
PLACEMENT_MEMORY = 1 << 20
UNSHARED_LOCAL_STORAGE = (
    "local storage {path!r} on a Ray cluster of {nodes} alive nodes: a partition that Ray "
    "restarts on another node would open an empty directory there and serve an empty "
    "coordinator. Use an object store (--storage s3://bucket/prefix, with the AWS_* "
    "variables), or declare that {path!r} is a mount every node shares "
    "(cohort start --shared-storage, Cluster.start(..., shared_storage=True))"
)


class StoragePlacementError(CoordinatorError, ValueError):
    """The storage cannot follow the actors over the cluster's nodes (INVALID_CONFIG); a
    ``ValueError`` too, as ``Cluster.start``'s other refusals are."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.INVALID_CONFIG, message)

    def __reduce__(self):
        return (type(self), (self.message,))


def is_object_store(storage_path: str) -> bool:
    """``s3://bucket/prefix`` and any other ``scheme://`` location is not a local path."""
    return "://" in storage_path


@dataclass(frozen=True)
class Placement:
    """The node each coordinator actor asks for, and whether it may move off it."""

    nodes: tuple[str, ...]
    pinned: bool

    def node_for(self, index: int) -> str:
        return self.nodes[index % len(self.nodes)]

    def options(self, index: int) -> dict[str, Any]:
        """``.options(**...)`` of the actor number ``index`` (partition ``p`` is ``p``, the
        controller ``num_partitions``)."""
        strategy = NodeAffinitySchedulingStrategy(self.node_for(index), soft=not self.pinned)
        return {"scheduling_strategy": strategy, "memory": PLACEMENT_MEMORY}


def plan(storage_path: str, shared_storage: bool, nodes: list[str]) -> Placement:
    """Where the actors go, or ``StoragePlacementError`` when the storage cannot follow them."""
    if not nodes:
        raise StoragePlacementError("the Ray cluster has no alive node to place Cohort's actors on")
    ordered = tuple(sorted(nodes))
    if is_object_store(storage_path) or shared_storage:
        return Placement(ordered, pinned=False)
    if len(ordered) > 1:
        message = UNSHARED_LOCAL_STORAGE.format(path=storage_path, nodes=len(ordered))
        raise StoragePlacementError(message)
    return Placement(ordered, pinned=True)


def alive_nodes() -> list[str]:
    """The ids of the Ray nodes alive now (the head included: it hosts actors too)."""
    return [n["NodeID"] for n in ray.nodes() if n["Alive"]]


def node_of_actors() -> dict[str, str]:
    """``{actor name: node id}`` of every alive named actor of namespace ``cohort`` (read from
    the GCS, no dashboard needed): where each coordinator runs now."""
    from ray._private import state

    out = {}
    for info in state.actors().values():
        if info.get("Name") and info.get("State") == "ALIVE":
            out[info["Name"]] = info["Address"]["NodeID"]
    return out
