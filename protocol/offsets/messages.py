"""Offset requests and responses: OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups.
``protocol.messages`` re-exports them."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.errors import Errors
from protocol.types import Int16, Int32, Int64

# ------------------------------------------------------------------------------ offsets

# OffsetCommit v9 carries KIP-848 member epochs; Kafka refuses older versions from members of
# the new protocol and answers a missing group differently below it.
OFFSET_COMMIT_MEMBER_EPOCH_VERSION = 9


@dataclass
class OffsetCommitRequestPartition:
    partition_index: Int32
    committed_offset: Int64
    committed_leader_epoch: Int32 = -1
    committed_metadata: str | None = None


@dataclass
class OffsetCommitRequestTopic:
    name: str
    partitions: list[OffsetCommitRequestPartition] = field(default_factory=list)


@dataclass
class OffsetCommitRequest:
    group_id: str
    # The member epoch (new protocol) or the generation (classic); -1 for a simple consumer.
    generation_id_or_member_epoch: Int32 = -1
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: Int64 = -1
    topics: list[OffsetCommitRequestTopic] = field(default_factory=list)
    # The OffsetCommit version the client spoke: Kafka answers by it (a KIP-848 member needs
    # v9, and a missing group is ILLEGAL_GENERATION before v9). Cohort's own callers speak v9.
    api_version: Int16 = OFFSET_COMMIT_MEMBER_EPOCH_VERSION


@dataclass
class OffsetCommitResponsePartition:
    partition_index: Int32
    error_code: Int16 = Errors.NONE


@dataclass
class OffsetCommitResponseTopic:
    name: str
    partitions: list[OffsetCommitResponsePartition] = field(default_factory=list)


@dataclass
class OffsetCommitResponse:
    throttle_time_ms: Int32 = 0
    # Cohort's addition: a request-level error (coordinator moved, bad request) in one place.
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    topics: list[OffsetCommitResponseTopic] = field(default_factory=list)


@dataclass
class OffsetFetchRequestTopic:
    name: str
    partition_indexes: list[Int32] = field(default_factory=list)


@dataclass
class OffsetFetchRequest:
    group_id: str
    # Set by a new-protocol member (Kafka's OffsetFetch v9); None for anyone else.
    member_id: str | None = None
    member_epoch: Int32 = -1
    topics: list[OffsetFetchRequestTopic] | None = None  # None: every committed offset
    require_stable: bool = False


@dataclass
class OffsetFetchResponsePartition:
    partition_index: Int32
    committed_offset: Int64 = -1
    committed_leader_epoch: Int32 = -1
    metadata: str | None = ""
    error_code: Int16 = Errors.NONE


@dataclass
class OffsetFetchResponseTopic:
    name: str
    partitions: list[OffsetFetchResponsePartition] = field(default_factory=list)


@dataclass
class OffsetFetchResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    topics: list[OffsetFetchResponseTopic] = field(default_factory=list)


@dataclass
class OffsetDeleteRequestPartition:
    partition_index: Int32


@dataclass
class OffsetDeleteRequestTopic:
    name: str
    partitions: list[OffsetDeleteRequestPartition] = field(default_factory=list)


@dataclass
class OffsetDeleteRequest:
    group_id: str
    topics: list[OffsetDeleteRequestTopic] = field(default_factory=list)


@dataclass
class OffsetDeleteResponsePartition:
    partition_index: Int32
    error_code: Int16 = Errors.NONE


@dataclass
class OffsetDeleteResponseTopic:
    name: str
    partitions: list[OffsetDeleteResponsePartition] = field(default_factory=list)


@dataclass
class OffsetDeleteResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    topics: list[OffsetDeleteResponseTopic] = field(default_factory=list)


@dataclass
class DeleteGroupsRequest:
    groups_names: list[str]


@dataclass
class DeletableGroupResult:
    group_id: str
    error_code: Int16 = Errors.NONE
    error_message: str | None = None


@dataclass
class DeleteGroupsResponse:
    throttle_time_ms: Int32 = 0
    results: list[DeletableGroupResult] = field(default_factory=list)
