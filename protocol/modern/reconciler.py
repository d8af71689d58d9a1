"""The current-assignment reconciler: moves one member one safe step toward its target.

Kafka's ``CurrentAssignmentBuilder``, over any group type's units. The rule it enforces is
invariant 1: a unit is handed to a member only once no other member holds it. So a member that
must give units up first stays at its old epoch in UNREVOKED until its heartbeat shows it no
longer holds them (a step never both revokes and assigns); a member whose new units are still
held by others moves to the new epoch in UNRELEASED and gets them as they are released.

Connect workers' units are (connector, task) pairs already; a consumer's are the partitions of
its partition maps, which ``reconcile_partitions`` reads as (topic id, partition) pairs.
"""

from __future__ import annotations

from collections.abc import Callable, Set
from typing import Any, TypeVar

from protocol import partitions as pm
from protocol.modern.member import STABLE, UNRELEASED, UNREVOKED, ModernMember
from protocol.records import PartitionMap

M = TypeVar("M", bound=ModernMember)

# unit -> the member holding it (assigned or pending revocation), or None when it is free.
OwnerOf = Callable[[Any], "str | None"]


def reconcile(
    member: M, target_epoch: int, target: Set, owned: Set | None, owner_of: OwnerOf
) -> M:
    """The member after one reconciliation step.

    ``owned`` is what the member's heartbeat says it holds (``None`` when the heartbeat did not
    say, which never counts as a revocation acknowledgement).
    """
    state = member.current.state
    if state == UNREVOKED:
        if _holds_any(owned, member.pending_units):
            return member
    elif state == STABLE and member.member_epoch == target_epoch:
        return member
    return _next(member, target_epoch, target, owned, owner_of)


def _holds_any(owned: Set | None, units: Set) -> bool:
    """Whether the member may still use any of ``units``; unknown counts as yes."""
    return owned is None or not owned.isdisjoint(units)


def _next(member: M, target_epoch: int, target: Set, owned: Set | None, owner_of: OwnerOf) -> M:
    current = member.assigned_units
    kept = current & target
    revoke = current - target
    new = target - current
    mid = member.member_id
    unreleased = {unit for unit in new if owner_of(unit) not in (None, mid)}
    if revoke and _holds_any(owned, revoke):
        # Give up first; take nothing new until the member acknowledges (Kafka does the same).
        # A member that already reports not holding them (e.g. it rejoined) need not wait.
        return member.moved_units(
            UNREVOKED, kept, revoke, member.member_epoch, member.previous_member_epoch
        )
    moving = member.member_epoch != target_epoch
    return member.moved_units(
        UNRELEASED if unreleased else STABLE,
        kept | (new - unreleased),
        frozenset(),
        target_epoch,
        member.member_epoch if moving else member.previous_member_epoch,
    )


def reconcile_partitions(
    member: M,
    target_epoch: int,
    target: PartitionMap,
    owned: PartitionMap | None,
    owner_of: Callable[[str, int], str | None],
) -> M:
    """``reconcile`` over partition maps (a consumer's target, what its heartbeat says it
    owns) and ``owner_of(topic_id, partition)``; a stable member at the target epoch, the
    steady heartbeat, is returned before anything is converted."""
    if member.current.state == STABLE and member.member_epoch == target_epoch:
        return member
    return reconcile(
        member,
        target_epoch,
        pm.pairs(target),
        pm.pairs(owned) if owned is not None else None,
        lambda tp: owner_of(*tp),
    )
