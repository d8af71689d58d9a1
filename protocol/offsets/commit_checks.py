"""Who may commit offsets to a group: Kafka's ``validateOffsetCommit``, for both group types.

=================================  ========================================================
group                              rule
=================================  ========================================================
none, no offsets                   generation < 0: simple commit; else ILLEGAL_GENERATION
simple (offsets, no object)        an EMPTY classic group with no members (below)
consumer group (KIP-848)           epoch < 0 and no members: simple commit; else the member
                                   must exist (UNKNOWN_MEMBER_ID); a classic member inside
                                   the group commits at its epoch (ILLEGAL_GENERATION); a
                                   consumer member at its epoch or, per partition, at an
                                   older epoch no lower than the partition's assignment epoch
                                   (KIP-1251: a partition it does not hold, or got later,
                                   refuses every known partition of the commit with
                                   STALE_MEMBER_EPOCH, as Kafka; so does an epoch above its
                                   own)
classic group                      DEAD: COORDINATOR_NOT_AVAILABLE; generation < 0 and
                                   EMPTY: simple commit; a member id, instance id or
                                   generation >= 0: the member must exist (UNKNOWN_MEMBER_ID,
                                   FENCED_INSTANCE_ID) at the group's generation
                                   (ILLEGAL_GENERATION); anonymous to a non-empty group:
                                   UNKNOWN_MEMBER_ID; COMPLETING_REBALANCE:
                                   REBALANCE_IN_PROGRESS
=================================  ========================================================
"""

from __future__ import annotations

from collections.abc import Callable

from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic.group import ClassicGroup
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import ConsumerGroupMember
from protocol.errors import CoordinatorError, Errors

# (topic id, partition) -> whether the commit may write it; None: every partition may.
PartitionCheck = Callable[[str, int], bool]


def validate_consumer_commit(group: ConsumerGroup, req: m.OffsetCommitRequest
                             ) -> PartitionCheck | None:
    """Kafka's ``ConsumerGroup.validateOffsetCommit`` with KIP-1251's assignment epochs: a
    commit is accepted when ``assignmentEpoch(partition) <= clientEpoch <= memberEpoch``."""
    epoch = req.generation_id_or_member_epoch
    if epoch < 0 and not group.members:
        return None  # a simple (admin) commit to an empty group
    member = group.members.get(req.member_id)
    if (member is not None and not member.is_classic
            and req.api_version < m.OFFSET_COMMIT_MEMBER_EPOCH_VERSION):
        raise CoordinatorError(
            Errors.UNSUPPORTED_VERSION,
            "OffsetCommit version 9 or above must be used by members using the consumer "
            "group protocol.",
        )
    if member is None or member.is_classic or epoch >= member.member_epoch:
        check_member_epoch(group, req.member_id, epoch)
        return None
    return lambda topic_id, partition: (
        owns(member, topic_id, partition)
        and member.assignment_epoch(topic_id, partition) <= epoch
    )


def check_member_epoch(group: ConsumerGroup, member_id: str, epoch: int) -> ConsumerGroupMember:
    member = group.members.get(member_id)
    if member is None:
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID,
            f"Member {member_id} is not a member of group {group.group_id}.",
        )
    if epoch != member.member_epoch:
        if member.metadata.classic_member_metadata is not None:
            raise CoordinatorError(
                Errors.ILLEGAL_GENERATION,
                f"The received generation id {epoch} does not match the expected member epoch "
                f"{member.member_epoch}.",
            )
        raise CoordinatorError(
            Errors.STALE_MEMBER_EPOCH,
            f"The received member epoch {epoch} does not match the expected member epoch "
            f"{member.member_epoch}.",
        )
    return member


def validate_classic_commit(
    state: str, group: ClassicGroup | None, req: m.OffsetCommitRequest
) -> None:
    """Kafka's ``ClassicGroup.validateOffsetCommit``; ``group`` None is the simple group."""
    generation = req.generation_id_or_member_epoch
    if state == cg.DEAD:
        raise CoordinatorError(Errors.COORDINATOR_NOT_AVAILABLE, f"Group {req.group_id} is dead.")
    if generation < 0 and state == cg.EMPTY:
        return
    members = group.members if group is not None else {}
    if generation >= 0 or req.member_id or req.group_instance_id is not None:
        if req.group_instance_id is not None:
            holder = group.static_members.get(req.group_instance_id) if group else None
            if holder is None:
                raise CoordinatorError(
                    Errors.UNKNOWN_MEMBER_ID, f"Instance id {req.group_instance_id} is unknown."
                )
            if holder != req.member_id:
                raise CoordinatorError(
                    Errors.FENCED_INSTANCE_ID,
                    f"Instance id {req.group_instance_id} belongs to member {holder}, "
                    f"not {req.member_id}.",
                )
        elif req.member_id not in members:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        current = group.generation_id if group is not None else 0
        if generation != current:
            raise CoordinatorError(
                Errors.ILLEGAL_GENERATION,
                f"Generation {generation} is not the group's generation {current}.",
            )
    else:
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID,
            f"Group {req.group_id} is not empty: a commit must name a member and generation.",
        )
    if state == cg.COMPLETING_REBALANCE:
        raise CoordinatorError(
            Errors.REBALANCE_IN_PROGRESS, f"Group {req.group_id} is completing a rebalance."
        )


def owns(member: ConsumerGroupMember, topic_id: str, partition: int) -> bool:
    """Assigned, or still held while being revoked (a member commits before it lets go)."""
    return partition in member.assigned_partitions.get(topic_id, ()) or (
        partition in member.partitions_pending_revocation.get(topic_id, ())
    )


def refused_commit(req: m.OffsetCommitRequest, e: CoordinatorError) -> m.OffsetCommitResponse:
    return m.OffsetCommitResponse(
        error_code=e.error,
        error_message=e.message,
        topics=[
            m.OffsetCommitResponseTopic(
                t.name,
                [m.OffsetCommitResponsePartition(p.partition_index, e.error) for p in t.partitions],
            )
            for t in req.topics
        ],
    )
