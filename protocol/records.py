"""The records a shard writes: the only way group state changes, and what replay rebuilds.

Each is a (key, value) pair, as in ``__consumer_offsets``: the key names the thing (a group, a
member's target assignment...) and the value is its latest state; a ``None`` value is a
tombstone. The key classes carry Kafka's record-type numbers (``TYPE``), which the codec writes
first. Partition sets are stored as ``{topic_id: (p0, p1, ...)}`` with sorted partitions, so
equal state always encodes to equal bytes.

Here are ``Record``, the records no group type owns (offset commits, the rebalance history:
both outlive a group's conversion from one protocol to another) and the entries several
types' records share. Each group type's own records live in its package (``<type>/records``)
and reach the codec through its row of the group-type table (``protocol.group_types``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

PartitionMap = dict[str, tuple[int, ...]]


@dataclass(frozen=True)
class Record:
    key: object
    value: object | None

    @property
    def is_tombstone(self) -> bool:
        return self.value is None


# ------------------------------------------------------------------ entries several types share


@dataclass(frozen=True)
class TopicMetadataEntry:
    topic_id: str
    topic_name: str
    num_partitions: int
    racks_digest: int = 0

@dataclass(frozen=True)
class ClientAssignorEntry:
    name: str
    minimum_version: int
    maximum_version: int
    reason: int
    metadata_version: int
    metadata_bytes: bytes

@dataclass(frozen=True)
class ClassicProtocol:
    name: str
    metadata: bytes = b""

@dataclass(frozen=True)
class ClassicMemberMetadata:
    """Set on a consumer-group member that speaks the classic protocol (online migration)."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...] = ()


# ------------------------------------------------------------------ offsets


@dataclass(frozen=True)
class OffsetCommitKey:
    TYPE: ClassVar[int] = 1
    group_id: str
    topic: str
    partition: int

@dataclass(frozen=True)
class OffsetCommitValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = 0
    expire_timestamp: int = -1  # -1: expires by the group's retention rule


# ------------------------------------------------------------------ rebalance history


@dataclass(frozen=True)
class RebalanceCauseEntry:
    time_ms: int
    generation_id: int
    reason: str
    member_id: str | None = None
    group_instance_id: str | None = None

@dataclass(frozen=True)
class GroupRebalanceHistoryKey:
    """Cohort's own record (not Kafka's): why a group's recent rebalances happened."""

    TYPE: ClassVar[int] = 100
    group_id: str

@dataclass(frozen=True)
class GroupRebalanceHistoryValue:
    causes: tuple[RebalanceCauseEntry, ...] = ()


# key class -> value class of the records no group type owns (the group types' own come from
# their rows: ``protocol.group_types.RECORD_SCHEMAS`` is the codec's whole registry).
SHARD_SCHEMAS: dict[type, type] = {
    OffsetCommitKey: OffsetCommitValue,
    GroupRebalanceHistoryKey: GroupRebalanceHistoryValue,
}
