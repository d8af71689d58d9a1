"""Online migration between the classic protocol and KIP-848 (seed 002, "Online Migration").

A rolling upgrade restarts a classic group's consumers one by one with the new protocol. The
first new-protocol member converts the group: the generation becomes the group epoch, and the
classic assignment becomes both the target and the members' current assignment, so nobody
loses a partition in the conversion. Classic members then stay in the converted group (see
``classic_members``). When the last new-protocol member leaves a group whose other members
all speak the classic protocol, the group converts back and rebalances as a classic group.

The path is ``conversion_driver``'s, shared with Connect; this module says what is the
consumer's own: a member's classic bytes are a consumer-protocol subscription and assignment,
the records are the consumer group's (with its subscribed-topics metadata), and
``group_consumer_migration_policy`` (Kafka's ``group.consumer.migration.policy``) governs it.
"""

from __future__ import annotations

from collections.abc import Iterator

from protocol import messages as m
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    Assignment,
    ConsumerProtocolError,
    answer_version,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.classic.records import GroupMetadataKey
from protocol.consumer.group import ConsumerGroup, group_tombstones
from protocol.consumer.member import ConsumerGroupMember, MemberState
from protocol.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from protocol.migration.conversion_driver import (
    POLICIES,
    ConversionDriver,
    ConvertedMember,
    classic_member_metadata,
)
from protocol.records import PartitionMap, Record


class Migration(ConversionDriver[ConsumerGroup]):
    """Classic consumer group <-> consumer group."""

    protocol_type = PROTOCOL_TYPE
    label = "consumer"
    policy_key = "group_consumer_migration_policy"
    max_size_key = "group_consumer_max_size"
    member_keys = (
        ConsumerGroupMemberMetadataKey,
        ConsumerGroupTargetAssignmentMemberKey,
        ConsumerGroupCurrentMemberAssignmentKey,
    )

    def before_consumer_heartbeat(self, req: m.ConsumerGroupHeartbeatRequest) -> None:
        """A new-protocol join names a classic group: convert it, or say why not. Only a join
        comes here and converts (Kafka's ``getOrMaybeCreateConsumerGroup`` with
        ``createIfNotExists``); any other heartbeat naming a classic group is refused by the
        consumer rules (GROUP_ID_NOT_FOUND) and changes nothing."""
        if type(req.group_id) is not str:
            return
        group = self.ctx.group_of(req.group_id, "classic")
        if group is None:
            return
        if not group.members:
            # An empty classic group (offsets only) simply becomes a consumer group.
            self.ctx.emit(Record(GroupMetadataKey(group.group_id), None))
            return
        self.check_upgrade(group)
        self.upgrade(group)

    def drop_if_empty(self, group: ConsumerGroup) -> bool:
        """A classic JoinGroup naming an empty consumer group: the group goes (its offsets
        stay, under their own keys) and the join starts a new classic group, as Kafka's
        coordinator does when the policy allows a downgrade. Returns whether it went."""
        if group.members or not self._allows("downgrade"):
            return False
        for record in self.tombstones(group):
            self.ctx.emit(record)
        return True

    def convert_members(self, group: ClassicGroup) -> list[ConvertedMember]:
        taken: set[tuple[str, int]] = set()
        out = []
        for member in group.members.values():
            metadata, assigned = self._as_consumer_member(group, member, taken)
            epoch = group.generation_id
            current = ConsumerGroupCurrentMemberAssignmentValue(
                member_epoch=epoch,
                previous_member_epoch=epoch - 1,
                state=int(MemberState.STABLE),
                assigned_partitions=assigned,
            )
            target = ConsumerGroupTargetAssignmentMemberValue(partitions=assigned)
            out.append(ConvertedMember(member.member_id, metadata, target, current))
        return out

    def group_records(self, group_id: str, epoch: int) -> Iterator[Record]:
        yield Record(
            ConsumerGroupTargetAssignmentMetadataKey(group_id),
            ConsumerGroupTargetAssignmentMetadataValue(epoch),
        )
        consumer = self.ctx.group_of(group_id, "consumer")
        assert consumer is not None
        entries = consumer.subscription_entries(self.ctx.image)
        yield Record(
            ConsumerGroupPartitionMetadataKey(group_id),
            ConsumerGroupPartitionMetadataValue(epoch, tuple(entries.values())),
        )
        yield Record(ConsumerGroupMetadataKey(group_id), ConsumerGroupMetadataValue(epoch))

    def _as_consumer_member(
        self, group: ClassicGroup, member: ClassicMember, taken: set[tuple[str, int]]
    ) -> tuple[ConsumerGroupMemberMetadataValue, PartitionMap]:
        try:
            sub = decode_subscription(member.metadata_for(group.protocol_name))
        except ConsumerProtocolError:
            sub = None
        try:
            assignment = decode_assignment(member.assignment)
        except ConsumerProtocolError:
            assignment = Assignment()
        assigned: dict[str, list[int]] = {}
        for name, partitions in assignment.assigned_partitions:
            topic = self.ctx.image.topic_by_name(name)
            if topic is None:
                continue
            for p in partitions:
                # A leader's assignment is disjoint; never let a bad one break invariant 1.
                if 0 <= p < topic.num_partitions and (topic.topic_id, p) not in taken:
                    taken.add((topic.topic_id, p))
                    assigned.setdefault(topic.topic_id, []).append(p)
        metadata = ConsumerGroupMemberMetadataValue(
            instance_id=member.group_instance_id,
            rack_id=sub.rack_id if sub is not None else None,
            client_id=member.client_id,
            client_host=member.client_host,
            subscribed_topic_names=tuple(sorted(set(sub.topics))) if sub is not None else (),
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            classic_member_metadata=classic_member_metadata(member),
        )
        return metadata, {t: tuple(sorted(ps)) for t, ps in sorted(assigned.items())}

    def classic_assignment(self, group: ConsumerGroup, member: ConsumerGroupMember,
                           protocol_name: str) -> bytes:
        """What the member holds as its classic assignment. Kafka gives its target instead
        (docs/decisions.md, "Differential conformance": a partition another member still
        revokes would then be owned twice, which the upgrade chaos test catches)."""
        meta = member.metadata.classic_member_metadata
        version = answer_version(meta.supported_protocols if meta else (), protocol_name)
        held = self.ctx.image.named(member.assigned_partitions)
        return encode_assignment(Assignment(held), version)

    def tombstones(self, group: ConsumerGroup) -> list[Record]:
        return group_tombstones(group)


__all__ = ["POLICIES", "Migration"]
