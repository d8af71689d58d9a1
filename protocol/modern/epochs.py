"""Step 2 of a turn: bump the epoch of every group that changed, once, and recompute its
target assignment, once (seed 000: "Group Epoch - Trigger a rebalance"; seed 004's list).

Changes are *marked* while a turn's requests are admitted and *settled* at the turn's end, so
a thousand joins in one turn cost one epoch bump and one assignor run, not a thousand. The
first cause of a bump is what the rebalance history keeps. A group type says what its bump
writes (the consumer's subscribed topics, Connect's connectors), whether its coordinator-side
assignor is in charge, and how that assignor computes a target.

A target is installed as a unit (``target_records``), whoever computed it (the coordinator's
assignor here, or a member through InstallAssignment): a reader of the log sees the members'
targets, then the target epoch record that makes them current. Kafka's
``TargetAssignmentBuilder`` ends the same way.

A group type may hold a bumped group's computation back (``may_compute``): KIP-1263's
assignment interval computes a consumer group's target at most once per interval, and a bump
within it leaves the target as it is until a later turn (Kafka 4.4: a later heartbeat) finds
the interval over (``interval_over``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, ClassVar

from protocol.records import Record

if TYPE_CHECKING:
    from protocol.context import ShardContext

log = logging.getLogger(__name__)

# member id -> its target record value; members in sorted order, as every builder makes them.
Targets = dict[str, Any]


def interval_over(last_ms: int, interval_ms: int, now_ms: int) -> bool:
    """Whether a target may be computed now (Kafka 4.4's ``canComputeNextTargetAssignment``):
    none computed yet (timestamp 0), no interval, or the interval since the last one is over."""
    return last_ms == 0 or interval_ms == 0 or now_ms >= last_ms + interval_ms


def target_records(group: Any, targets: Targets, epoch: int,
                   timestamp: int | None = None) -> list[Record]:
    """The records that install ``targets`` at ``epoch`` in ``group`` (a ``ModernGroup``):
    a member's target only when it changed (an identical value is a quick skip). ``timestamp``:
    when the coordinator's assignor computed them, for a type whose target epoch record keeps
    it (KIP-1263); None for the others."""
    gid, kinds, current = group.group_id, group.RECORDS, group.target
    member_key = kinds.target
    records = []
    for mid, value in targets.items():
        old = current.get(mid)
        if old is not value and old != value:
            records.append(Record(member_key(gid, mid), value))
    value = kinds.target_epoch_value(epoch) if timestamp is None else \
        kinds.target_epoch_value(epoch, timestamp)
    records.append(Record(kinds.target_epoch(gid), value))
    return records


class EpochTurn:
    """The groups a turn changed, and what settling them writes."""

    group_type: ClassVar[str]
    # The epoch a new group is created at, before its first bump. Seed 002 starts a consumer
    # group at 0 (its first member gets 1); Kafka 4.3 (KAFKA-20268) starts every group at 1,
    # and a type the seeds do not cover follows Kafka.
    first_epoch: ClassVar[int] = 0

    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx
        self._causes: dict[str, tuple[str, Any]] = {}  # groups to bump: first cause, member
        # Groups the turn changed; empty when the turn has nothing to settle (the shard then
        # skips this type's end of turn).
        self.touched: set[str] = set()
        self._due: set[str] = set()  # those whose target may need computing

    def mark(self, group_id: str, reason: str | None, member: Any = None,
             compute: bool = True) -> None:
        """Note a change of ``group_id``; ``reason`` None: no bump, but a target not computed
        yet is retried.

        ``compute`` False bumps the epoch and leaves the target as it is, until a mark that
        computes (later in this turn or in another). Only streams groups ask for it: Kafka
        4.4 computes a streams group's target in a heartbeat (or the initial delay's timer),
        so a member's leave or fence bumps the epoch and the next heartbeat of any member
        computes the target; a member back before that finds its tasks still free."""
        self.touched.add(group_id)
        if compute:
            self._due.add(group_id)
        if reason is not None:
            self._causes.setdefault(group_id, (reason, member))

    def finish(self) -> None:
        causes, due = self._causes, self._due
        self._causes, self.touched, self._due = {}, set(), set()
        ctx = self.ctx
        for group_id in sorted(causes):
            group = self._group(group_id)
            if group is None:
                continue
            reason, member = causes[group_id]
            ctx.history.remember(
                group_id,
                group.group_epoch,
                reason,
                ctx.now_ms,
                member.member_id if member is not None else None,
                member.instance_id if member is not None else None,
            )
            epoch = max(group.group_epoch, self.first_epoch) + 1
            for record in self.records_before_bump(group, epoch):
                ctx.emit(record)
            ctx.emit(Record(group.RECORDS.group(group_id), self.group_value(group, epoch)))
        for group_id in sorted(due):
            group = self._group(group_id)
            if (
                group is not None
                and group.group_epoch > group.assignment_epoch
                and not self.client_side(group)
                and self.may_compute(group)
            ):
                self.compute(group)

    settle = finish

    def compute(self, group: Any) -> None:
        """Run the coordinator's assignor and install its target at the group epoch."""
        try:
            targets = self.compute_targets(group)
        except Exception:
            # Kafka fails the heartbeat; here the turn is shared, so the group keeps its old
            # target and stays "assigning" until a later turn computes one.
            log.exception("the assignor of %s group %s failed", self.group_type, group.group_id)
            return
        for record in target_records(group, targets, group.group_epoch,
                                     self.assignment_timestamp(group)):
            self.ctx.emit(record)

    def _group(self, group_id: str) -> Any:
        group = self.ctx.groups.get(group_id)
        return group if group is not None and group.group_type == self.group_type else None

    # --- the group type's hooks --------------------------------------------------------------

    def records_before_bump(self, group: Any, epoch: int) -> list[Record]:
        """Records a bump to ``epoch`` writes before the group's own (none by default)."""
        return []

    def group_value(self, group: Any, epoch: int) -> Any:
        """The group's own record at ``epoch``."""
        raise NotImplementedError

    def interval_ms(self, group_id: str) -> int | None:
        """The group's KIP-1263 assignment interval (None: the type has none, and its target
        epoch record keeps no time)."""
        return None

    def may_compute(self, group: Any) -> bool:
        """Whether the coordinator's assignor may compute ``group``'s target in this turn:
        always with no interval or when the group has no members left, else once the
        interval since the last computation is over."""
        interval = self.interval_ms(group.group_id)
        return interval is None or not group.members or interval_over(
            group.assignment_timestamp, interval, self.ctx.now_ms)

    def assignment_timestamp(self, group: Any) -> int | None:
        """What the target epoch record keeps as the computation's time: now; 0 for a group
        left empty (Kafka's fence of the last member writes 0, so the next join is assigned
        at once); None for a type with no interval."""
        if self.interval_ms(group.group_id) is None:
            return None
        return self.ctx.now_ms if group.members else 0

    def computes_at_fence(self, group: Any) -> bool:
        """Whether a member's removal computes the target in its own turn: with no interval
        (Cohort's rule, seed 002), or when the group is left empty. With one, Kafka 4.4's
        fence leaves it to the group's next heartbeat."""
        return not group.members or not self.interval_ms(group.group_id)

    def client_side(self, group: Any) -> bool:
        """Whether a member computes the group's target (client-side assignment)."""
        raise NotImplementedError

    def compute_targets(self, group: Any) -> Targets:
        """The coordinator-side assignor's target for ``group`` (it may raise)."""
        raise NotImplementedError
