"""A modern member's two deadlines, kept in step with its records.

The session timeout fences a member that stops heartbeating; the rebalance timeout fences a
member asked to give units up that does not acknowledge in time. Both are derived from the
records (``after_replay``), so a reloaded partition restarts every session from load time. A
group type names its timer keys, its session timeout and how it words a fence; a member
hosted through online migration keeps its classic JoinGroup's session timeout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from protocol.modern.group import ModernGroup
from protocol.modern.member import UNREVOKED, ModernMember
from protocol.records import Record

if TYPE_CHECKING:  # the shard's interface, which names the group types above this kernel
    from protocol.context import ShardContext

Fence = Callable[[Any, str, str], None]


class MemberDeadlines:
    """Schedules, restarts and fires the members' session and revocation deadlines."""

    group_type: ClassVar[str]
    SESSION: ClassVar[type]  # timer key (group_id, member_id): no heartbeat by then fences
    REVOCATION: ClassVar[type]  # timer key (group_id, member_id): no revocation by then fences
    SESSION_EXPIRED: ClassVar[str]  # the fence's reason, as the rebalance history keeps it
    REVOCATION_MISSED: ClassVar[str]

    def __init__(self, ctx: ShardContext, fence: Fence) -> None:
        self.ctx = ctx
        self._fence = fence

    def group(self, group_id: str) -> Any:
        """The group ``group_id`` if it is of this type, else None."""
        group = self.ctx.groups.get(group_id)
        return group if group is not None and group.group_type == self.group_type else None

    def session_timeout_ms(self, group_id: str) -> int:
        raise NotImplementedError

    def reset_session(self, group_id: str, member_id: str) -> None:
        """From now; a classic member (online migration) keeps its JoinGroup's timeout."""
        timeout = self.session_timeout_ms(group_id)
        group = self.group(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is not None and member.metadata.classic_member_metadata is not None:
            timeout = member.metadata.classic_member_metadata.session_timeout_ms
        self.ctx.timers.schedule(self.SESSION(group_id, member_id), self.ctx.now_ms + timeout)

    def on_timer(self, key: Any) -> None:
        group = self.group(key.group_id)
        member = group.members.get(key.member_id) if group is not None else None
        if member is None:
            return
        if isinstance(key, self.SESSION):
            self._fence(group, key.member_id, self.SESSION_EXPIRED)
        elif member.current.state == UNREVOKED:
            self._fence(group, key.member_id, self.REVOCATION_MISSED)

    def after_replay(
        self, group: ModernGroup, record: Record, before: ModernMember | None
    ) -> None:
        """Keep the member timers in step with the records, for live events and loading alike.

        A member seen for the first time gets a session timer from now (so after a restart
        every session restarts from load time); entering UNREVOKED, or being asked to give up
        something new, starts the rebalance timer; leaving that state stops it.
        """
        key = record.key
        member_id = getattr(key, "member_id", None)
        if member_id is None:
            return
        gid, timers = group.group_id, self.ctx.timers
        after = group.members.get(member_id)
        session = self.SESSION(gid, member_id)
        deadline = self.REVOCATION(gid, member_id)
        if after is None:
            timers.cancel(session)
            timers.cancel(deadline)
            return
        if before is None and session not in timers:
            self.reset_session(gid, member_id)
        if type(key) is not group.RECORDS.current:
            return
        if after.current.state != UNREVOKED:
            timers.cancel(deadline)
        elif (
            before is None
            or before.current.state != UNREVOKED
            or before.member_epoch != after.member_epoch
            or before.pending_units != after.pending_units
            or deadline not in timers
        ):
            timeout = max(after.rebalance_timeout_ms, 0)
            timers.schedule(deadline, self.ctx.now_ms + timeout)
