"""The current-assignment reconciler for consumers: the kernel's (``modern.reconciler``) over
``(topic_id, partition)`` pairs, with the partition maps the heartbeat and records speak."""

from __future__ import annotations

from collections.abc import Callable

from protocol import partitions as pm
from protocol.consumer.member import ConsumerGroupMember
from protocol.modern import reconciler as kernel
from protocol.modern.member import STABLE
from protocol.records import PartitionMap

# (topic_id, partition) -> member id currently holding it (assigned or pending revocation),
# or None when it is free.
OwnerOf = Callable[[str, int], "str | None"]


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: PartitionMap,
    owned: PartitionMap | None,
    owner_of: OwnerOf,
) -> ConsumerGroupMember:
    """Return the member after one reconciliation step (``modern.reconciler.reconcile``)."""
    if member.current.state == STABLE and member.member_epoch == target_epoch:
        return member  # the steady heartbeat: nothing to convert
    return kernel.reconcile(
        member,
        target_epoch,
        pm.pairs(target),
        pm.pairs(owned) if owned is not None else None,
        lambda tp: owner_of(*tp),
    )
