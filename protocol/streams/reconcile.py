"""Moving a streams member toward its target: Kafka's streams ``CurrentAssignmentBuilder``.

A member first gives up what its target no longer holds, in every role (UNREVOKED_TASKS: it
stays at its epoch until a heartbeat reports it owns none of them); then it moves to the target
epoch with every target task it may take: an active task only once no other member holds it
(active or pending revocation), a standby or warm-up task only if it does not hold the same
task active. What it may not take yet keeps it UNRELEASED_TASKS, asking again on each
heartbeat. So no task is ever active on two members, and a standby never sits beside its own
active copy (invariant 8).
"""

from __future__ import annotations

from protocol.streams.group import StreamsGroup
from protocol.streams.member import StreamsGroupMember, Tasks
from protocol.streams.member import StreamsMemberState as S
from protocol.streams.records import StreamsGroupTargetAssignmentMemberValue


def target_tasks(value: StreamsGroupTargetAssignmentMemberValue) -> Tasks:
    return Tasks.of(value.active_tasks, value.standby_tasks, value.warmup_tasks)


def reconcile(group: StreamsGroup, member: StreamsGroupMember, target_epoch: int,
              target: Tasks, owned: Tasks | None) -> StreamsGroupMember:
    """The member after one heartbeat (``owned``: the tasks it reported, None if unchanged)."""
    state = member.current.state
    if state == S.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(group, member, member.member_epoch, target_epoch, target)
    if state == S.UNREVOKED_TASKS:
        if owned is None or owned.contains_any(member.pending):
            return member
        return _next(group, member, member.member_epoch,
                     min(member.member_epoch + 1, target_epoch), target)
    return _next(group, member, member.member_epoch, target_epoch, target)


def _next(group: StreamsGroup, member: StreamsGroupMember, epoch: int, target_epoch: int,
          target: Tasks) -> StreamsGroupMember:
    held = member.tasks
    revoke = held - target
    if revoke:
        return member.moved_tasks(S.UNREVOKED_TASKS, held - revoke, revoke, epoch,
                                  member.previous_member_epoch if epoch == member.member_epoch
                                  else member.member_epoch)
    mid = member.member_id
    active = frozenset(t for t in target.active if group.active_owner(t) in (None, mid))
    standby = target.standby - active
    warmup = target.warmup - active
    unreleased = active != target.active
    state = S.UNRELEASED_TASKS if unreleased else S.STABLE
    previous = member.member_epoch if target_epoch != member.member_epoch else \
        member.previous_member_epoch
    return member.moved_tasks(state, Tasks(active, standby, warmup), Tasks(), target_epoch,
                              previous)
