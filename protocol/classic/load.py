"""A classic group as a new coordinator finds it: loading its record, and catching up.

Seed 003's failover rules: only the generation and its membership are persisted, so a loaded
group redoes what was in flight. Every member's session restarts at load time, a sync phase
gets a fresh deadline, and subscribed topics that changed while nobody watched rebalance the
group (failure point 1) — as they do live, when the controller pushes new metadata.
"""

from __future__ import annotations

from protocol.classic import group as cg
from protocol.classic.consumer_protocol import PROTOCOL_TYPE
from protocol.classic.group import ClassicGroup
from protocol.classic.rebalance import Rebalances
from protocol.classic.records import GroupMetadataKey, GroupMetadataValue
from protocol.classic.timers import JoinDeadline, MemberSession, SyncDeadline
from protocol.context import ShardContext
from protocol.records import Record


class LoadRules:
    """Applies ``GroupMetadata`` records (live and on load) and metadata changes."""

    def __init__(self, ctx: ShardContext, rebalances: Rebalances) -> None:
        self.ctx = ctx
        self.rebalances = rebalances

    def replay(self, record: Record) -> None:
        key, value = record.key, record.value
        assert isinstance(key, GroupMetadataKey), key
        group = self.ctx.group_of(key.group_id, "classic")
        if value is None:
            if group is not None:
                del self.ctx.groups[key.group_id]
                for member_id in group.members:
                    self.ctx.timers.cancel(MemberSession(key.group_id, member_id))
                self.ctx.timers.cancel(JoinDeadline(key.group_id))
                self.ctx.timers.cancel(SyncDeadline(key.group_id))
            return
        assert isinstance(value, GroupMetadataValue)
        if group is None:
            # A group known only from its records: a new coordinator took it over (seed 003).
            group = ClassicGroup(key.group_id, loaded=True)
            self.ctx.groups[key.group_id] = group
        group.replay(value)
        if group.state == cg.PREPARING_REBALANCE:
            group.state = cg.STABLE  # never persisted so; defensive for foreign logs
        # Loading: every member's session starts now, and a sync phase gets its deadline.
        # (Live, these timers exist already, except for members still awaiting their reply.)
        for member in group.members.values():
            if member.awaiting_join is None and (
                MemberSession(group.group_id, member.member_id) not in self.ctx.timers
            ):
                self.rebalances.reset_session(group, member)
        if group.state == cg.COMPLETING_REBALANCE and SyncDeadline(group.group_id) not in (
            self.ctx.timers
        ):
            self.ctx.timers.schedule(
                SyncDeadline(group.group_id), self.ctx.now_ms + group.rebalance_timeout_ms()
            )

    def on_metadata(self, groups: list[ClassicGroup]) -> None:
        """Seed 003, failure point 1: partitions or topics of the subscription changed since
        the generation began (also when nobody noticed before a failover): rebalance."""
        for group in groups:
            if (
                group.state in (cg.STABLE, cg.COMPLETING_REBALANCE)
                and group.protocol_type == PROTOCOL_TYPE
                and self.rebalances.subscribed_topics(group) != group.topics
            ):
                self.rebalances.prepare(group, "topic metadata changed (coordinator)")

    def start_after_downgrade(self, group: ClassicGroup) -> None:
        """A group just converted back from the new protocol: its members rejoin as a classic
        group (Kafka prepares a rebalance at once)."""
        for member in group.members.values():
            self.rebalances.reset_session(group, member)
        self.rebalances.prepare(group, "downgrade to the classic protocol")
