"""Online migration between the classic protocol and KIP-848 (seed 002, "Online Migration").

A rolling upgrade restarts a classic group's consumers one by one with the new protocol. The
first new-protocol member converts the group: the generation becomes the group epoch, and the
classic assignment becomes both the target and the members' current assignment, so nobody
loses a partition in the conversion. Classic members then stay in the converted group (see
``classic_in_consumer``). When the last new-protocol member leaves a group whose other members
all speak the classic protocol, the group converts back and rebalances as a classic group.

Both conversions are a tombstone of the old representation followed by the records of the new
one, in one event: the log never holds the group twice, and offsets and the rebalance history
(different keys) are untouched. ``group_consumer_migration_policy`` says which directions are
allowed (Kafka's ``group.consumer.migration.policy``).
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    Assignment,
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.consumer.group import ConsumerGroup, group_tombstones
from protocol.consumer.member import MemberState
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.records import (
    ClassicMemberMetadata,
    ClassicProtocol,
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
    GroupMetadataKey,
    PartitionMap,
    Record,
)

POLICIES = ("disabled", "upgrade", "downgrade", "bidirectional")


class Migration:
    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx

    def _allows(self, direction: str) -> bool:
        policy = self.ctx.config.group_consumer_migration_policy
        return policy == "bidirectional" or policy == direction

    # ------------------------------------------------------------------ upgrade

    def before_consumer_heartbeat(self, req: m.ConsumerGroupHeartbeatRequest) -> None:
        """A new-protocol heartbeat names a classic group: convert it, or say why not."""
        group = self.ctx.classic_group(req.group_id) if isinstance(req.group_id, str) else None
        if group is None:
            return
        if not group.members:
            # An empty classic group (offsets only) simply becomes a consumer group.
            self.ctx.emit(Record(GroupMetadataKey(group.group_id), None))
            return
        if not self._allows("upgrade"):
            raise CoordinatorError(
                Errors.GROUP_ID_NOT_FOUND,
                f"Group {group.group_id} is a classic group and online upgrade is disabled.",
            )
        if group.protocol_type != PROTOCOL_TYPE:
            raise CoordinatorError(
                Errors.GROUP_ID_NOT_FOUND,
                f"Group {group.group_id} is a classic group of protocol type "
                f"{group.protocol_type!r}, not a consumer group.",
            )
        if len(group.members) >= self.ctx.config.group_consumer_max_size:
            raise CoordinatorError(
                Errors.GROUP_MAX_SIZE_REACHED,
                f"Group {group.group_id} is larger than group.consumer.max.size.",
            )
        if group.state != cg.STABLE:
            # Cohort's choice (Kafka answers GROUP_ID_NOT_FOUND, fatal to its client): the
            # assignment of a rebalancing group is not settled, so try again shortly.
            raise CoordinatorError(
                Errors.REBALANCE_IN_PROGRESS,
                f"Classic group {group.group_id} is {group.state}; it converts to the new "
                "protocol once stable: retry.",
            )
        self.upgrade(group)

    def upgrade(self, group: ClassicGroup) -> None:
        gid, epoch = group.group_id, group.generation_id
        taken: set[tuple[str, int]] = set()
        converted = []
        for member in group.members.values():
            metadata, assigned = self._as_consumer_member(group, member, taken)
            converted.append((member.member_id, metadata, assigned))
        self.ctx.emit(Record(GroupMetadataKey(gid), None))
        for member_id, metadata, assigned in converted:
            self.ctx.emit(Record(ConsumerGroupMemberMetadataKey(gid, member_id), metadata))
            self.ctx.emit(
                Record(
                    ConsumerGroupTargetAssignmentMemberKey(gid, member_id),
                    ConsumerGroupTargetAssignmentMemberValue(partitions=assigned),
                )
            )
            self.ctx.emit(
                Record(
                    ConsumerGroupCurrentMemberAssignmentKey(gid, member_id),
                    ConsumerGroupCurrentMemberAssignmentValue(
                        member_epoch=epoch,
                        previous_member_epoch=epoch - 1,
                        state=int(MemberState.STABLE),
                        assigned_partitions=assigned,
                    ),
                )
            )
        self.ctx.emit(
            Record(
                ConsumerGroupTargetAssignmentMetadataKey(gid),
                ConsumerGroupTargetAssignmentMetadataValue(epoch),
            )
        )
        consumer = self.ctx.consumer_group(gid)
        assert consumer is not None
        entries = consumer.subscription_entries(self.ctx.image)
        self.ctx.emit(
            Record(
                ConsumerGroupPartitionMetadataKey(gid),
                ConsumerGroupPartitionMetadataValue(epoch, tuple(entries.values())),
            )
        )
        self.ctx.emit(Record(ConsumerGroupMetadataKey(gid), ConsumerGroupMetadataValue(epoch)))

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
            classic_member_metadata=ClassicMemberMetadata(
                session_timeout_ms=member.session_timeout_ms,
                supported_protocols=tuple(ClassicProtocol(n, md) for n, md in member.protocols),
            ),
        )
        return metadata, {t: tuple(sorted(ps)) for t, ps in sorted(assigned.items())}

    # ------------------------------------------------------------------ downgrade

    def maybe_downgrade(self, group: ConsumerGroup) -> bool:
        """The last new-protocol member left (or turned classic): a group of classic members
        only converts back and rebalances as a classic group. Returns whether it did."""
        members = list(group.members.values())
        if (
            not members
            or any(mem.metadata.classic_member_metadata is None for mem in members)
            or not self._allows("downgrade")
        ):
            return False
        self.downgrade(group)
        return True

    def downgrade(self, consumer: ConsumerGroup) -> None:
        gid = consumer.group_id
        classic = ClassicGroup(
            gid,
            state=cg.STABLE,
            generation_id=consumer.group_epoch,
            protocol_type=PROTOCOL_TYPE,
            state_timestamp_ms=self.ctx.now_ms,
        )
        for member in consumer.members.values():
            meta = member.metadata.classic_member_metadata
            assert meta is not None
            classic.add(
                ClassicMember(
                    member_id=member.member_id,
                    group_instance_id=member.instance_id,
                    client_id=member.client_id,
                    client_host=member.client_host,
                    rebalance_timeout_ms=max(member.rebalance_timeout_ms, 0),
                    session_timeout_ms=meta.session_timeout_ms,
                    protocol_type=PROTOCOL_TYPE,
                    protocols=[(p.name, p.metadata) for p in meta.supported_protocols],
                    assignment=encode_assignment(
                        Assignment(self.ctx.image.named(member.assigned_partitions))
                    ),
                )
            )
        classic.protocol_name = classic.select_protocol()
        # The consumer group's records go; its metadata tombstone takes the rest with it.
        for record in group_tombstones(consumer):
            self.ctx.emit(record)
        self.ctx.groups[gid] = classic
        self.ctx.emit(Record(GroupMetadataKey(gid), classic.to_record()))
        self.ctx.classic.start_after_downgrade(classic)

