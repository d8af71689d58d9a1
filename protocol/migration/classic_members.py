"""Classic members of a KIP-848 group: JoinGroup, SyncGroup, Heartbeat, LeaveGroup after an
online upgrade (seed 002, "Online Migration").

A classic consumer cannot be told "revoke these, then take those" the way a KIP-848 member
is; all it understands is "rebalance". So the coordinator runs the new protocol for it: its
JoinGroup is its heartbeat with a full subscription (owned partitions included, so it is also
its revocation acknowledgement), the group's target assignment decides, the reconciler moves
it one safe step, and the JoinGroup / SyncGroup replies carry the result. Its generation is
its member epoch. When its reconciliation has a next step (partitions to give up, or new ones
freed for it), its next Heartbeat answers REBALANCE_IN_PROGRESS and it rejoins. Everyone is a
follower (the leader is ""): the coordinator assigns.
"""

from __future__ import annotations

from protocol import messages as m
from protocol import partitions as pm
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    Assignment,
    ConsumerProtocolError,
    decode_subscription,
    encode_assignment,
)
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import STATIC_LEAVE_EPOCH, ConsumerGroupMember
from protocol.consumer.reconciler import reconcile
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.records import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    PartitionMap,
    Record,
)

# Per-member phase of a classic member, as seed 002 names it ("C (CompletingRebalance)").
PREPARING_REBALANCE = "preparing_rebalance"
COMPLETING_REBALANCE = "completing_rebalance"
STABLE = "stable"


class ClassicMembersOfConsumerGroup:
    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx
        # (group, member) that got a JoinGroup reply and owe a SyncGroup: not persisted, as a
        # classic group's sync phase is not.
        self._syncing: set[tuple[str, str]] = set()
        # (group, member id) handed out with MEMBER_ID_REQUIRED and not yet used.
        # The id is good for one session timeout, as a classic group's pending member is.
        self._issued: dict[tuple[str, str], int] = {}

    # ------------------------------------------------------------------ JoinGroup

    def join(self, group: ConsumerGroup, req: m.JoinGroupRequest) -> m.JoinGroupResponse:
        if req.protocol_type != PROTOCOL_TYPE:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                f"Group {group.group_id} is a consumer group: protocol type must be "
                f"{PROTOCOL_TYPE!r}.",
            )
        try:
            sub = decode_subscription(req.protocols[0].metadata)
        except ConsumerProtocolError as e:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL, f"Unreadable consumer subscription: {e}"
            ) from None
        rules = self.ctx.consumer
        gid = group.group_id
        member: ConsumerGroupMember | None
        if req.group_instance_id is not None:
            holder = group.static_members.get(req.group_instance_id)
            member = group.members.get(holder) if holder is not None else None
            if member is not None and req.member_id and req.member_id != holder:
                raise CoordinatorError(
                    Errors.FENCED_INSTANCE_ID,
                    f"Instance id {req.group_instance_id} is held by member {holder}.",
                )
            if (
                member is not None
                and member.metadata.classic_member_metadata is None
                and member.member_epoch != STATIC_LEAVE_EPOCH
            ):
                raise CoordinatorError(
                    Errors.UNRELEASED_INSTANCE_ID,
                    f"Static member {holder} with instance id {req.group_instance_id} still "
                    "uses the new protocol; it must leave before a classic consumer takes over.",
                )
        elif not req.member_id:
            # Dynamic newcomer: learn an id first (KIP-394), as in a classic group.
            member_id = self._fresh_id(group, req.client_id or "consumer")
            now = self.ctx.now_ms
            self._issued = {k: t for k, t in self._issued.items() if t > now}  # stays bounded
            self._issued[(group.group_id, member_id)] = now + req.session_timeout_ms
            return m.JoinGroupResponse(
                error_code=Errors.MEMBER_ID_REQUIRED,
                error_message="The group requires a member id: rejoin with the one given.",
                member_id=member_id,
            )
        else:
            member = group.members.get(req.member_id)
            issued_until = self._issued.get((gid, req.member_id), -1)
            if member is None and issued_until <= self.ctx.now_ms:
                raise CoordinatorError(
                    Errors.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {gid}.",
                )
        metadata = _classic_metadata(req, sub)
        owned = self._owned(sub)
        if member is None:
            member_id = req.member_id or self._fresh_id(group, req.group_instance_id)
            member = rules.add_member(group, member_id, metadata)
            self._issued.pop((gid, member_id), None)
        elif not req.member_id:
            # A static member's new process: a new id in the old place (the old id is fenced).
            new_id = self._fresh_id(group, req.group_instance_id)
            self._syncing.discard((gid, member.member_id))
            member = rules.replace_member(group, member, new_id, metadata)
        else:
            member = rules.update_member(group, member, metadata)
        if self.ctx.migration.maybe_downgrade(group):
            # It replaced the last new-protocol member: the group is classic again, and this
            # JoinGroup is one more member rejoining it.
            return self.ctx.classic.join(req)
        rules.finish_turn()
        group = self.ctx.consumer_group(gid)
        assert group is not None
        member = self._reconcile(group, group.members[member.member_id], owned)
        self._syncing.add((gid, member.member_id))
        return m.JoinGroupResponse(
            generation_id=member.member_epoch,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=req.protocols[0].name,
            leader="",
            member_id=member.member_id,
        )

    def _owned(self, sub) -> PartitionMap:
        out: dict[str, list[int]] = {}
        for name, partitions in sub.owned_partitions:
            topic = self.ctx.image.topic_by_name(name)
            if topic is not None:
                out.setdefault(topic.topic_id, []).extend(partitions)
        return pm.normalize(out)

    def _reconcile(
        self, group: ConsumerGroup, member: ConsumerGroupMember, owned: PartitionMap | None
    ) -> ConsumerGroupMember:
        new = reconcile(
            member,
            group.assignment_epoch,
            group.target_of(member.member_id),
            owned,
            group.owner_of,
        )
        if new != member:
            key = ConsumerGroupCurrentMemberAssignmentKey(group.group_id, member.member_id)
            self.ctx.emit(Record(key, new.current))
        return new

    # ------------------------------------------------------------------ SyncGroup

    def sync(self, group: ConsumerGroup, req: m.SyncGroupRequest) -> m.SyncGroupResponse:
        member = self._member(group, req.member_id, req.group_instance_id)
        if req.generation_id != member.member_epoch:
            raise _illegal_generation(req.generation_id, member)
        if req.protocol_type is not None and req.protocol_type != PROTOCOL_TYPE:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL, "The group's protocol type is 'consumer'."
            )
        self._syncing.discard((group.group_id, member.member_id))
        self.ctx.consumer.touch_session(group.group_id, member.member_id)
        assigned = self.ctx.image.named(member.assigned_partitions)
        return m.SyncGroupResponse(
            protocol_type=PROTOCOL_TYPE,
            protocol_name=req.protocol_name,
            assignment=encode_assignment(Assignment(assigned)),
        )

    # ------------------------------------------------------------------ Heartbeat

    def heartbeat(self, group: ConsumerGroup, req: m.HeartbeatRequest) -> m.HeartbeatResponse:
        member = self._member(group, req.member_id, req.group_instance_id)
        if req.generation_id != member.member_epoch:
            raise _illegal_generation(req.generation_id, member)
        self.ctx.consumer.touch_session(group.group_id, member.member_id)
        if self.needs_rebalance(group, member):
            return m.HeartbeatResponse(
                error_code=Errors.REBALANCE_IN_PROGRESS,
                error_message="Your assignment changed: rejoin the group.",
            )
        return m.HeartbeatResponse()

    def needs_rebalance(self, group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
        """Whether one more reconciliation step is waiting for this member (checked as if it
        still owned everything it was given: a classic member revokes only by rejoining)."""
        step = reconcile(
            member,
            group.assignment_epoch,
            group.target_of(member.member_id),
            member.assigned_partitions,
            group.owner_of,
        )
        return step != member

    def phase(self, group: ConsumerGroup, member: ConsumerGroupMember) -> str:
        if self.needs_rebalance(group, member):
            return PREPARING_REBALANCE
        if (group.group_id, member.member_id) in self._syncing:
            return COMPLETING_REBALANCE
        return STABLE

    # ------------------------------------------------------------------ LeaveGroup

    def leave(self, group: ConsumerGroup, req: m.LeaveGroupRequest) -> m.LeaveGroupResponse:
        results = []
        for identity in req.members:
            mid, iid = identity.member_id, identity.group_instance_id
            error = Errors.NONE
            if iid is not None:
                holder = group.static_members.get(iid)
                if holder is None:
                    error = Errors.UNKNOWN_MEMBER_ID
                elif mid and mid != holder:
                    error = Errors.FENCED_INSTANCE_ID
                else:
                    mid = holder
            if error == Errors.NONE and mid not in group.members:
                error = Errors.UNKNOWN_MEMBER_ID
            if error == Errors.NONE:
                self._syncing.discard((group.group_id, mid))
                self.ctx.consumer.fence(
                    group, mid, f"member left the group: {identity.reason or 'no reason given'}"
                )
                converted = self.ctx.consumer_group(group.group_id)
                if converted is None:  # it became a classic group again
                    break
                group = converted
            results.append(
                m.LeaveGroupResponseMember(identity.member_id, identity.group_instance_id, error)
            )
        return m.LeaveGroupResponse(members=results)

    # ------------------------------------------------------------------ DescribeGroups

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
                    member_assignment=encode_assignment(
                        Assignment(self.ctx.image.named(mem.assigned_partitions))
                    ),
                )
                for mem in group.members.values()
            ],
            generation_id=group.group_epoch,
            rebalance_history=history,
        )

    # ------------------------------------------------------------------ helpers

    def _member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> ConsumerGroupMember:
        if instance_id is not None:
            holder = group.static_members.get(instance_id)
            if holder is not None and holder != member_id:
                raise CoordinatorError(
                    Errors.FENCED_INSTANCE_ID,
                    f"Instance id {instance_id} is held by member {holder}.",
                )
        member = group.members.get(member_id)
        if member is None:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        if member.metadata.classic_member_metadata is None:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID,
                f"Member {member_id} uses the new protocol: it cannot speak the classic one.",
            )
        return member

    def _fresh_id(self, group: ConsumerGroup, prefix: str) -> str:
        while True:
            member_id = f"{prefix}-{self.ctx.new_member_id()}"
            if member_id not in group.members and (group.group_id, member_id) not in self._issued:
                return member_id

    def forget(self, group_id: str, member_id: str) -> None:
        self._syncing.discard((group_id, member_id))


def _classic_metadata(req: m.JoinGroupRequest, sub) -> dict:
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
        "rebalance_timeout_ms": (
            req.session_timeout_ms if req.rebalance_timeout_ms == -1 else req.rebalance_timeout_ms
        ),
        "classic_member_metadata": ClassicMemberMetadata(
            session_timeout_ms=req.session_timeout_ms,
            supported_protocols=tuple(ClassicProtocol(p.name, p.metadata) for p in req.protocols),
        ),
    }


def _illegal_generation(generation: int, member: ConsumerGroupMember) -> CoordinatorError:
    return CoordinatorError(
        Errors.ILLEGAL_GENERATION,
        f"Generation {generation} is not member {member.member_id}'s epoch {member.member_epoch}.",
    )


__all__ = ["ClassicMembersOfConsumerGroup", "ConsumerGroupMemberMetadataKey"]
