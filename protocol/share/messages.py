"""KIP-932's requests and responses (Kafka 4.2): share group membership, ShareFetch /
ShareAcknowledge, and the share-offset admin APIs.

Field names are the schemas' names in snake_case (``partition_index`` is ``partition``, as
``TopicPartitions`` has it); nullable fields default to ``None``, which in a heartbeat means
"unchanged since the last heartbeat". ``protocol.messages`` re-exports them.

Two things are Cohort's, not Kafka's wire:

* The pure ShareFetch reply says WHICH offsets were acquired (``AcquiredRecords``); the entry
  point (the gateway, a Ray share consumer) turns them into record batches: of the synthetic
  stream, or the upstream's own batches in front of an upstream. The log's bounds reach the
  shard in the request (``log_start_offset``, ``log_end_offset``): the shard is pure and
  knows neither the stream's anchor nor the upstream.
* Share sessions (share session epoch, forgotten topics) are kept by the entry point. When one
  closes (epoch -1), it sends ``close_session=True`` on ShareFetch / ShareAcknowledge: the
  acknowledgements apply, then every record the member still holds in the group is released.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.consumer.messages import DescribedAssignment, TopicPartitions
from protocol.errors import Errors
from protocol.types import Int8, Int16, Int32, Int64

# Acknowledge types (Kafka's AcknowledgeType): GAP marks offsets that are not records (a
# compacted or transaction-marker hole); ACCEPT consumes; RELEASE gives the record back for
# another delivery; REJECT archives it (never delivered again).
ACK_GAP, ACK_ACCEPT, ACK_RELEASE, ACK_REJECT = 0, 1, 2, 3
# KIP-1206's ShareAcquireMode ids (ShareFetch v2): whole log batches (``max_records`` a soft
# limit, Kafka's default), or exactly ``max_records``.
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1

# ------------------------------------------------------------------ ShareGroupHeartbeat


@dataclass
class ShareGroupHeartbeatRequest:
    group_id: str
    # Client-generated (a UUID): Kafka 4.x's share consumers choose it before joining.
    member_id: str = ""
    # 0 to join, -1 to leave, else the member's current epoch.
    member_epoch: Int32 = 0
    rack_id: str | None = None
    subscribed_topic_names: list[str] | None = None
    # Not in the schema but in every Kafka request header: who sent it.
    client_id: str = ""
    client_host: str = ""


@dataclass
class ShareGroupAssignment:
    """The ``Assignment`` struct of the heartbeat response."""

    topic_partitions: list[TopicPartitions] = field(default_factory=list)


@dataclass
class ShareGroupHeartbeatResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: Int32 = 0
    heartbeat_interval_ms: Int32 = 0
    assignment: ShareGroupAssignment | None = None


# ------------------------------------------------------------------- ShareGroupDescribe


@dataclass
class ShareGroupDescribeRequest:
    group_ids: list[str]
    include_authorized_operations: bool = False


@dataclass
class ShareDescribedMember:
    member_id: str
    rack_id: str | None
    member_epoch: Int32
    client_id: str
    client_host: str
    subscribed_topic_names: list[str]
    assignment: DescribedAssignment


@dataclass
class ShareDescribedGroup:
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    group_id: str = ""
    group_state: str = ""
    group_epoch: Int32 = -1
    assignment_epoch: Int32 = -1
    assignor_name: str = ""
    members: list[ShareDescribedMember] = field(default_factory=list)
    authorized_operations: Int32 = -(2**31)


@dataclass
class ShareGroupDescribeResponse:
    throttle_time_ms: Int32 = 0
    groups: list[ShareDescribedGroup] = field(default_factory=list)


# --------------------------------------------------------- ShareFetch / ShareAcknowledge


@dataclass
class AcknowledgementBatch:
    """Offsets ``first_offset..last_offset`` (both included) acknowledged with one type each:
    ``acknowledge_types`` holds one type for the whole range, or one per offset."""

    first_offset: Int64
    last_offset: Int64
    acknowledge_types: list[Int8]


@dataclass
class ShareFetchPartition:
    partition: Int32
    acknowledgements: list[AcknowledgementBatch] = field(default_factory=list)
    # False when the partition is named only to acknowledge (Kafka's PartitionMaxBytes 0).
    fetch: bool = True
    # The log's end for this partition when the request was made (the entry point reads it
    # from its ``SyntheticStream``, or the upstream's high watermark): records up to it may be
    # acquired, and a new share-partition with ``share.auto.offset.reset=latest`` starts there.
    log_end_offset: Int64 = 0
    # The log's first offset (the upstream's log start; 0 for the synthetic stream): where a
    # new share-partition with ``share.auto.offset.reset=earliest`` starts.
    log_start_offset: Int64 = 0
    # The log's batches here hold this many records each, from offset 0 (the synthetic
    # stream's arrivals); 0 when the entry point does not know them before reading (an
    # upstream's): new records are then acquired exactly to ``max_records``.
    batch_records: Int64 = 0


@dataclass
class ShareFetchTopic:
    topic_id: str
    partitions: list[ShareFetchPartition] = field(default_factory=list)


@dataclass
class ShareFetchRequest:
    group_id: str
    member_id: str
    topics: list[ShareFetchTopic] = field(default_factory=list)
    # This many records acquired by this request, over all its partitions: a soft limit, as
    # Kafka's default acquire mode (KIP-1206's batch_optimized) makes it: the last new records
    # acquired run to the end of the log batch that holds the limit's record.
    max_records: Int32 = 500
    # KIP-1206's ShareAcquireMode: ``BATCH_OPTIMIZED`` or ``RECORD_LIMIT`` (``max_records``
    # exact); any other id is refused.
    acquire_mode: Int8 = BATCH_OPTIMIZED
    # The entry point's share session ended (epoch -1): after the acknowledgements, release
    # every record this member still holds in the group; acquire nothing.
    close_session: bool = False
    # On close, release only what the member holds on these partitions (the closed session's,
    # when the member keeps one at each of several brokers); None: everywhere.
    released: list[TopicPartitions] | None = None


@dataclass
class AcquiredRecords:
    first_offset: Int64
    last_offset: Int64
    delivery_count: Int16


@dataclass
class ShareFetchResponsePartition:
    partition: Int32
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    acknowledge_error_code: Int16 = Errors.NONE
    acknowledge_error_message: str | None = None
    acquired: list[AcquiredRecords] = field(default_factory=list)


@dataclass
class ShareFetchResponseTopic:
    topic_id: str
    partitions: list[ShareFetchResponsePartition] = field(default_factory=list)


@dataclass
class ShareFetchResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    # The lock every record of this reply is acquired under (the group's
    # share.record.lock.duration.ms); ShareFetch v2's AcquisitionLockTimeoutMs.
    acquisition_lock_timeout_ms: Int32 = 0
    topics: list[ShareFetchResponseTopic] = field(default_factory=list)


@dataclass
class ShareAcknowledgePartition:
    partition: Int32
    acknowledgements: list[AcknowledgementBatch] = field(default_factory=list)


@dataclass
class ShareAcknowledgeTopic:
    topic_id: str
    partitions: list[ShareAcknowledgePartition] = field(default_factory=list)


@dataclass
class ShareAcknowledgeRequest:
    group_id: str
    member_id: str
    topics: list[ShareAcknowledgeTopic] = field(default_factory=list)
    # As ShareFetchRequest.close_session and released.
    close_session: bool = False
    released: list[TopicPartitions] | None = None


@dataclass
class ShareAcknowledgeResponsePartition:
    partition: Int32
    error_code: Int16 = Errors.NONE
    error_message: str | None = None


@dataclass
class ShareAcknowledgeResponseTopic:
    topic_id: str
    partitions: list[ShareAcknowledgeResponsePartition] = field(default_factory=list)


@dataclass
class ShareAcknowledgeResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    acquisition_lock_timeout_ms: Int32 = 0
    topics: list[ShareAcknowledgeResponseTopic] = field(default_factory=list)


# -------------------------------------------------------------- share-group offsets admin
# Kafka's wire requests name topics by name. DescribeShareGroupOffsets names many groups on the
# wire and one here (as OffsetFetch: the wire decodes it to one request per group).


@dataclass
class ShareOffsetsTopic:
    topic_name: str
    partitions: list[Int32] = field(default_factory=list)


@dataclass
class ShareOffsetsEnd:
    """One partition's log end, as the upstream's high watermark says (for the lag)."""

    topic_name: str
    partition: Int32
    log_end_offset: Int64


@dataclass
class DescribeShareGroupOffsetsRequest:
    group_id: str
    # None: every share-partition the group has state for.
    topics: list[ShareOffsetsTopic] | None = None
    # The stream's end (the same for every partition of the synthetic stream), for the lag;
    # -1: unknown, and every lag is -1.
    log_end_offset: Int64 = -1
    # In front of an upstream, each partition's own end instead (a partition left out: -1).
    log_end_offsets: list[ShareOffsetsEnd] | None = None


@dataclass
class DescribeShareGroupOffsetsPartition:
    partition: Int32
    # -1: the group has no state for this partition (it was never fetched, or was deleted).
    start_offset: Int64 = -1
    leader_epoch: Int32 = -1
    # Records not yet acknowledged, rejected or archived; -1 when unknown.
    lag: Int64 = -1
    error_code: Int16 = Errors.NONE
    error_message: str | None = None


@dataclass
class DescribeShareGroupOffsetsTopic:
    topic_name: str
    topic_id: str | None = None
    partitions: list[DescribeShareGroupOffsetsPartition] = field(default_factory=list)


@dataclass
class DescribeShareGroupOffsetsResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    group_id: str = ""
    topics: list[DescribeShareGroupOffsetsTopic] = field(default_factory=list)


@dataclass
class AlterShareGroupOffsetsPartition:
    partition: Int32
    start_offset: Int64


@dataclass
class AlterShareGroupOffsetsTopic:
    topic_name: str
    partitions: list[AlterShareGroupOffsetsPartition] = field(default_factory=list)


@dataclass
class AlterShareGroupOffsetsRequest:
    group_id: str
    topics: list[AlterShareGroupOffsetsTopic] = field(default_factory=list)


@dataclass
class ShareOffsetsResponsePartition:
    partition: Int32
    error_code: Int16 = Errors.NONE
    error_message: str | None = None


@dataclass
class AlterShareGroupOffsetsResponseTopic:
    topic_name: str
    topic_id: str | None = None
    partitions: list[ShareOffsetsResponsePartition] = field(default_factory=list)


@dataclass
class AlterShareGroupOffsetsResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    topics: list[AlterShareGroupOffsetsResponseTopic] = field(default_factory=list)


@dataclass
class DeleteShareGroupOffsetsRequest:
    group_id: str
    topic_names: list[str] = field(default_factory=list)


@dataclass
class DeleteShareGroupOffsetsResponseTopic:
    topic_name: str
    topic_id: str | None = None
    error_code: Int16 = Errors.NONE
    error_message: str | None = None


@dataclass
class DeleteShareGroupOffsetsResponse:
    throttle_time_ms: Int32 = 0
    error_code: Int16 = Errors.NONE
    error_message: str | None = None
    topics: list[DeleteShareGroupOffsetsResponseTopic] = field(default_factory=list)
