"""What a group type's rules need from the shard that hosts them.

The rules modules depend on this interface, not on ``GroupCoordinatorShard`` itself, so each
group type can be read (and tested) on its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from protocol.classic.group import ClassicGroup

if TYPE_CHECKING:
    from protocol.classic.rules import ClassicGroupRules
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.consumer.group import ConsumerGroup
from protocol.metadata import MetadataImage
from protocol.records import Record
from protocol.timers import Timers


class ShardContext(Protocol):
    config: CoordinatorConfig
    image: MetadataImage
    now_ms: int
    timers: Timers
    groups: dict[str, ConsumerGroup | ClassicGroup]
    classic: ClassicGroupRules  # its ``history`` outlives group objects

    def emit(self, record: Record) -> None:
        """Apply the record to memory at once and queue it for the log."""

    def group_config(self, group_id: str) -> GroupConfig: ...
    def new_member_id(self) -> str: ...
    def consumer_group(self, group_id: str) -> ConsumerGroup | None: ...
    def classic_group(self, group_id: str) -> ClassicGroup | None: ...
    def other_type_group_exists(self, group_id: str) -> bool: ...

    def complete(self, request: object, response: object) -> None:
        """Answer a request an earlier event left waiting (delayed JoinGroup/SyncGroup)."""
