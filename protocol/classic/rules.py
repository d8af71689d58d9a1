"""The rules of classic groups: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups.

This is the classic half of Kafka's ``GroupMetadataManager``, with seed 003's failover rules
and KIP-800's join reasons, split by concept: ``join`` (JoinGroup), ``sync`` (SyncGroup),
``membership`` (Heartbeat, LeaveGroup, DescribeGroups), ``rebalance`` (the two phases and the
timers every request shares), ``load`` (records and metadata: what a new coordinator redoes).
``ClassicGroupRules`` is the one object the shard talks to.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic.group import ClassicGroup
from protocol.classic.join import JoinRules
from protocol.classic.load import LoadRules
from protocol.classic.membership import MembershipRules
from protocol.classic.rebalance import Rebalances
from protocol.classic.sync import SyncRules
from protocol.classic.timers import ClassicTimer
from protocol.context import ShardContext
from protocol.records import Record


class ClassicGroupRules:
    """Every classic request, timer, record and metadata change, for the shard to call."""

    def __init__(self, ctx: ShardContext) -> None:
        self.rebalances = Rebalances(ctx)
        self._join = JoinRules(ctx, self.rebalances)
        self._sync = SyncRules(ctx, self.rebalances)
        self._membership = MembershipRules(ctx, self.rebalances)
        self._load = LoadRules(ctx, self.rebalances)

    def join(self, req: m.JoinGroupRequest) -> m.JoinGroupResponse | None:
        return self._join.join(req)

    def sync(self, req: m.SyncGroupRequest) -> m.SyncGroupResponse | None:
        return self._sync.sync(req)

    def heartbeat(self, req: m.HeartbeatRequest) -> m.HeartbeatResponse:
        return self._membership.heartbeat(req)

    def leave(self, req: m.LeaveGroupRequest) -> m.LeaveGroupResponse:
        return self._membership.leave(req)

    def describe(self, req: m.DescribeGroupsRequest) -> m.DescribeGroupsResponse:
        return self._membership.describe(req)

    def on_timer(self, key: ClassicTimer) -> None:
        self.rebalances.on_timer(key)

    def on_metadata(self, groups: list[ClassicGroup]) -> None:
        self._load.on_metadata(groups)

    def replay(self, record: Record) -> None:
        self._load.replay(record)

    def start_after_downgrade(self, group: ClassicGroup) -> None:
        self._load.start_after_downgrade(group)
