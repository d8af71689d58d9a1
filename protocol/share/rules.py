"""The membership rules of share groups (KIP-932): ShareGroupHeartbeat, leaving, fencing,
session timeouts, metadata changes, replay; and what a share group answers to other types'
requests.

A heartbeat is handled as Kafka 4.2's ``shareGroupHeartbeat``, in the two steps of a turn
(``admit``, then ``complete``: the heartbeats of one turn share one epoch bump per group, as
consumers' do): validate; find or create the member (epoch 0 joins under the member id the
client chose, -1 leaves); refuse an epoch that is not the member's (FENCED_MEMBER_EPOCH: share
members have no lost-response grace); apply its rack and subscription; settle the epoch bump
(``ShareEpochs``: the simple share assignor of ``assignors.share`` over the share-partitions
initialised already; a share group's target is a pure function of its members' subscriptions,
the topics' partition counts and what is initialised, so a metadata change is noticed by
recomputing it, with no record of the counts); ask for the initialisation of any partition the
member names that is not (``initialization``: the next tick completes it and bumps the epoch);
then move the member straight to its target, since a share member revokes nothing. A member
that leaves or times out gives back every record it holds (``fetch.release_member``). Every
decision is a record emitted through ``ctx.emit``.
"""

from __future__ import annotations

from dataclasses import replace

from assignors.share import assign_simple
from protocol import messages as m
from protocol.classic.records import GroupMetadataKey
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors, invalid_request
from protocol.modern.epochs import EpochTurn, Targets
from protocol.modern.member import STABLE
from protocol.modern.rules import Admitted, ModernRules
from protocol.partitions import to_wire
from protocol.records import Record
from protocol.share.describe import describe_groups
from protocol.share.fetch import SharePartitions
from protocol.share.group import GROUP_TYPE, ShareGroup
from protocol.share.initialization import INITIALIZED, ShareInitializations
from protocol.share.member import JOIN_EPOCH, LEAVE_EPOCH, ShareGroupMember
from protocol.share.records import ShareGroupMetadataValue, ShareGroupTargetAssignmentMemberValue
from protocol.share.sessions import (
    ShareInitialization,
    ShareLockExpiry,
    ShareMemberTimers,
    ShareTimer,
)
from protocol.validation import check_types


class ShareEpochs(EpochTurn):
    """The share groups an event changed, and what settling them writes."""

    group_type = GROUP_TYPE
    first_epoch = 1  # Kafka 4.3's KAFKA-20268: a new share group's first member gets epoch 2

    def group_value(self, group: ShareGroup, epoch: int) -> ShareGroupMetadataValue:
        return ShareGroupMetadataValue(epoch)

    def client_side(self, group: ShareGroup) -> bool:
        return False

    def interval_ms(self, group_id: str) -> int:
        """KIP-1263's ``share.assignment.interval.ms`` (Kafka 4.4's
        ``shareGroupAssignmentIntervalMs``: the group config over the broker's)."""
        return self.ctx.group_config(group_id).share_setting(self.ctx.config,
                                                             "assignment_interval_ms")

    def __init__(self, ctx: ShardContext) -> None:
        super().__init__(ctx)
        self.initializations = ShareInitializations(ctx)

    def compute_targets(self, group: ShareGroup) -> Targets:
        """The simple assignor over the share-partitions the group may assign (initialised:
        ``initialization``)."""
        image = self.ctx.image
        subscriptions: dict[str, frozenset[str]] = {}
        counts: dict[str, int] = {}
        for mid, member in group.members.items():
            ids = []
            for name in member.subscribed_topic_names:
                topic = image.topic_by_name(name)
                if topic is not None:
                    ids.append(topic.topic_id)
                    counts[topic.topic_id] = self.initializations.assignable(
                        group, topic.topic_id, topic.num_partitions)
            subscriptions[mid] = frozenset(ids)
        assigned = assign_simple(subscriptions, counts)
        target = ShareGroupTargetAssignmentMemberValue
        return {mid: target(parts) for mid, parts in assigned.items()}

    def changed_target(self, group: ShareGroup) -> bool:
        """Whether the metadata image now gives ``group`` another target than it has."""
        targets = self.compute_targets(group)
        return any(group.target.get(mid) != value for mid, value in targets.items())


class ShareGroupRules(ModernRules):
    """Every ShareGroupHeartbeat, leave, session expiry and metadata change of share groups;
    ShareFetch, ShareAcknowledge and the offsets admin through ``partitions``."""

    GROUP, ASSIGNMENT = ShareGroup, m.ShareGroupAssignment

    def __init__(self, ctx: ShardContext) -> None:
        super().__init__(ctx)
        self.epochs = self.epoch_turn = ShareEpochs(ctx)
        self.initializations = self.epochs.initializations
        self.sessions = ShareMemberTimers(ctx, self.fence)
        self.partitions = SharePartitions(ctx)

    # ------------------------------------------------------------------ requests

    def admit(self, req: m.ShareGroupHeartbeatRequest) -> Admitted | m.ShareGroupHeartbeatResponse:
        """A heartbeat's first step (the share row's ``heartbeat``): its checks and changes; a
        leave is answered here, any other heartbeat once the turn's epoch bumps are settled
        (``complete``), so the heartbeats of one turn share one bump and one target."""
        validate_heartbeat(req)
        group = self.share_group(req.group_id, create=req.member_epoch == JOIN_EPOCH)
        if group is None and req.member_epoch != JOIN_EPOCH:
            # Share groups are not the seeds': Kafka's answer (seed 000's UNKNOWN_MEMBER_ID
            # rule is for consumer groups).
            raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND,
                                   f"Group {req.group_id} not found.")
        if req.member_epoch == LEAVE_EPOCH:
            member = self.existing_member(group, req.group_id, req.member_id, None)
            self.fence(group, member.member_id, "member left the group")
            return m.ShareGroupHeartbeatResponse(  # nothing to heartbeat for: interval 0
                member_id=req.member_id, member_epoch=LEAVE_EPOCH, heartbeat_interval_ms=0)
        member = group.members.get(req.member_id) if group is not None else None
        if req.member_epoch != JOIN_EPOCH:
            member = self.existing_member(group, req.group_id, req.member_id, None)
            if req.member_epoch != member.member_epoch:
                raise CoordinatorError(
                    Errors.FENCED_MEMBER_EPOCH,
                    f"The share member's epoch ({req.member_epoch}) is not the one known by the "
                    f"group coordinator ({member.member_epoch}); it must rejoin with epoch 0.",
                )
        elif member is None:
            self.check_size(group)
            if self.ctx.group_of(req.group_id, "classic") is not None:  # offsets only: retire
                self.ctx.emit(Record(GroupMetadataKey(req.group_id), None))
            member = ShareGroupMember(req.member_id)
            self.emit_new_member(req.group_id, member)
            self.epochs.mark(req.group_id, "new member joined", member)
        self._update(req, member)
        return Admitted(req, req.group_id, req.member_id)

    def complete(self, a: Admitted) -> m.ShareGroupHeartbeatResponse:
        group = self.group_of(a.group_id)
        member = group.members[a.member_id]
        self.initializations.ask(group, member.subscribed_topic_names)
        return self._reply(a.request)

    def describe(self, req: m.ShareGroupDescribeRequest) -> m.ShareGroupDescribeResponse:
        return describe_groups(self.ctx, req)

    # ------------------------------------------------------------------ the group

    def share_group(self, group_id: str, create: bool = False) -> ShareGroup | None:
        """The share group ``group_id`` (None: none yet). Another type's id is
        GROUP_ID_NOT_FOUND, as Kafka answers; an empty classic group (offsets only) becomes a
        share group on a join, as it becomes a consumer group on a consumer's."""
        group = self.ctx.groups.get(group_id)
        if group is None or group.group_type == GROUP_TYPE:
            return group
        classic = self.ctx.group_of(group_id, "classic")
        if create and classic is not None and not classic.members:
            return None
        raise CoordinatorError(
            Errors.GROUP_ID_NOT_FOUND,
            f"Group {group_id} is a {group.group_type} group, not a share group.",
        )

    def _update(self, req: m.ShareGroupHeartbeatRequest, member: ShareGroupMember) -> None:
        """Apply the heartbeat's rack and subscription; a new subscription bumps the epoch."""
        gid = req.group_id
        changes = {}
        if req.rack_id is not None:
            changes["rack_id"] = req.rack_id
        if req.subscribed_topic_names is not None:
            changes["subscribed_topic_names"] = tuple(sorted(set(req.subscribed_topic_names)))
        changes["client_id"], changes["client_host"] = req.client_id, req.client_host
        metadata = replace(member.metadata, **changes)
        if metadata != member.metadata:
            updated = member.with_metadata(metadata)
            self.emit_metadata(gid, updated)
            if metadata.subscribed_topic_names != member.metadata.subscribed_topic_names:
                self.epochs.mark(gid, "member subscription changed", updated)
        self.epochs.mark(gid, None)
        self.sessions.reset_session(gid, member.member_id)

    def _reply(self, req: m.ShareGroupHeartbeatRequest) -> m.ShareGroupHeartbeatResponse:
        """Move the member to its target at the assignment epoch and answer; the assignment
        is sent on a join and whenever it or the member's epoch changed."""
        group = self.group_of(req.group_id)
        assert group is not None
        member = group.members[req.member_id]
        target = group.target.get(member.member_id, group.NO_TARGET).partitions
        epoch = group.assignment_epoch
        before = member.current
        if before.member_epoch != epoch or before.assigned_partitions != target:
            member = member.with_assignment(
                replace(before, member_epoch=epoch, previous_member_epoch=before.member_epoch,
                        state=STABLE, assigned_partitions=target)
            )
            self.emit_assignment(req.group_id, member)
        resp = m.ShareGroupHeartbeatResponse(
            member_id=member.member_id,
            member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.sessions.heartbeat_interval_ms(req.group_id),
        )
        if req.member_epoch != member.member_epoch or member.current != before:
            resp.assignment = m.ShareGroupAssignment(to_wire(target))
        return resp

    # ------------------------------------------------------------------ leave and fence

    def fence(self, group: ShareGroup, member_id: str, reason: str = "member removed") -> None:
        """Remove a member (it left or timed out): its records go back to the share-partitions,
        its three records are deleted, and the group rebalances (with an assignment interval,
        at the group's next heartbeat, as Kafka 4.4's ``shareGroupFenceMember``:
        ``EpochTurn.computes_at_fence``)."""
        member = group.members.get(member_id)
        self.partitions.release_member(group, member_id)
        self.remove_member_records(group.group_id, member_id)
        self.epochs.mark(group.group_id, reason, member,
                         compute=self.epochs.computes_at_fence(group))

    # ------------------------------------------------------------------ events

    def on_timer(self, key: ShareTimer) -> None:
        if isinstance(key, ShareLockExpiry):
            self.partitions.on_lock_expiry(key)
        elif isinstance(key, ShareInitialization):
            group = self.group_of(key.group_id)
            if group is not None and self.initializations.on_timer(group):
                self.epochs.mark(group.group_id, INITIALIZED)
        else:
            self.sessions.on_timer(key)

    def on_metadata(self, groups: list[ShareGroup]) -> None:
        """Topics created, deleted or grown: a group whose target would change rebalances;
        the share-partitions of a deleted topic are deleted with it, as Kafka deletes their
        share-group state."""
        for group in groups:
            self.partitions.forget_deleted_topics(group)
            self.initializations.forget_deleted_topics(group)
            if group.members and self.epochs.changed_target(group):
                self.epochs.mark(group.group_id, "subscribed topic metadata changed")

    def replay(self, record: Record) -> None:
        key = record.key
        gid = key.group_id  # type: ignore[attr-defined]
        if type(key) is self.records.group and record.value is None:
            group = self.group_of(gid)
            if group is not None:
                self.partitions.forget_group(group)
                del self.ctx.groups[gid]
            return
        group = self.group_of(gid)
        if group is None:
            group = self.ctx.groups[gid] = ShareGroup(gid)
        before = group.members.get(getattr(key, "member_id", None) or "")
        group.replay(record)
        self.sessions.after_replay(group, record, before)
        self.partitions.after_replay(group, record)
        self.initializations.after_replay(group, record)


def validate_heartbeat(req: m.ShareGroupHeartbeatRequest) -> None:
    """Kafka's ShareGroupHeartbeat checks (INVALID_REQUEST), before anything else runs."""
    check_types(req)
    if not req.group_id:
        raise invalid_request("GroupId can't be empty.")
    if not req.member_id:
        raise invalid_request("MemberId can't be empty: a share consumer chooses its own.")
    if req.member_epoch < LEAVE_EPOCH:
        raise invalid_request("MemberEpoch is invalid: share members join with 0, leave with -1.")
    if req.rack_id is not None and not req.rack_id:
        raise invalid_request("RackId can't be empty.")
    if req.member_epoch == JOIN_EPOCH and not req.subscribed_topic_names:
        raise invalid_request("SubscribedTopicNames must be set in first request.")
