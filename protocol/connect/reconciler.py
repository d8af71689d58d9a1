"""The current-assignment reconciler for Connect workers: the kernel's (``modern.reconciler``)
over connectors and tasks (seed 004, "revokes the connectors/tasks which are no longer in the
target ... assigns the new connectors/tasks ... while ensuring that connectors/tasks which are
not revoked by other workers yet are removed from this set")."""

from __future__ import annotations

from protocol.modern.reconciler import OwnerOf, reconcile

__all__ = ["OwnerOf", "reconcile"]
