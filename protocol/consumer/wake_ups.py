"""Which members a turn should wake: the pure half of Cohort's wake-ups (issue 11).

KIP-848 is pull only: a member learns what changed for it at its next heartbeat. A runtime
that can reach a member's client at once (``actors/runtime/wakers.py``) asks this module,
after each turn's records are durable, whom the turn gave a reason to heartbeat now:

1. **a new target** the member has not been told of: its target record changed in the turn
   and no reply completed after that change carried it (a member whose own heartbeat was
   answered later in the turn already knows);
2. **partitions it may take now**: the turn released partitions (a revocation acknowledged, a
   member left or was fenced) that are still free at its end and lie in the target of a
   member waiting for them (``UNRELEASED_PARTITIONS``). Its target did not change, only what
   it may take did, so rule 1 alone leaves it polling at the reconciliation interval.

A member that is stable at the target epoch holds its whole target, so neither rule ever
picks it: a group with nothing in progress wakes nobody. The changes are noted as records are
replayed (``after_replay``, fed by the shard for live events and loads alike) and taken, with
the decision, once per turn (``take``); a runtime drops what a load noted.
"""

from __future__ import annotations

from collections.abc import Mapping

from protocol import partitions as pm
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import ConsumerGroupMember, MemberState
from protocol.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
)
from protocol.records import Record

MemberKey = tuple[str, str]  # (group id, member id)
_UNRELEASED = int(MemberState.UNRELEASED_PARTITIONS)

CONSUMER = ConsumerGroup.group_type


class WakeUps:
    """The wake-worthy changes since the last ``take``: bounded by the members whose target
    changed and the partitions released, each counted once."""

    def __init__(self) -> None:
        self._retargeted: set[MemberKey] = set()
        self._released: dict[str, set[tuple[str, int]]] = {}  # group id -> partitions

    def after_replay(
        self, group: ConsumerGroup, record: Record, before: ConsumerGroupMember | None
    ) -> None:
        """Note what ``record`` changed; ``before``: its member before it (None if new)."""
        key = record.key
        kind = type(key)
        if kind is ConsumerGroupTargetAssignmentMemberKey:
            member = (key.group_id, key.member_id)
            if record.value is None:
                self._retargeted.discard(member)
            else:
                self._retargeted.add(member)
        elif before is not None and (
            kind is ConsumerGroupCurrentMemberAssignmentKey
            or (kind is ConsumerGroupMemberMetadataKey and record.value is None)
        ):
            freed = _held(before) - _held(group.members.get(key.member_id))
            if freed:
                self._released.setdefault(key.group_id, set()).update(freed)

    def answered(self, group_id: str, member_id: str) -> None:
        """The member's reply was completed now: it carries the target as it stands."""
        self._retargeted.discard((group_id, member_id))

    def take(self, groups: Mapping[str, object]) -> list[MemberKey]:
        """The members to wake for the changes noted since the last call; forgets them."""
        retargeted, released = self._retargeted, self._released
        self._retargeted, self._released = set(), {}
        return members_to_wake(groups, retargeted, released)


def members_to_wake(
    groups: Mapping[str, object],
    retargeted: set[MemberKey],
    released: Mapping[str, set[tuple[str, int]]],
) -> list[MemberKey]:
    """Rule 1 and rule 2 of the module docstring over the groups as the turn left them,
    sorted; members gone since (left, fenced, group deleted) are never named."""
    wake: set[MemberKey] = set()
    for gid, mid in retargeted:
        group = groups.get(gid)
        if group is not None and group.group_type == CONSUMER and mid in group.members:
            wake.add((gid, mid))
    for gid, freed in released.items():
        group = groups.get(gid)
        if group is None or group.group_type != CONSUMER:
            continue
        owners = group.owners
        free = {tp for tp in freed if tp not in owners}
        if not free:
            continue
        for mid, member in group.members.items():
            if member.current.state != _UNRELEASED:
                continue
            target = group.target_of(mid)
            if any((t, p) in free for t, ps in target.items() for p in ps):
                wake.add((gid, mid))
    return sorted(wake)


def _held(member: ConsumerGroupMember | None) -> set[tuple[str, int]]:
    """What the member holds: assigned, or still to be revoked (nobody else may have it)."""
    if member is None:
        return set()
    current = member.current
    if not current.assigned_partitions and not current.partitions_pending_revocation:
        return set()
    return pm.pairs(current.assigned_partitions) | pm.pairs(current.partitions_pending_revocation)
