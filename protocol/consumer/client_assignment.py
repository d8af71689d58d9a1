"""Client-side assignment: ConsumerGroupPrepareAssignment and ConsumerGroupInstallAssignment.

When a group's members use a client-side assignor, the coordinator does not compute the target
itself: it asks the member whose version range covers everyone's (seed 004) through
``should_compute_assignment``, hands it the group state (PrepareAssignment), and validates and
installs what it computed (InstallAssignment). An assignment computed for an older epoch is
installed anyway and the chosen member is asked again (seed 000, "AssignmentEpoch").
"""

from __future__ import annotations

from protocol import messages as m
from protocol import partitions as pm
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import ConsumerGroupMember
from protocol.consumer.records import ConsumerGroupTargetAssignmentMemberValue
from protocol.consumer.target_assignment import Targets, assignment_spec, target_records
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.modern.client_assignment import (
    check_install_epoch,
    chosen_member,
    prepare_header,
)
from protocol.records import ClientAssignorEntry
from protocol.validation import check_types


def prepare_assignment(
    ctx: ShardContext, req: m.ConsumerGroupPrepareAssignmentRequest
) -> m.ConsumerGroupPrepareAssignmentResponse:
    check_types(req)
    group, _ = _chosen_member(ctx, req)
    choice = group.assignor(ctx.config)
    spec = assignment_spec(group, ctx.image)
    members = []
    for mid in sorted(group.members):
        member = group.members[mid]
        entry = member.client_assignor(choice.name) or ClientAssignorEntry(
            choice.name, 0, 0, 0, 0, b""
        )
        members.append(
            m.PrepareAssignmentMember(
                member_id=mid,
                instance_id=member.instance_id,
                rack_id=member.rack_id,
                subscribed_topic_ids=sorted(spec.members[mid].subscribed_topic_ids),
                assignor=m.PrepareAssignmentAssignor(
                    entry.reason, entry.metadata_version, entry.metadata_bytes
                ),
                topic_partitions=pm.to_wire(group.target_of(mid)),
            )
        )
    return m.ConsumerGroupPrepareAssignmentResponse(
        **prepare_header(group, choice),
        members=members,
        topics=[
            m.PrepareAssignmentTopic(tid, t.topic_name, t.num_partitions)
            for tid, t in sorted(spec.topics.items())
        ],
    )


def install_assignment(
    ctx: ShardContext, req: m.ConsumerGroupInstallAssignmentRequest
) -> m.ConsumerGroupInstallAssignmentResponse:
    check_types(req)
    group, _ = _chosen_member(ctx, req)
    check_install_epoch(group, req.group_epoch)
    for record in target_records(group, _validated_targets(ctx, group, req), req.group_epoch):
        ctx.emit(record)
    return m.ConsumerGroupInstallAssignmentResponse()


def _validated_targets(
    ctx: ShardContext, group: ConsumerGroup, req: m.ConsumerGroupInstallAssignmentRequest
) -> Targets:
    """INVALID_ASSIGNMENT unless every partition exists, is subscribed and is given once.

    Members that left since the assignment was prepared are skipped: their partitions stay
    unassigned until the next computation, which their leaving already triggered.
    """
    spec = assignment_spec(group, ctx.image)
    seen: set[tuple[str, int]] = set()
    seen_members: set[str] = set()
    targets: Targets = {
        mid: ConsumerGroupTargetAssignmentMemberValue() for mid in sorted(group.members)
    }
    for entry in req.members:
        if entry.member_id not in group.members:
            continue
        if entry.member_id in seen_members:
            raise CoordinatorError(
                Errors.INVALID_ASSIGNMENT, f"Member {entry.member_id} appears twice."
            )
        seen_members.add(entry.member_id)
        parts = pm.from_wire(entry.topic_partitions)
        subscribed = spec.members[entry.member_id].subscribed_topic_ids
        for tid, ps in parts.items():
            topic = spec.topics.get(tid)
            if topic is None or tid not in subscribed:
                raise CoordinatorError(
                    Errors.INVALID_ASSIGNMENT,
                    f"Member {entry.member_id} is assigned topic {tid} it does not subscribe to.",
                )
            for p in ps:
                if not 0 <= p < topic.num_partitions:
                    raise CoordinatorError(
                        Errors.INVALID_ASSIGNMENT, f"Partition {tid}-{p} does not exist."
                    )
                if (tid, p) in seen:
                    raise CoordinatorError(
                        Errors.INVALID_ASSIGNMENT, f"Partition {tid}-{p} is assigned twice."
                    )
                seen.add((tid, p))
        targets[entry.member_id] = ConsumerGroupTargetAssignmentMemberValue(
            parts, entry.error, entry.metadata_version, entry.metadata_bytes
        )
    return targets


def _chosen_member(
    ctx: ShardContext, req: m.ConsumerGroupPrepareAssignmentRequest
) -> tuple[ConsumerGroup, ConsumerGroupMember]:
    """Seed 000's checks for both requests, in its order (``modern.client_assignment``)."""

    def chosen(group: ConsumerGroup) -> str | None:
        choice = group.assignor(ctx.config)
        return choice.chosen_member_id if choice.client_side else None

    return chosen_member(ctx, ConsumerGroup.group_type, req, Errors.STALE_MEMBER_EPOCH, chosen)
