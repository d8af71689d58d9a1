"""The current-assignment reconciler: moves one member one safe step toward its target.

This is Kafka's ``CurrentAssignmentBuilder``. The rule it enforces is invariant 1 of the
design: a partition is handed to a member only once no other member holds it. So a member
that must give partitions up first stays at its old epoch in UNREVOKED_PARTITIONS until its
heartbeat shows it no longer owns them; a member whose new partitions are still held by
others moves to the new epoch in UNRELEASED_PARTITIONS and gets them as they are released.
"""

from __future__ import annotations

from collections.abc import Callable

from protocol import partitions as pm
from protocol.consumer.member import ConsumerGroupMember, MemberState
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
    """Return the member after one reconciliation step.

    ``owned`` is what the member's heartbeat says it owns (``None`` when the heartbeat did not
    say, which never counts as a revocation acknowledgement).
    """
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.partitions_pending_revocation):
            return member
        return _next(member, target_epoch, target, owned, owner_of)
    if member.state is MemberState.STABLE and member.member_epoch == target_epoch:
        return member
    return _next(member, target_epoch, target, owned, owner_of)


def _owns_any(owned: PartitionMap | None, partitions: PartitionMap) -> bool:
    """Whether the member may still be using any of ``partitions``; unknown counts as yes."""
    return owned is None or bool(pm.pairs(owned) & pm.pairs(partitions))


def _next(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: PartitionMap,
    owned: PartitionMap | None,
    owner_of: OwnerOf,
) -> ConsumerGroupMember:
    current = pm.pairs(member.assigned_partitions)
    wanted = pm.pairs(target)
    kept = current & wanted
    revoke = current - wanted
    new = wanted - current
    unreleased = {tp for tp in new if owner_of(*tp) not in (None, member.member_id)}
    assignable = new - unreleased

    if revoke and _owns_any(owned, pm.from_pairs(revoke)):
        # Give up first; take nothing new until the member acknowledges (Kafka does the same).
        # A member that already reports not owning them (e.g. it rejoined) need not wait.
        return member.moved(
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned_partitions=pm.from_pairs(kept),
            partitions_pending_revocation=pm.from_pairs(revoke),
        )
    return member.moved(
        state=MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE,
        previous_member_epoch=member.member_epoch
        if member.member_epoch != target_epoch
        else member.previous_member_epoch,
        member_epoch=target_epoch,
        assigned_partitions=pm.from_pairs(kept | assignable),
        partitions_pending_revocation={},
    )
