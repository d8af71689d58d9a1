"""What a ConnectGroupHeartbeat changes about its worker, and which changes bump the epoch.

A heartbeat's null fields mean "unchanged"; the rest are applied to the worker. Seed 004's
worker-side triggers: the worker changes its assignors, or its assignor's reason or metadata.
Two refinements keep a quiet group quiet (docs/decisions.md): a worker echoing the metadata
the assignor wrote with its target tells the assignor nothing new, and a reason falling back
to 0 withdraws a request rather than making one.
"""

from __future__ import annotations

from dataclasses import replace

from protocol import messages as m
from protocol.connect.member import ConnectWorkerMember
from protocol.connect.records import ConnectGroupTargetAssignmentMemberValue
from protocol.modern.changes import common_changes


def apply_request(
    member: ConnectWorkerMember, req: m.ConnectGroupHeartbeatRequest
) -> ConnectWorkerMember:
    """The worker with the request's non-null fields applied."""
    changes = common_changes(req)
    if req.member_epoch == 0:
        changes["classic_member_metadata"] = None  # it joins with the new protocol now
    return member.updated(**changes)


def bump_reason(
    before: ConnectWorkerMember,
    after: ConnectWorkerMember,
    target: ConnectGroupTargetAssignmentMemberValue,
) -> str | None:
    """Why the worker's change needs a new assignment, or ``None`` if it does not."""
    if before.server_assignor != after.server_assignor:
        return "worker changed its assignors"
    old = {a.name: a for a in before.client_assignors}
    new = {a.name: a for a in after.client_assignors}
    if [(a.name, a.minimum_version, a.maximum_version) for a in before.client_assignors] != [
        (a.name, a.minimum_version, a.maximum_version) for a in after.client_assignors
    ]:
        return "worker changed its assignors"
    for name, a in new.items():
        b = old[name]
        if a.reason != b.reason and a.reason != 0:
            return f"worker's assignor {name} asked for a rebalance (reason {a.reason})"
        moved = (a.metadata_version, a.metadata_bytes) != (b.metadata_version, b.metadata_bytes)
        echo = (a.metadata_version, a.metadata_bytes) == (
            target.metadata_version,
            target.metadata_bytes,
        )
        if moved and not echo:
            return f"worker's assignor {name} metadata changed"
    return None


def only_asks(before: ConnectWorkerMember, after: ConnectWorkerMember) -> bool:
    """The change is a client assignor's new reason and nothing else (Connect's scheduled
    rebalance: every worker's delay runs out at the same moment, and each asks)."""
    if before.server_assignor != after.server_assignor:
        return False
    if len(before.client_assignors) != len(after.client_assignors):
        return False
    asked = False
    for b, a in zip(before.client_assignors, after.client_assignors, strict=True):
        if replace(a, reason=b.reason) != b:
            return False
        asked = asked or (a.reason != b.reason and a.reason != 0)
    return asked


def assignment_changed(before: ConnectWorkerMember | None, after: ConnectWorkerMember) -> bool:
    """Whether the reply must carry the worker's assignment: it is new, or its epoch, state or
    work moved (a consumer's reply leaves out a change of state alone, as Kafka's does)."""
    return (
        before is None
        or before.member_epoch != after.member_epoch
        or before.current.state != after.current.state
        or before.assigned != after.assigned
        or before.pending_revocation != after.pending_revocation
    )
