"""What a group type's rules need from the shard that hosts them, and from each other.

The rules modules depend on this interface, not on ``GroupCoordinatorShard`` itself, so each
group type can be read (and tested) on its own. Where one group type's rules call another's
(online migration joins a classic member to a consumer group, a consumer group converts back
to classic), they do so through the narrow ports declared here, never by importing each other.
"""

from __future__ import annotations

from typing import Protocol

from protocol import messages as m
from protocol.classic.group import ClassicGroup
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.connect.group import ConnectGroup
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import ConsumerGroupMember
from protocol.errors import Errors
from protocol.history import RebalanceHistory
from protocol.metadata import MetadataImage
from protocol.records import Record
from protocol.timers import Timers


class ConsumerMembersPort(Protocol):
    """What the migration rules ask of the KIP-848 rules to host classic members."""

    def add_member(
        self, group: ConsumerGroup, member_id: str, fields: dict
    ) -> ConsumerGroupMember: ...
    def replace_member(
        self, group: ConsumerGroup, old: ConsumerGroupMember, new_id: str, fields: dict
    ) -> ConsumerGroupMember: ...
    def update_member(
        self, group: ConsumerGroup, member: ConsumerGroupMember, fields: dict
    ) -> ConsumerGroupMember: ...
    def finish_turn(self) -> None: ...
    def touch_session(self, group_id: str, member_id: str) -> None: ...
    def fence(self, group: ConsumerGroup, member_id: str, reason: str = ...) -> None: ...


class ClassicJoinPort(Protocol):
    """What the migration rules ask of the classic rules once a group is classic again."""

    def join(self, req: m.JoinGroupRequest) -> m.JoinGroupResponse | None: ...
    def leave(self, req: m.LeaveGroupRequest) -> m.LeaveGroupResponse: ...
    def start_after_downgrade(self, group: ClassicGroup) -> None: ...


class ClassicHostPort(Protocol):
    """Classic requests addressed to a group of another type (its classic members during an
    online migration): what a group type's row names as its ``classic_host``."""

    def join(self, group, req: m.JoinGroupRequest) -> m.JoinGroupResponse | None: ...
    def sync(self, group, req: m.SyncGroupRequest) -> m.SyncGroupResponse | None: ...
    def heartbeat(self, group, req: m.HeartbeatRequest) -> m.HeartbeatResponse: ...
    def leave(self, group, req: m.LeaveGroupRequest) -> m.LeaveGroupResponse: ...


class ClassicMembersPort(Protocol):
    """Classic requests addressed to a consumer group (its members mid-migration)."""

    def join(self, group: ConsumerGroup, req: m.JoinGroupRequest) -> m.JoinGroupResponse: ...
    def sync(self, group: ConsumerGroup, req: m.SyncGroupRequest) -> m.SyncGroupResponse: ...
    def heartbeat(self, group: ConsumerGroup, req: m.HeartbeatRequest) -> m.HeartbeatResponse: ...
    def leave(self, group: ConsumerGroup, req: m.LeaveGroupRequest) -> m.LeaveGroupResponse: ...
    def describe(self, group: ConsumerGroup, history: list) -> m.DescribeGroupsResponseGroup: ...
    def forget(self, group_id: str, member_id: str) -> None: ...


class MigrationPort(Protocol):
    """Conversions between the protocols, triggered by the other rules."""

    def before_consumer_heartbeat(self, req: m.ConsumerGroupHeartbeatRequest) -> None: ...
    def maybe_downgrade(self, group: ConsumerGroup) -> bool: ...
    def drop_if_empty(self, group: ConsumerGroup) -> bool: ...


class ConnectPort(Protocol):
    """What other group types' requests ask of the Connect rules (DescribeGroups), and what
    the migration rules ask of them to host classic Connect workers."""

    def describe_classic(
        self, group: ConnectGroup, history: list
    ) -> m.DescribeGroupsResponseGroup: ...
    def mark(self, group_id: str, reason: str | None, member: object = ...) -> None: ...
    def finish_turn(self) -> None: ...
    def reset_session(self, group_id: str, member_id: str) -> None: ...
    def fence(self, group: ConnectGroup, member_id: str, reason: str = ...) -> None: ...


class ConnectClassicWorkersPort(Protocol):
    """Classic requests addressed to a Connect group (its classic workers mid-migration)."""

    def join(self, group: ConnectGroup, req: m.JoinGroupRequest) -> m.JoinGroupResponse | None: ...
    def sync(self, group: ConnectGroup, req: m.SyncGroupRequest) -> m.SyncGroupResponse: ...
    def heartbeat(self, group: ConnectGroup, req: m.HeartbeatRequest) -> m.HeartbeatResponse: ...
    def leave(self, group: ConnectGroup, req: m.LeaveGroupRequest) -> m.LeaveGroupResponse: ...
    def forget(self, group_id: str, member_id: str) -> None: ...


class ConnectMigrationPort(Protocol):
    """Conversions between classic Connect groups and the connect group type."""

    def before_connect_join(self, group: ClassicGroup) -> None: ...
    def maybe_downgrade(self, group: ConnectGroup) -> bool: ...


class ShardContext(Protocol):
    config: CoordinatorConfig
    image: MetadataImage
    now_ms: int
    timers: Timers
    groups: dict[str, ConsumerGroup | ClassicGroup | ConnectGroup]
    history: RebalanceHistory  # why each group rebalanced; outlives group objects
    consumer: ConsumerMembersPort
    classic: ClassicJoinPort
    classic_members: ClassicMembersPort
    migration: MigrationPort
    connect: ConnectPort
    connect_classic_members: ConnectClassicWorkersPort
    connect_migration: ConnectMigrationPort

    def emit(self, record: Record) -> None:
        """Apply the record to memory at once and queue it for the log."""

    def group_config(self, group_id: str) -> GroupConfig: ...
    def new_member_id(self) -> str: ...
    def group_of(self, group_id: str, group_type: str):
        """The group ``group_id`` if it is of ``group_type`` (a row name), else None."""

    def classic_host(self, group) -> ClassicHostPort | None:
        """Who answers a classic request to ``group``: None when it is a classic group
        itself; GROUP_ID_NOT_FOUND when its type takes no classic requests."""

    def describe_classic(self, group, history: list) -> m.DescribeGroupsResponseGroup:
        """``group`` as DescribeGroups shows it, in its type's shape."""

    def offset_only_groups(self) -> set[str]:
        """Groups known only by their committed offsets (Kafka's simple groups: an EMPTY
        classic group with no protocol type, as Kafka's describe and list show them)."""

    def error_reply(self, request: object, error: Errors, message: str | None) -> object:
        """The reply ``request`` expects, carrying ``error`` (for ended waits)."""

    def complete(self, request: object, response: object) -> None:
        """Answer a request an earlier event left waiting (delayed JoinGroup/SyncGroup)."""
