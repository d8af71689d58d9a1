"""Moving a streams member toward its target: Kafka 4.4's streams ``CurrentAssignmentBuilder``.

A member gives up what its target no longer holds, in every role, before it takes anything
(UNREVOKED_TASKS: it stays at its epoch until a heartbeat reports it owns none of them); then it
moves to the target epoch with every target task it may take. What it may take is decided per
*process* (a Kafka Streams instance, whose members share one state directory), as Kafka 4.4
decides it:

* an active task once no member anywhere holds it active (assigned or pending revocation), and
  no other member of its process holds it as a standby or warm-up;
* a standby once no other member of its process runs it active, no member of its process holds
  it as a standby, and no other member of its process holds it as a warm-up;
* a warm-up once no member of its process runs it active, no other member of its process holds
  it as a standby, and no member of its process holds it as a warm-up.

What it may not take yet keeps it UNRELEASED_TASKS, asking again on each heartbeat.

Role changes of the member's own tasks happen in place, so the client recycles the task's state
store instead of closing it and restoring it from the changelog (Kafka 4.4, cf. KAFKA-9501):

* an active task demoted to a standby: the standby is granted at once, while the active task
  stays pending revocation (its next owner waits for the release);
* a standby turned into a warm-up or back: one step, no revocation to acknowledge;
* a standby or warm-up promoted to active: never revoked; the member keeps it until the active
  task is granted (its previous owner released it and the member has nothing left to revoke),
  and then holds the active task instead, in the same step.

So no task is ever active on two members, and no process runs one task twice (invariant 8).
A revocation a heartbeat already shows done (its owned tasks lack them) is not waited for.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.streams.group import StreamsGroup
from protocol.streams.member import StreamsGroupMember, Tasks
from protocol.streams.member import StreamsMemberState as S
from protocol.streams.records import StreamsGroupTargetAssignmentMemberValue

Task = tuple[str, int]


def target_tasks(value: StreamsGroupTargetAssignmentMemberValue) -> Tasks:
    return Tasks.of(value.active_tasks, value.standby_tasks, value.warmup_tasks)


@dataclass
class ProcessIndex:
    """Which processes hold each task, by role, over every member's assigned tasks and those
    pending revocation: Kafka's ``currentActiveTaskProcessId`` and
    ``currentStandbyTaskProcessIds`` / ``currentWarmupTaskProcessIds``."""

    active: dict[Task, str] = field(default_factory=dict)
    standby: dict[Task, set[str]] = field(default_factory=dict)
    warmup: dict[Task, set[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, group: StreamsGroup) -> ProcessIndex:
        index = cls()
        for mm in group.members.values():
            pid = mm.process_id
            held, pending = mm.tasks, mm.pending
            for t in held.active | pending.active:
                index.active[t] = pid
            for t in held.standby | pending.standby:
                index.standby.setdefault(t, set()).add(pid)
            for t in held.warmup | pending.warmup:
                index.warmup.setdefault(t, set()).add(pid)
        return index

    def standby_pids(self, task: Task) -> set[str]:
        return self.standby.get(task, set())

    def warmup_pids(self, task: Task) -> set[str]:
        return self.warmup.get(task, set())


def reconcile(group: StreamsGroup, member: StreamsGroupMember, target_epoch: int,
              target: Tasks, owned: Tasks | None) -> StreamsGroupMember:
    """The member after one heartbeat (``owned``: the tasks it reported, None if unchanged)."""
    state = member.current.state
    if state == S.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return _next(group, member, member.member_epoch, target_epoch, target, owned)
    if state == S.UNREVOKED_TASKS:
        if _not_released(owned, member.pending):
            return member
        return _next(group, member, min(member.member_epoch + 1, target_epoch), target_epoch,
                     target, owned)
    return _next(group, member, member.member_epoch, target_epoch, target, owned)


def _not_released(owned: Tasks | None, pending: Tasks) -> bool:
    """Kafka's ``hasNotReleased``: without a report of what it owns, a member holds them all."""
    return owned is None or owned.contains_any(pending)


def _next(group: StreamsGroup, member: StreamsGroupMember, epoch: int, target_epoch: int,
          target: Tasks, owned: Tasks | None) -> StreamsGroupMember:
    """Kafka's ``computeNextAssignment``: ``epoch`` is the member's epoch should it have tasks
    to give up first."""
    held, pid = member.tasks, member.process_id
    index = ProcessIndex.of(group)

    def other_member_here(pids: set[str], mine: frozenset, task: Task) -> bool:
        return pid in pids and task not in mine

    def active_unreleased(t: Task) -> bool:
        return (index.active.get(t) is not None
                or other_member_here(index.standby_pids(t), held.standby, t)
                or other_member_here(index.warmup_pids(t), held.warmup, t))

    def standby_unreleased(t: Task) -> bool:
        return ((index.active.get(t) == pid and t not in held.active)
                or pid in index.standby_pids(t)
                or other_member_here(index.warmup_pids(t), held.warmup, t))

    def warmup_unreleased(t: Task) -> bool:
        return (index.active.get(t) == pid
                or other_member_here(index.standby_pids(t), held.standby, t)
                or pid in index.warmup_pids(t))

    kept, revoke, granted = {}, {}, {}
    unreleased = False
    for role, blocked in (("active", active_unreleased), ("standby", standby_unreleased),
                          ("warmup", warmup_unreleased)):
        now, wanted = getattr(held, role), getattr(target, role)
        kept[role] = set(now & wanted)
        revoke[role] = set(now - wanted)
        new = wanted - now
        free = {t for t in new if not blocked(t)}
        unreleased = unreleased or free != new
        granted[role] = free

    # Role changes that depend on no other member take effect at once.
    for t in held.active & granted["standby"]:  # an active task demoted to a standby
        granted["standby"].discard(t)
        kept["standby"].add(t)
    for src, dst in (("standby", "warmup"), ("warmup", "standby")):
        for t in getattr(held, src) & granted[dst]:
            granted[dst].discard(t)
            kept[dst].add(t)
            revoke[src].discard(t)

    # A promotion to active is never revoked; the member keeps the standby or warm-up until the
    # active task is granted, in this step or a later one.
    promoted = {role: getattr(held, role) & target.active for role in ("standby", "warmup")}
    for role, tasks in promoted.items():
        revoke[role] -= tasks
    pending = Tasks(frozenset(revoke["active"]), frozenset(revoke["standby"]),
                    frozenset(revoke["warmup"]))
    must_revoke = bool(pending) and _not_released(owned, pending)
    for role, tasks in promoted.items():
        for t in tasks:
            if must_revoke or t not in granted["active"]:
                kept[role].add(t)

    keep = Tasks(frozenset(kept["active"]), frozenset(kept["standby"]), frozenset(kept["warmup"]))
    new = Tasks(frozenset(granted["active"]), frozenset(granted["standby"]),
                frozenset(granted["warmup"]))
    # Kafka's ``updateMemberEpoch``: the previous epoch is the one the member had.
    previous = member.member_epoch
    if must_revoke:
        return member.moved_tasks(S.UNREVOKED_TASKS, keep, pending, epoch, previous)
    state = S.UNRELEASED_TASKS if unreleased else S.STABLE
    return member.moved_tasks(state, keep | new, Tasks(), target_epoch, previous)
