"""The target-assignment builder: group state in, assignor spec out, records for what changed.

Kafka's ``TargetAssignmentBuilder``. The coordinator adapts its members and subscribed topics
into the assignor API's own types (``assignors.spec``), runs the group's server assignor, and
writes one record per member whose target changed followed by the epoch record, so a reader
of the log sees a target installed as a unit.
"""

from __future__ import annotations

from assignors import AssignmentSpec, MemberSpec, TopicSpec, server_assignor
from protocol import partitions as pm
from protocol.consumer.group import ConsumerGroup, member_topic_names
from protocol.metadata import MetadataImage
from protocol.records import (
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    Record,
)

Targets = dict[str, ConsumerGroupTargetAssignmentMemberValue]


def assignment_spec(group: ConsumerGroup, image: MetadataImage) -> AssignmentSpec:
    """Members with their subscribed topic ids and current targets; the subscribed topics."""
    topics = {}
    for name in group.subscribed_topic_names(image):
        t = image.topic_by_name(name)
        if t is not None:
            topics[t.topic_id] = TopicSpec(t.name, t.num_partitions, t.partition_racks)
    members = {}
    for mid, member in group.members.items():
        ids = frozenset(
            t.topic_id
            for n in member_topic_names(member, image)
            if (t := image.topic_by_name(n)) is not None
        )
        members[mid] = MemberSpec(
            subscribed_topic_ids=ids,
            assigned_partitions={t: frozenset(ps) for t, ps in group.target_of(mid).items()},
            instance_id=member.instance_id,
            rack_id=member.rack_id,
        )
    return AssignmentSpec(members=members, topics=topics)


def compute_target(group: ConsumerGroup, image: MetadataImage, assignor_name: str) -> Targets:
    result = server_assignor(assignor_name).assign(assignment_spec(group, image))
    return {
        mid: ConsumerGroupTargetAssignmentMemberValue(pm.normalize(result.members.get(mid, {})))
        for mid in sorted(group.members)
    }


def target_records(group: ConsumerGroup, targets: Targets, epoch: int) -> list[Record]:
    gid = group.group_id
    records = [
        Record(ConsumerGroupTargetAssignmentMemberKey(gid, mid), value)
        for mid, value in targets.items()
        if group.target.get(mid) != value
    ]
    records.append(
        Record(
            ConsumerGroupTargetAssignmentMetadataKey(gid),
            ConsumerGroupTargetAssignmentMetadataValue(epoch),
        )
    )
    return records
