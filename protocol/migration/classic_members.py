"""Classic members of a KIP-848 consumer group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup
after an online upgrade (seed 002, "Online Migration").

The rules are ``classic_in_modern``'s, shared with Connect; this module says what is the
consumer's own. A classic consumer's JoinGroup carries its subscription with its owned
partitions (its revocation acknowledgement); a static member may rejoin with a new process
(a new id in the old place, the old id fenced), but not while its instance id is still held by
a new-protocol member (UNRELEASED_INSTANCE_ID). SyncGroup answers with a consumer-protocol
assignment. Each classic member has a phase, as seed 002 names it ("C (CompletingRebalance)"),
and old tools describe the group in DescribeGroups' classic shape.
"""

from __future__ import annotations

from operator import attrgetter

from protocol import messages as m
from protocol import partitions as pm
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    Assignment,
    ConsumerProtocolError,
    Subscription,
    answer_version,
    decode_subscription,
    encode_assignment,
)
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import STATIC_LEAVE_EPOCH, ConsumerGroupMember
from protocol.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
)
from protocol.errors import CoordinatorError, Errors
from protocol.migration import classic_in_modern as cim
from protocol.modern.reconciler import reconcile_partitions
from protocol.records import PartitionMap

# Per-member phase of a classic member, as seed 002 names it ("C (CompletingRebalance)").
PREPARING_REBALANCE = "preparing_rebalance"
COMPLETING_REBALANCE = "completing_rebalance"
STABLE = "stable"


class ClassicMembersOfConsumerGroup(
    cim.ClassicMembersOfModernGroup[ConsumerGroup, ConsumerGroupMember]
):
    protocol_type = PROTOCOL_TYPE
    group_type = "consumer"
    noun = "member"
    rebalance_message = "Your assignment changed: rejoin the group."
    steps = cim.Steps(
        reconcile_partitions, attrgetter("assigned_partitions"),
        ConsumerGroupCurrentMemberAssignmentKey,
    )

    # ------------------------------------------------------------------ JoinGroup

    def read_join(self, group: ConsumerGroup, req: m.JoinGroupRequest) -> cim.Joined:
        sub = self._subscription(req)
        return cim.Joined(owned=self._owned(sub), protocol_name=req.protocols[0].name)

    @staticmethod
    def _subscription(req: m.JoinGroupRequest) -> Subscription:
        try:
            return decode_subscription(req.protocols[0].metadata)
        except ConsumerProtocolError as e:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL, f"Unreadable consumer subscription: {e}"
            ) from None

    def _owned(self, sub: Subscription) -> PartitionMap:
        out: dict[str, list[int]] = {}
        for name, partitions in sub.owned_partitions:
            topic = self.ctx.image.topic_by_name(name)
            if topic is not None:
                out.setdefault(topic.topic_id, []).extend(partitions)
        return pm.normalize(out)

    def admit(self, group: ConsumerGroup, req: m.JoinGroupRequest) -> str:
        iid = req.group_instance_id
        member = self._static(group, req) if iid is not None else self.known(group, req.member_id)
        metadata = _fields(req, self._subscription(req))
        rules = self.ctx.consumer
        if member is None:
            member_id = req.member_id or self.fresh_id(group, iid or "consumer")
            return rules.add_member(group, member_id, metadata).member_id
        if not req.member_id:
            # A static member's new process: a new id in the old place (the old id is fenced).
            self.forget(group.group_id, member.member_id)
            new_id = self.fresh_id(group, iid or "consumer")
            return rules.replace_member(group, member, new_id, metadata).member_id
        return rules.update_member(group, member, metadata).member_id

    @staticmethod
    def _static(group: ConsumerGroup, req: m.JoinGroupRequest) -> ConsumerGroupMember | None:
        """The member holding the JoinGroup's instance id (None: nobody), if it may rejoin."""
        holder = group.static_members.get(req.group_instance_id or "")
        member = group.members.get(holder) if holder is not None else None
        if member is None:
            return None
        if req.member_id and req.member_id != holder:
            raise CoordinatorError(
                Errors.FENCED_INSTANCE_ID,
                f"Instance id {req.group_instance_id} is held by member {holder}.",
            )
        if (
            member.metadata.classic_member_metadata is None
            and member.member_epoch != STATIC_LEAVE_EPOCH
        ):
            raise CoordinatorError(
                Errors.UNRELEASED_INSTANCE_ID,
                f"Static member {holder} with instance id {req.group_instance_id} still "
                "uses the new protocol; it must leave before a classic consumer takes over.",
            )
        return member

    # ------------------------------------------------------------------ SyncGroup

    def sync_assignment(
        self, member: ConsumerGroupMember, req: m.SyncGroupRequest, joined: cim.Joined | None
    ) -> tuple[str | None, bytes]:
        return req.protocol_name, self._assignment_bytes(member, req.protocol_name)

    def _assignment_bytes(self, member: ConsumerGroupMember, name: str | None) -> bytes:
        """The member's partitions as a ConsumerProtocolAssignment, in the version of the
        subscription it joined with (as Kafka answers)."""
        meta = member.metadata.classic_member_metadata
        version = answer_version(meta.supported_protocols if meta else (), name)
        return encode_assignment(Assignment(self.ctx.image.named(member.assigned_partitions)),
                                 version)

    # ------------------------------------------------------------------ phase, describe

    def phase(self, group: ConsumerGroup, member: ConsumerGroupMember) -> str:
        if self.needs_rebalance(group, member):
            return PREPARING_REBALANCE
        if self.syncing(group.group_id, member.member_id):
            return COMPLETING_REBALANCE
        return STABLE

    def describe(self, group: ConsumerGroup, history: list) -> m.DescribeGroupsResponseGroup:
        """A consumer group in DescribeGroups' classic shape, as Kafka answers old tools."""
        return m.DescribeGroupsResponseGroup(
            group_id=group.group_id,
            group_state=group.state,
            protocol_type=PROTOCOL_TYPE,
            protocol_data=group.assignor(self.ctx.config).name,
            members=[
                m.DescribedGroupMember(
                    member_id=mem.member_id,
                    group_instance_id=mem.instance_id,
                    client_id=mem.client_id,
                    client_host=mem.client_host,
                    member_assignment=self._assignment_bytes(mem, None),
                )
                for mem in group.members.values()
            ],
            generation_id=group.group_epoch,
            rebalance_history=history,
        )

    def ports(self) -> cim.Ports:
        rules = self.ctx.consumer
        return cim.Ports(
            rules.touch_session, rules.fence, rules.finish_turn, self.ctx.migration.maybe_downgrade
        )


def _fields(req: m.JoinGroupRequest, sub: Subscription) -> dict:
    """The member-metadata fields a classic JoinGroup sets (its subscription and timeouts)."""
    return {
        "instance_id": req.group_instance_id,
        "rack_id": sub.rack_id,
        "client_id": req.client_id,
        "client_host": req.client_host,
        "subscribed_topic_names": tuple(sorted(set(sub.topics))),
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "client_assignors": (),
        "rebalance_timeout_ms": cim.rebalance_timeout_of(req),
        "classic_member_metadata": cim.classic_metadata_of(req),
    }


__all__ = ["ClassicMembersOfConsumerGroup", "ConsumerGroupMemberMetadataKey"]
