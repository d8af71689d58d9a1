"""The current-assignment reconciler for Connect workers: one safe step toward the target.

Kafka's ``CurrentAssignmentBuilder`` over connectors and tasks (seed 004, "revokes the
connectors/tasks which are no longer in the target ... assigns the new connectors/tasks ...
while ensuring that connectors/tasks which are not revoked by other workers yet are removed
from this set"). The rule is invariant 1: a unit goes to a worker only once no other worker
holds it. A worker that must stop work first stays at its old epoch, UNREVOKED, until its
heartbeat shows it stopped; a worker whose new work is still held elsewhere moves to the new
epoch, UNRELEASED, and gets that work as it is released. A step never both revokes and
assigns, as the seed's worker expects.
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.connect import units as u
from protocol.connect.member import ConnectWorkerMember, WorkerState

# unit -> the worker holding it (assigned or pending revocation), or None when free.
OwnerOf = Callable[[u.Unit], "str | None"]


def reconcile(
    member: ConnectWorkerMember,
    target_epoch: int,
    target: u.Units,
    owned: u.Units | None,
    owner_of: OwnerOf,
) -> ConnectWorkerMember:
    """The worker after one reconciliation step.

    ``owned`` is what the heartbeat says the worker runs (``None`` when it did not say, which
    never counts as acknowledging a revocation).
    """
    if member.state is WorkerState.UNREVOKED:
        if _runs_any(owned, member.pending_revocation):
            return member
        return _next(member, target_epoch, target, owned, owner_of)
    if member.state is WorkerState.STABLE and member.member_epoch == target_epoch:
        return member
    return _next(member, target_epoch, target, owned, owner_of)


def _runs_any(owned: u.Units | None, units: u.Units) -> bool:
    """Whether the worker may still run any of ``units``; unknown counts as yes."""
    return owned is None or bool(owned & units)


def _next(
    member: ConnectWorkerMember,
    target_epoch: int,
    target: u.Units,
    owned: u.Units | None,
    owner_of: OwnerOf,
) -> ConnectWorkerMember:
    current = member.assigned
    kept = current & target
    revoke = current - target
    new = target - current
    unreleased = frozenset(unit for unit in new if owner_of(unit) not in (None, member.member_id))
    if revoke and _runs_any(owned, revoke):
        # Stop first; take nothing new until the worker acknowledges. A worker that already
        # reports not running them (it rejoined) need not wait.
        return member.moved(
            state=WorkerState.UNREVOKED, assigned=kept, pending_revocation=frozenset(revoke)
        )
    moving = member.member_epoch != target_epoch
    return member.moved(
        state=WorkerState.UNRELEASED if unreleased else WorkerState.STABLE,
        member_epoch=target_epoch,
        previous_member_epoch=member.member_epoch if moving else member.previous_member_epoch,
        assigned=kept | (new - unreleased),
        pending_revocation=u.EMPTY,
    )
