"""The rules of classic groups: JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups.

This is the classic half of Kafka's ``GroupMetadataManager``, with seed 003's failover rules
and KIP-800's join reasons. A rebalance is two phases. In the join phase
(PreparingRebalance) every member's JoinGroup reply is *delayed*: it is answered, through
``ctx.complete``, once every known member has rejoined or the rebalance timeout has passed;
meanwhile the member's failure detection is paused (seed 003). Completing the join phase
starts a generation, persisted with its membership as one record *before* the replies go out
(seed 003, failure point 4). In the sync phase (CompletingRebalance) followers' SyncGroup
replies wait for the leader's assignment, which is persisted the same way.

Why a rebalance happened is kept per group (KIP-800: "memorize the cause of the state
transition to PrepareRebalance"), bounded, persisted in its own record so that it survives the
group's conversion between protocols.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_subscription,
)
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.consumer.group import ConsumerGroup
from protocol.context import ShardContext
from protocol.error_responses import error_response
from protocol.errors import CoordinatorError, Errors
from protocol.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    GroupRebalanceHistoryKey,
    GroupRebalanceHistoryValue,
    RebalanceCauseEntry,
    Record,
    TopicMetadataEntry,
)
from protocol.validation import check_types


def join_key(group_id: str) -> tuple[str, str]:
    return ("classic-join", group_id)


def sync_key(group_id: str) -> tuple[str, str]:
    return ("classic-sync", group_id)


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("classic-session", group_id, member_id)


def pending_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("classic-pending", group_id, member_id)


class ClassicGroupRules:
    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx
        # group id -> why it rebalanced, oldest first (kept apart from the group object: it
        # outlives a conversion to the new protocol and back).
        self.history: dict[str, list[RebalanceCauseEntry]] = {}
        # Set by the shard: classic members of KIP-848 groups (online migration).
        self.in_consumer_group = None

    # ================================================================== JoinGroup

    def join(self, req: m.JoinGroupRequest) -> m.JoinGroupResponse | None:
        check_types(req)
        self._validate_join(req)
        existing = self.ctx.groups.get(req.group_id)
        if isinstance(existing, ConsumerGroup):
            return self.in_consumer_group.join(existing, req)
        group = existing
        if group is None:
            if req.member_id:
                raise CoordinatorError(
                    Errors.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {req.group_id}.",
                )
            group = ClassicGroup(req.group_id, state_timestamp_ms=self.ctx.now_ms)
        protocols = _protocols(req)
        if not group.supports(req.protocol_type, protocols):
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                f"The group's members support no protocol in common with {req.member_id or 'the'}"
                f" joining member (protocol type {req.protocol_type!r}).",
            )
        if existing is None:
            # Written at once, as Kafka does, so the group outlives a failover from the start.
            self.ctx.groups[req.group_id] = group
            self._persist(group)
        if not req.member_id:
            return self._join_unknown(group, req)
        return self._join_known(group, req)

    def _validate_join(self, req: m.JoinGroupRequest) -> None:
        cfg = self.ctx.config
        if not req.group_id:
            raise CoordinatorError(Errors.INVALID_GROUP_ID, "The group id must not be empty.")
        if (
            not cfg.group_min_session_timeout_ms
            <= req.session_timeout_ms
            <= (cfg.group_max_session_timeout_ms)
        ):
            raise CoordinatorError(
                Errors.INVALID_SESSION_TIMEOUT,
                f"The session timeout {req.session_timeout_ms} ms is outside the broker's "
                f"[{cfg.group_min_session_timeout_ms}, {cfg.group_max_session_timeout_ms}] ms.",
            )
        if req.rebalance_timeout_ms < -1:
            raise CoordinatorError(Errors.INVALID_REQUEST, "The rebalance timeout is negative.")
        if not req.protocol_type or not req.protocols:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                "A JoinGroup needs a protocol type and at least one protocol.",
            )
        if req.group_instance_id == "":
            raise CoordinatorError(Errors.INVALID_REQUEST, "The group instance id is empty.")
        if req.reason is not None and req.reason not in cg.JOIN_REASONS:
            raise CoordinatorError(
                Errors.INVALID_REQUEST,
                f"Unknown join reason {req.reason!r}; expected one of {list(cg.JOIN_REASONS)}.",
            )

    def _join_unknown(
        self, group: ClassicGroup, req: m.JoinGroupRequest
    ) -> m.JoinGroupResponse | None:
        iid = req.group_instance_id
        if iid is not None:
            new_id = self._new_member_id(iid, group)
            holder = group.member_by_instance(iid)
            if holder is not None:
                return self._static_rejoin(group, holder, new_id, req)
            self._check_size(group)
            return self._add_and_join(group, new_id, req)
        self._check_size(group)
        new_id = self._new_member_id(req.client_id or "consumer", group)
        # KIP-394: a member first learns its id, so a retried JoinGroup cannot add a ghost.
        group.pending_members.add(new_id)
        self.ctx.timers.schedule(
            pending_key(group.group_id, new_id), self.ctx.now_ms + req.session_timeout_ms
        )
        return m.JoinGroupResponse(
            error_code=Errors.MEMBER_ID_REQUIRED,
            error_message="The group requires a member id: rejoin with the one given.",
            member_id=new_id,
        )

    def _join_known(
        self, group: ClassicGroup, req: m.JoinGroupRequest
    ) -> m.JoinGroupResponse | None:
        mid = req.member_id
        if mid in group.pending_members:
            self._check_size(group)
            return self._add_and_join(group, mid, req)
        member = self._existing(group, mid, req.group_instance_id)
        protocols = _protocols(req)
        if group.state == cg.PREPARING_REBALANCE:
            self._update(member, req)
            self._await_join(group, member, req)
            self._maybe_complete_join(group)
            return None
        if group.state == cg.COMPLETING_REBALANCE:
            if member.matches(protocols) and not group.loaded:
                self._reset_session(group, member)
                return self._join_response(group, member)  # its reply was lost: resend
            self._update(member, req)
            self._await_join(group, member, req)
            reason = "member rejoined after failover" if group.loaded else "member metadata changed"
            self._prepare_rebalance(group, reason, member)
            return None
        if group.state == cg.STABLE:
            cause = self._rebalance_cause(group, member, req)
            if cause is None:
                self._reset_session(group, member)
                return self._join_response(group, member, skip=mid == group.leader_id)
            self._update(member, req)
            self._await_join(group, member, req)
            self._prepare_rebalance(group, cause, member)
            return None
        raise CoordinatorError(
            Errors.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {group.group_id}."
        )

    def _rebalance_cause(
        self, group: ClassicGroup, member: ClassicMember, req: m.JoinGroupRequest
    ) -> str | None:
        """KIP-800: does a known member rejoining a Stable group need a rebalance?

        Changed protocols always do (the reason ranks below the existing checks). Then the
        reason decides: ``restart`` never, ``upgrade`` always, ``topic_metadata_change`` when
        the leader says so. Without a reason, Kafka's rule: the leader rejoining does, a
        follower with unchanged metadata does not.
        """
        if not member.matches(_protocols(req)):
            return "member metadata changed"
        if req.reason == cg.RESTART:
            return None
        if req.reason == cg.UPGRADE:
            return "member upgrade"
        if member.member_id == group.leader_id:
            if req.reason == cg.TOPIC_METADATA_CHANGE:
                return "topic metadata changed (leader)"
            return "leader rejoined"
        return None

    def _static_rejoin(
        self, group: ClassicGroup, old: ClassicMember, new_id: str, req: m.JoinGroupRequest
    ) -> m.JoinGroupResponse | None:
        """A static member back under a new member id takes its old place (KIP-345); the old
        id is fenced. In a Stable group with unchanged metadata no rebalance follows, unless
        the reason asks for one (KIP-800)."""
        changed = not old.matches(_protocols(req))
        was_leader = old.member_id == group.leader_id
        for pending in (old.awaiting_join, old.awaiting_sync):
            if pending is not None:
                message = f"Another member took instance id {old.group_instance_id}."
                self._fail(pending, Errors.FENCED_INSTANCE_ID, message)
        old.awaiting_join = old.awaiting_sync = None
        self.ctx.timers.cancel(session_key(group.group_id, old.member_id))
        member = group.replace_static(old.member_id, new_id)
        if group.state == cg.PREPARING_REBALANCE:
            self._update(member, req)
            self._await_join(group, member, req)
            self._maybe_complete_join(group)
            return None
        cause: str | None = None
        if changed:
            cause = "static member rejoined with new metadata"
        elif req.reason == cg.UPGRADE:
            cause = "member upgrade"
        elif req.reason == cg.TOPIC_METADATA_CHANGE and was_leader:
            cause = "topic metadata changed (leader)"
        elif group.state == cg.COMPLETING_REBALANCE:
            # The leader may be assigning to the old id right now: start over (Kafka does).
            cause = "static member replaced during the sync phase"
        if cause is not None:
            self._update(member, req)
            self._await_join(group, member, req)
            self._prepare_rebalance(group, cause, member)
            return None
        # Same place, same assignment: persist the new id so the old one stays fenced.
        self._update(member, req, keep_protocols=True)
        self._persist(group)
        self._reset_session(group, member)
        return self._join_response(group, member, skip=was_leader)

    def _add_and_join(self, group: ClassicGroup, member_id: str, req: m.JoinGroupRequest) -> None:
        group.pending_members.discard(member_id)
        self.ctx.timers.cancel(pending_key(group.group_id, member_id))
        member = ClassicMember(
            member_id=member_id,
            group_instance_id=req.group_instance_id,
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=_rebalance_timeout(req),
            session_timeout_ms=req.session_timeout_ms,
            protocol_type=req.protocol_type,
            protocols=_protocols(req),
            is_new=True,
        )
        group.add(member)
        group.new_member_added = True
        self._await_join(group, member, req)
        if group.state == cg.PREPARING_REBALANCE:
            self._maybe_complete_join(group)
        else:
            self._prepare_rebalance(group, "new member joined", member)
        return None

    def _check_size(self, group: ClassicGroup) -> None:
        limit = self.ctx.config.group_max_size
        if len(group.members) >= limit:
            raise CoordinatorError(
                Errors.GROUP_MAX_SIZE_REACHED,
                f"The classic group has reached its maximum size of {limit} members.",
            )

    def _existing(
        self, group: ClassicGroup, member_id: str, instance_id: str | None
    ) -> ClassicMember:
        if instance_id is not None:
            holder = group.static_members.get(instance_id)
            if holder is not None and holder != member_id:
                raise CoordinatorError(
                    Errors.FENCED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} was replaced "
                    f"by member {holder}.",
                )
        member = group.members.get(member_id)
        if member is None or (instance_id is not None and member.group_instance_id != instance_id):
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID,
                f"Member {member_id} is not a member of group {group.group_id}.",
            )
        return member

    def _update(
        self, member: ClassicMember, req: m.JoinGroupRequest, keep_protocols: bool = False
    ) -> None:
        member.client_id = req.client_id or member.client_id
        member.client_host = req.client_host or member.client_host
        member.session_timeout_ms = req.session_timeout_ms
        member.rebalance_timeout_ms = _rebalance_timeout(req)
        if not keep_protocols:
            member.protocols = _protocols(req)

    def _await_join(
        self, group: ClassicGroup, member: ClassicMember, req: m.JoinGroupRequest
    ) -> None:
        if member.awaiting_join is not None and member.awaiting_join is not req:
            message = "A newer JoinGroup from the same member replaced this one."
            self._fail(member.awaiting_join, Errors.REBALANCE_IN_PROGRESS, message, member)
        member.awaiting_join = req
        # Seed 003: no failure detection between a JoinGroup and its reply.
        self.ctx.timers.cancel(session_key(group.group_id, member.member_id))

    def _join_response(
        self, group: ClassicGroup, member: ClassicMember, skip: bool = False
    ) -> m.JoinGroupResponse:
        leader = member.member_id == group.leader_id
        return m.JoinGroupResponse(
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=group.leader_id or "",
            skip_assignment=skip,
            member_id=member.member_id,
            members=[
                m.JoinGroupResponseMember(
                    mem.member_id, mem.group_instance_id, mem.metadata_for(group.protocol_name)
                )
                for mem in group.members.values()
            ]
            if leader
            else [],
        )

    # ================================================================== the join phase

    def _prepare_rebalance(
        self, group: ClassicGroup, reason: str, member: ClassicMember | None = None
    ) -> None:
        gid = group.group_id
        if group.state == cg.COMPLETING_REBALANCE:
            self._fail_pending_syncs(group)
        self.ctx.timers.cancel(sync_key(gid))
        was_empty = group.state == cg.EMPTY
        group.state = cg.PREPARING_REBALANCE
        group.state_timestamp_ms = self.ctx.now_ms
        self._remember(group, reason, member)
        timeout = group.rebalance_timeout_ms()
        delay = min(self.ctx.config.group_initial_rebalance_delay_ms, timeout)
        if was_empty and delay > 0:
            # An empty group waits a little for more members, so they join in one rebalance.
            group.initial_delay = True
            group.initial_delay_remaining_ms = timeout - delay
            group.new_member_added = False
            self.ctx.timers.schedule(join_key(gid), self.ctx.now_ms + delay)
            return
        group.initial_delay = False
        self.ctx.timers.schedule(join_key(gid), self.ctx.now_ms + timeout)
        self._maybe_complete_join(group)

    def _remember(self, group: ClassicGroup, reason: str, member: ClassicMember | None) -> None:
        self.remember(
            group.group_id,
            group.generation_id,
            reason,
            member.member_id if member is not None else None,
            member.group_instance_id if member is not None else None,
        )

    def remember(
        self,
        group_id: str,
        generation_id: int,
        reason: str,
        member_id: str | None = None,
        instance_id: str | None = None,
    ) -> None:
        """Keep why a group rebalances (a classic group entering PreparingRebalance, or a
        consumer group's epoch bump), bounded, as a record of its own."""
        cause = RebalanceCauseEntry(self.ctx.now_ms, generation_id, reason, member_id, instance_id)
        causes = [*self.history.get(group_id, ()), cause]
        causes = causes[-self.ctx.config.group_rebalance_history_max :]
        self.ctx.emit(
            Record(GroupRebalanceHistoryKey(group_id), GroupRebalanceHistoryValue(tuple(causes)))
        )

    def _maybe_complete_join(self, group: ClassicGroup) -> None:
        if group.state == cg.PREPARING_REBALANCE and not group.initial_delay and group.all_joined():
            self._complete_join(group)

    def _complete_join(self, group: ClassicGroup) -> None:
        """End the join phase: drop who did not rejoin, start the next generation, persist
        it, and only then (the runtime holds replies until the record is durable) answer."""
        gid = group.group_id
        self.ctx.timers.cancel(join_key(gid))
        for member in [mem for mem in group.members.values() if mem.awaiting_join is None]:
            self._drop(group, member)
        group.generation_id += 1
        group.state_timestamp_ms = self.ctx.now_ms
        group.loaded = False
        group.initial_delay = False
        if not group.members:
            group.state = cg.EMPTY
            group.protocol_name = None
            group.leader_id = None
            group.topics = ()
            self._persist(group)
            return
        group.protocol_name = group.select_protocol()
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.state = cg.COMPLETING_REBALANCE
        for member in group.members.values():
            member.assignment = b""
        group.topics = self._subscribed_topics(group)
        self._persist(group)
        for member in group.members.values():
            request, member.awaiting_join = member.awaiting_join, None
            member.is_new = False
            self.ctx.complete(request, self._join_response(group, member))
            self._reset_session(group, member)
        self.ctx.timers.schedule(sync_key(gid), self.ctx.now_ms + group.rebalance_timeout_ms())

    def _fail_pending_syncs(self, group: ClassicGroup) -> None:
        for member in group.members.values():
            if member.awaiting_sync is not None:
                request, member.awaiting_sync = member.awaiting_sync, None
                self._reset_session(group, member)  # it gets a full session to rejoin
                message = "The group began another rebalance: rejoin."
                self._fail(request, Errors.REBALANCE_IN_PROGRESS, message)

    # ================================================================== SyncGroup

    def sync(self, req: m.SyncGroupRequest) -> m.SyncGroupResponse | None:
        check_types(req)
        group = self._group_for(req.group_id, req.member_id)
        if isinstance(group, ConsumerGroup):
            return self.in_consumer_group.sync(group, req)
        member = self._existing(group, req.member_id, req.group_instance_id)
        if req.generation_id != group.generation_id:
            raise _illegal_generation(req.generation_id, group)
        if (req.protocol_type is not None and req.protocol_type != group.protocol_type) or (
            req.protocol_name is not None and req.protocol_name != group.protocol_name
        ):
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                f"The group uses protocol {group.protocol_type}/{group.protocol_name}.",
            )
        if group.state == cg.PREPARING_REBALANCE:
            raise CoordinatorError(Errors.REBALANCE_IN_PROGRESS, "The group is rebalancing.")
        if group.state == cg.STABLE:
            self._reset_session(group, member)
            return self._sync_response(group, member)
        if group.state != cg.COMPLETING_REBALANCE:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID, f"Group {group.group_id} has no generation running."
            )
        self._reset_session(group, member)
        if member.awaiting_sync is not None and member.awaiting_sync is not req:
            message = "A newer SyncGroup from the same member replaced this one."
            self._fail(member.awaiting_sync, Errors.REBALANCE_IN_PROGRESS, message)
        member.awaiting_sync = req
        if member.member_id != group.leader_id:
            return None
        assignments: dict[str, bytes] = {}
        for a in req.assignments:
            assignments.setdefault(a.member_id, a.assignment)
        for mem in group.members.values():
            mem.assignment = assignments.get(mem.member_id, b"")
        group.state = cg.STABLE
        group.state_timestamp_ms = self.ctx.now_ms
        self.ctx.timers.cancel(sync_key(group.group_id))
        self._persist(group)
        for mem in group.members.values():
            if mem.awaiting_sync is not None:
                request, mem.awaiting_sync = mem.awaiting_sync, None
                self.ctx.complete(request, self._sync_response(group, mem))
        return None

    @staticmethod
    def _sync_response(group: ClassicGroup, member: ClassicMember) -> m.SyncGroupResponse:
        return m.SyncGroupResponse(
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            assignment=member.assignment,
        )

    # ================================================================== Heartbeat

    def heartbeat(self, req: m.HeartbeatRequest) -> m.HeartbeatResponse:
        check_types(req)
        group = self._group_for(req.group_id, req.member_id)
        if isinstance(group, ConsumerGroup):
            return self.in_consumer_group.heartbeat(group, req)
        member = self._existing(group, req.member_id, req.group_instance_id)
        if group.state == cg.EMPTY:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID, f"Group {group.group_id} has no members."
            )
        if req.generation_id != group.generation_id:
            raise _illegal_generation(req.generation_id, group)
        if member.awaiting_join is None:
            self._reset_session(group, member)
        if group.state == cg.PREPARING_REBALANCE:
            return m.HeartbeatResponse(
                error_code=Errors.REBALANCE_IN_PROGRESS,
                error_message="The group is rebalancing: rejoin.",
            )
        return m.HeartbeatResponse()

    # ================================================================== LeaveGroup

    def leave(self, req: m.LeaveGroupRequest) -> m.LeaveGroupResponse:
        check_types(req)
        if not req.group_id:
            raise CoordinatorError(Errors.INVALID_GROUP_ID, "The group id must not be empty.")
        if not req.members:
            raise CoordinatorError(
                Errors.INVALID_REQUEST, "A LeaveGroup names at least one member."
            )
        group = self.ctx.groups.get(req.group_id)
        if isinstance(group, ConsumerGroup):
            return self.in_consumer_group.leave(group, req)
        if group is None:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID, f"Group {req.group_id} has no members."
            )
        results = []
        left: list[tuple[ClassicMember, str | None]] = []
        for identity in req.members:
            error = self._leave_one(group, identity, left)
            results.append(
                m.LeaveGroupResponseMember(identity.member_id, identity.group_instance_id, error)
            )
        if left:
            member, reason = left[0]
            if group.state in (cg.STABLE, cg.COMPLETING_REBALANCE):
                self._prepare_rebalance(
                    group, f"member left the group: {reason or 'no reason given'}", member
                )
            else:
                self._maybe_complete_join(group)
        else:
            self._maybe_complete_join(group)  # a pending member's leave may end the join phase
        return m.LeaveGroupResponse(members=results)

    def _leave_one(self, group: ClassicGroup, identity: m.MemberIdentity, left: list) -> Errors:
        mid, iid = identity.member_id, identity.group_instance_id
        if iid is None and mid in group.pending_members:
            group.pending_members.discard(mid)
            self.ctx.timers.cancel(pending_key(group.group_id, mid))
            return Errors.NONE
        if iid is not None:
            holder = group.static_members.get(iid)
            if holder is None:
                return Errors.UNKNOWN_MEMBER_ID
            if mid and mid != holder:
                return Errors.FENCED_INSTANCE_ID
            mid = holder
        member = group.members.get(mid)
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        self._drop(group, member)
        left.append((member, identity.reason))
        return Errors.NONE

    def _drop(self, group: ClassicGroup, member: ClassicMember) -> None:
        """Remove a member; a reply it still waits for is answered UNKNOWN_MEMBER_ID."""
        group.remove(member.member_id)
        self.ctx.timers.cancel(session_key(group.group_id, member.member_id))
        for pending in (member.awaiting_join, member.awaiting_sync):
            if pending is not None:
                message = "The member was removed from the group."
                self._fail(pending, Errors.UNKNOWN_MEMBER_ID, message, member)
        member.awaiting_join = member.awaiting_sync = None

    # ================================================================== DescribeGroups

    def describe(self, req: m.DescribeGroupsRequest) -> m.DescribeGroupsResponse:
        check_types(req)
        out = []
        for gid in req.groups:
            group = self.ctx.groups.get(gid)
            history = [m.RebalanceCause(**vars(c)) for c in self.history.get(gid, ())]
            if isinstance(group, ClassicGroup):
                out.append(self._describe_classic(group, history))
            elif isinstance(group, ConsumerGroup):
                out.append(self.in_consumer_group.describe(group, history))
            else:
                out.append(
                    m.DescribeGroupsResponseGroup(
                        error_code=Errors.GROUP_ID_NOT_FOUND,
                        error_message=f"Group {gid} not found.",
                        group_id=gid,
                        group_state=cg.DEAD,
                    )
                )
        return m.DescribeGroupsResponse(groups=out)

    @staticmethod
    def _describe_classic(group: ClassicGroup, history: list) -> m.DescribeGroupsResponseGroup:
        return m.DescribeGroupsResponseGroup(
            group_id=group.group_id,
            group_state=group.state,
            protocol_type=group.protocol_type or "",
            protocol_data=group.protocol_name or "",
            members=[
                m.DescribedGroupMember(
                    member_id=mem.member_id,
                    group_instance_id=mem.group_instance_id,
                    client_id=mem.client_id,
                    client_host=mem.client_host,
                    member_metadata=mem.metadata_for(group.protocol_name),
                    member_assignment=mem.assignment,
                )
                for mem in group.members.values()
            ],
            generation_id=group.generation_id,
            leader=group.leader_id or "",
            rebalance_history=history,
        )

    # ================================================================== timers

    def on_timer(self, key: tuple) -> None:
        kind, gid = key[0], key[1]
        group = self.ctx.classic_group(gid)
        if group is None:
            return
        if kind == "classic-join":
            self._on_join_deadline(group)
        elif kind == "classic-sync":
            self._on_sync_deadline(group)
        elif kind == "classic-session":
            member = group.members.get(key[2])
            if member is None or member.awaiting_join is not None:
                return
            if member.awaiting_sync is not None:
                # Waiting on the leader's assignment counts as alive (Kafka's rule).
                self._reset_session(group, member)
                return
            self._drop(group, member)
            self._after_removal(group, "member session timed out", member)
        elif kind == "classic-pending":
            group.pending_members.discard(key[2])
            self._maybe_complete_join(group)

    def _on_join_deadline(self, group: ClassicGroup) -> None:
        if group.state != cg.PREPARING_REBALANCE:
            return
        if group.initial_delay:
            if group.new_member_added and group.initial_delay_remaining_ms > 0:
                # Members keep arriving: wait a little longer, within the rebalance timeout.
                delay = min(
                    self.ctx.config.group_initial_rebalance_delay_ms,
                    group.initial_delay_remaining_ms,
                )
                group.initial_delay_remaining_ms -= delay
                group.new_member_added = False
                self.ctx.timers.schedule(join_key(group.group_id), self.ctx.now_ms + delay)
                return
            group.initial_delay = False
        self._complete_join(group)

    def _on_sync_deadline(self, group: ClassicGroup) -> None:
        if group.state != cg.COMPLETING_REBALANCE:
            return
        laggards = [mem for mem in group.members.values() if mem.awaiting_sync is None]
        for member in laggards:
            self._drop(group, member)
        self._prepare_rebalance(group, "members did not send SyncGroup in time")

    def _after_removal(self, group: ClassicGroup, reason: str, member: ClassicMember) -> None:
        if group.state in (cg.STABLE, cg.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason, member)
        else:
            self._maybe_complete_join(group)

    def _reset_session(self, group: ClassicGroup, member: ClassicMember) -> None:
        self.ctx.timers.schedule(
            session_key(group.group_id, member.member_id),
            self.ctx.now_ms + member.session_timeout_ms,
        )

    # ================================================================== metadata

    def on_metadata(self, groups: list[ClassicGroup]) -> None:
        """Seed 003, failure point 1: partitions or topics of the subscription changed since
        the generation began (also when nobody noticed before a failover): rebalance."""
        for group in groups:
            if (
                group.state in (cg.STABLE, cg.COMPLETING_REBALANCE)
                and group.protocol_type == PROTOCOL_TYPE
                and self._subscribed_topics(group) != group.topics
            ):
                self._prepare_rebalance(group, "topic metadata changed (coordinator)")

    def _subscribed_topics(self, group: ClassicGroup) -> tuple[TopicMetadataEntry, ...]:
        if group.protocol_type != PROTOCOL_TYPE:
            return ()
        names: set[str] = set()
        for member in group.members.values():
            try:
                names.update(decode_subscription(member.metadata_for(group.protocol_name)).topics)
            except ConsumerProtocolError:
                continue  # opaque to the coordinator; the leader still sees it
        entries = []
        for name in sorted(names):
            t = self.ctx.image.topic_by_name(name)
            if t is not None:
                entries.append(
                    TopicMetadataEntry(t.topic_id, t.name, t.num_partitions, t.racks_digest())
                )
        return tuple(entries)

    # ================================================================== records

    def _persist(self, group: ClassicGroup) -> None:
        self.ctx.emit(Record(GroupMetadataKey(group.group_id), group.to_record()))

    def replay(self, record: Record) -> None:
        key, value = record.key, record.value
        if isinstance(key, GroupRebalanceHistoryKey):
            if value is None:
                self.history.pop(key.group_id, None)
            else:
                self.history[key.group_id] = list(value.causes)
            return
        assert isinstance(key, GroupMetadataKey)
        group = self.ctx.classic_group(key.group_id)
        if value is None:
            if group is not None:
                del self.ctx.groups[key.group_id]
                for member_id in group.members:
                    self.ctx.timers.cancel(session_key(key.group_id, member_id))
                self.ctx.timers.cancel(join_key(key.group_id))
                self.ctx.timers.cancel(sync_key(key.group_id))
            return
        assert isinstance(value, GroupMetadataValue)
        if group is None:
            # A group known only from its records: a new coordinator took it over (seed 003).
            group = ClassicGroup(key.group_id, loaded=True)
            self.ctx.groups[key.group_id] = group
        group.replay(value)
        if group.state == cg.PREPARING_REBALANCE:
            group.state = cg.STABLE  # never persisted so; defensive for foreign logs
        # Loading: every member's session starts now, and a sync phase gets its deadline.
        # (Live, these timers exist already, except for members still awaiting their reply.)
        for member in group.members.values():
            if member.awaiting_join is None and (
                session_key(group.group_id, member.member_id) not in self.ctx.timers
            ):
                self._reset_session(group, member)
        if group.state == cg.COMPLETING_REBALANCE and sync_key(group.group_id) not in (
            self.ctx.timers
        ):
            self.ctx.timers.schedule(
                sync_key(group.group_id), self.ctx.now_ms + group.rebalance_timeout_ms()
            )

    def start_after_downgrade(self, group: ClassicGroup) -> None:
        """A group just converted back from the new protocol: its members rejoin as a classic
        group (Kafka prepares a rebalance at once)."""
        for member in group.members.values():
            self._reset_session(group, member)
        self._prepare_rebalance(group, "downgrade to the classic protocol")

    # ================================================================== helpers

    def _group_for(self, group_id: str, member_id: str) -> ClassicGroup | ConsumerGroup:
        if not group_id:
            raise CoordinatorError(Errors.INVALID_GROUP_ID, "The group id must not be empty.")
        group = self.ctx.groups.get(group_id)
        if group is None:
            raise CoordinatorError(
                Errors.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group {group_id}."
            )
        return group

    def _fail(
        self,
        pending: object,
        error: Errors,
        message: str,
        member: ClassicMember | None = None,
    ) -> None:
        """End a waiting JoinGroup or SyncGroup with an error (a JoinGroup keeps telling
        the member its id)."""
        reply = error_response(pending, error, message)
        if member is not None and isinstance(reply, m.JoinGroupResponse):
            reply.member_id = member.member_id
        self.ctx.complete(pending, reply)

    def _new_member_id(self, prefix: str, group: ClassicGroup | None = None) -> str:
        """Random ids can repeat (a reloaded shard may reuse its seed): never hand out one
        the group already uses."""
        while True:
            member_id = f"{prefix}-{self.ctx.new_member_id()}"
            if group is None or (
                member_id not in group.members and member_id not in group.pending_members
            ):
                return member_id


def _protocols(req: m.JoinGroupRequest) -> list[tuple[str, bytes]]:
    return [(p.name, p.metadata) for p in req.protocols]


def _rebalance_timeout(req: m.JoinGroupRequest) -> int:
    """JoinGroup v0 had no rebalance timeout: the session timeout served as both."""
    return req.session_timeout_ms if req.rebalance_timeout_ms == -1 else req.rebalance_timeout_ms


def _illegal_generation(generation: int, group: ClassicGroup) -> CoordinatorError:
    return CoordinatorError(
        Errors.ILLEGAL_GENERATION,
        f"Generation {generation} is not the group's current generation {group.generation_id}.",
    )
