"""The membership rules of streams groups (KIP-1071), as Kafka 4.4's ``streamsGroupHeartbeat``.

A heartbeat is handled in the two steps of a turn (``admit``, then ``complete``: the heartbeats
of one turn share one epoch bump and one target computation per group):

* ``admit`` validates (``validation``), finds the group and the member (epoch 0 joins, -1
  leaves, -2 leaves for a while keeping its place; a static member's new process takes the
  place of the old one; a wrong epoch is FENCED_MEMBER_EPOCH), checks the topology against
  the group's (a join initializes it), configures it against the metadata image
  (``topology.configure``), checks the owned tasks, and only then writes anything: the
  member's metadata, the topology, and the reasons to bump the group epoch (a new member, a
  changed member, a new topology, changed topics, a topology that became ready, changed
  assignment configs);
* ``complete`` reconciles the member toward its target (``reconcile``) and answers: tasks on
  a join or a change, the status list (STALE_TOPOLOGY, the topology's MISSING_SOURCE_TOPICS /
  INCORRECTLY_PARTITIONED_TOPICS / MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION,
  ASSIGNMENT_DELAYED), the endpoints of every member when the member's endpoint epoch is
  behind, and (off the wire) the internal topics to create.

The target is the sticky task assignor's (``assignors.streams``) at the group epoch; empty
while the topology is not ready.

The initial rebalance delay is Kafka 4.4's: a heartbeat to an empty group schedules the delay's
timer (``streams.initial.rebalance.delay.ms`` > 0, unless it is already scheduled). While it is
scheduled no target is computed (``StreamsEpochs.compute``): the group epoch moves on, the
assignment epoch stays, and every heartbeat reconciles against an empty target at the
assignment epoch (at least 1) and is told ASSIGNMENT_DELAYED. When it fires, the target is
computed at the group epoch of the group then (``on_timer``, Kafka's
``computeDelayedTargetAssignment``), and the members reconcile toward it on their next
heartbeats. The timer is soft state: a restarted shard has none, and the group's next
heartbeat computes the target.

KIP-1263's assignment interval holds a bumped group's target back until the interval since
the last computation is over (``StreamsEpochs``); meanwhile every heartbeat reconciles toward
the current target at the assignment epoch (a new member: nothing) and is told
ASSIGNMENT_DELAYED "due to the configured assignment interval", as Kafka 4.4's. The end of the
initial delay computes through the same gate, as Kafka's timer does.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from protocol.classic.records import GroupMetadataKey
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors, invalid_request
from protocol.modern.rules import Admitted, ModernRules
from protocol.records import Record
from protocol.streams import messages as sm
from protocol.streams.describe import describe_groups
from protocol.streams.endpoints import endpoints
from protocol.streams.group import GROUP_TYPE, StreamsGroup
from protocol.streams.member import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    StreamsGroupMember,
    StreamsMemberState,
    Tasks,
)
from protocol.streams.reconcile import reconcile, target_tasks
from protocol.streams.records import (
    KeyValue,
    StreamsGroupTopologyKey,
    StreamsGroupTopologyValue,
)
from protocol.streams.sessions import (
    StreamsInitialDelay,
    StreamsMemberTimers,
    StreamsTimer,
    setting,
)
from protocol.streams.status import (
    ASSIGNMENT_INTERVAL,
    INITIAL_DELAY,
    RACK_AWARE_ASSIGNMENT_TAGS,
    statuses,
)
from protocol.streams.target import StreamsEpochs
from protocol.streams.topology import Status, configure, metadata_hash
from protocol.streams.validation import validate_heartbeat

log = logging.getLogger(__name__)

# A member in these states that reports other tasks than it holds missed the reply that told
# it: it gets its tasks again (``_reply``).
BEHIND_STATES = (StreamsMemberState.STABLE, StreamsMemberState.UNREVOKED_TASKS)

NUM_STANDBY_REPLICAS = "num.standby.replicas"


def _owned(req: sm.StreamsGroupHeartbeatRequest) -> Tasks | None:
    if req.active_tasks is None:
        return None
    return Tasks.of(sm.task_map(req.active_tasks), sm.task_map(req.standby_tasks or []),
                    sm.task_map(req.warmup_tasks or []))


def _topology_value(t: sm.StreamsTopology) -> StreamsGroupTopologyValue:
    return StreamsGroupTopologyValue(t.epoch, tuple(sorted(t.subtopologies,
                                                           key=lambda s: s.subtopology_id)))


class StreamsGroupRules(ModernRules):
    """Every StreamsGroupHeartbeat, leave, session expiry, delay and metadata change of
    streams groups, and StreamsGroupDescribe."""

    GROUP, ASSIGNMENT = StreamsGroup, None

    def __init__(self, ctx: ShardContext) -> None:
        super().__init__(ctx)
        self.epochs = self.epoch_turn = StreamsEpochs(ctx)
        self.epochs.rules = self
        self.sessions = StreamsMemberTimers(ctx, self.fence)

    def max_size(self) -> int:
        return min(self.ctx.config.group_max_size, setting(self.ctx, "", "max_size"))

    def assignment_configs(self, group_id: str) -> tuple[KeyValue, ...]:
        """Kafka's ``streamsGroupAssignmentConfigs``, sorted by key: the standby count, and
        the rack-aware tags when there are any."""
        out = [KeyValue(NUM_STANDBY_REPLICAS,
                        str(setting(self.ctx, group_id, "num_standby_replicas")))]
        tags = self.ctx.config.group_streams_rack_aware_assignment_tags
        if tags:
            out.append(KeyValue(RACK_AWARE_ASSIGNMENT_TAGS, ",".join(tags)))
        return tuple(out)

    def configured(self, group: StreamsGroup):
        """The group's topology configured against the image now (computed once per change)."""
        if group.topology is None:
            return None
        if group.configured is None:
            group.configured = configure(group.topology, self.ctx.image)
        return group.configured

    # ------------------------------------------------------------------ requests

    def admit(self, req: sm.StreamsGroupHeartbeatRequest
              ) -> Admitted | sm.StreamsGroupHeartbeatResponse:
        validate_heartbeat(req)
        gid, mid, epoch = req.group_id, req.member_id, req.member_epoch
        joining = epoch == JOIN_EPOCH
        group = self.streams_group(gid, create=joining)
        if epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            # Kafka's streamsGroupLeave: a leaving member may still ask the application to
            # shut down; its reply names the member and the epoch only (interval 0).
            if group is not None and req.shutdown_application:
                group.shutdown_requested_by = mid
            self.leave(group, req)
            return sm.StreamsGroupHeartbeatResponse(member_id=mid, member_epoch=epoch)
        owned = _owned(req)
        member = group.members.get(mid) if group is not None else None
        holder = None
        if joining:
            holder = self.static_holder(group, mid, req.instance_id)
            if member is None and holder is None:
                self.check_size(group)
        else:
            member = self.existing_member(group, gid, mid, req.instance_id)
            self._check_epoch(member, epoch, owned)
        topology = group.topology if group is not None else None
        new_topology = None
        if req.topology is not None:
            requested = _topology_value(req.topology)
            if topology is None:
                new_topology = topology = requested
            elif requested.epoch > topology.epoch or (
                    requested.epoch == topology.epoch and requested != topology):
                raise invalid_request("Topology updates are not supported yet.")
        configured = None
        if topology is not None:
            configured = (self.configured(group) if new_topology is None
                          else configure(topology, self.ctx.image))
            if configured.ready:
                _check_tasks(configured, owned)
        # ---- nothing was written before this line; every refusal is above it.
        if group is None:
            if self.ctx.group_of(gid, "classic") is not None:  # offsets only: retire it
                self.ctx.emit(Record(GroupMetadataKey(gid), None))
            group = self.ctx.groups[gid] = StreamsGroup(gid)
        was_empty = not group.members
        if new_topology is not None:
            self.ctx.emit(Record(StreamsGroupTopologyKey(gid), new_topology))
            group.configured = configured
            self.epochs.mark(gid, "topology initialized")
        if holder is not None:
            member = self._replace_static(group, holder, mid, req)
        elif member is None:
            member = StreamsGroupMember(mid)
            self.emit_new_member(gid, member)
            self.epochs.mark(gid, "new member joined", member)
        elif joining and member.member_epoch != JOIN_EPOCH:
            member = member.moved_tasks(0, Tasks(), Tasks(), JOIN_EPOCH, -1)
            self.emit_assignment(gid, member)
            self.epochs.mark(gid, "member rejoined", member)
        self._update(req, group, member)
        if was_empty:
            self._start_delay(group)
        if configured is not None:
            if metadata_hash(topology, self.ctx.image) != group.metadata_hash:
                self.epochs.mark(gid, "topic metadata changed")
            if (configured.topology_epoch if configured.ready else -1) \
                    != group.validated_topology_epoch:
                self.epochs.mark(gid, "topology validated")
        if self.assignment_configs(gid) != group.last_assignment_configs:
            self.epochs.mark(gid, "assignment configs changed")
        if req.shutdown_application:
            group.shutdown_requested_by = mid
        if req.task_offsets is not None or req.task_end_offsets is not None:
            before = group.task_offsets.get(mid, ([], []))
            group.task_offsets[mid] = (
                list(req.task_offsets) if req.task_offsets is not None else before[0],
                list(req.task_end_offsets) if req.task_end_offsets is not None else before[1])
        self.epochs.mark(gid, None)
        self.sessions.reset_session(gid, mid)
        return Admitted(req, gid, mid)

    def complete(self, a: Admitted) -> sm.StreamsGroupHeartbeatResponse:
        req = a.request
        group = self.group_of(a.group_id)
        assert group is not None
        member = group.members[a.member_id]
        before = member
        delayed = None
        if self.delaying(group.group_id):  # Kafka: the assignment epoch (at least 1), no tasks
            delayed, target_epoch, target = INITIAL_DELAY, max(1, group.assignment_epoch), Tasks()
        else:  # the target now; the interval may have held a new one back (KIP-1263)
            if self.epochs.held_back(group):
                delayed = ASSIGNMENT_INTERVAL
            target_epoch = group.assignment_epoch
            target = target_tasks(group.target.get(member.member_id, group.NO_TARGET))
        member = reconcile(group, member, target_epoch, target, _owned(req))
        if member.current != before.current:
            self.emit_assignment(group.group_id, member)
        resp = sm.StreamsGroupHeartbeatResponse(
            member_id=member.member_id, member_epoch=member.member_epoch,
            heartbeat_interval_ms=self.sessions.heartbeat_interval_ms(group.group_id),
            acceptable_recovery_lag=self.ctx.config.group_streams_acceptable_recovery_lag,
            task_offset_interval_ms=self.ctx.config.group_streams_task_offset_interval_ms)
        # Kafka sends the tasks on a join or when this heartbeat changed them; Cohort also
        # when a member settled, or still to revoke, reports other tasks than it was given:
        # the reply that gave them, or told it what to give up, was lost (docs/decisions.md,
        # "A streams member behind by a lost reply").
        owned = _owned(req)
        behind = (owned is not None and member.current.state in BEHIND_STATES
                  and owned != member.tasks)
        if req.member_epoch == JOIN_EPOCH or behind or member.tasks != before.tasks:
            a_, s_, w_ = member.tasks.maps()
            resp.active_tasks = sm.task_ids(a_)
            resp.standby_tasks = sm.task_ids(s_)
            resp.warmup_tasks = sm.task_ids(w_)
            if member.metadata.user_endpoint is not None:
                group.endpoint_information_epoch += 1
        if group.endpoint_information_epoch != req.endpoint_information_epoch:
            resp.partitions_by_user_endpoint = endpoints(group, self.configured(group),
                                                          self.ctx.image)
        resp.endpoint_information_epoch = group.endpoint_information_epoch
        status = statuses(group, member, self.configured(group), req.api_version, delayed,
                          self.assignment_configs(group.group_id))
        resp.status = status or None
        configured = group.configured
        if configured is not None and configured.status == Status.MISSING_INTERNAL_TOPICS:
            resp.topics_to_create = dict(configured.to_create)
        return resp

    def describe(self, req: sm.StreamsGroupDescribeRequest) -> sm.StreamsGroupDescribeResponse:
        return describe_groups(self, req)

    # ------------------------------------------------------------------ the group

    def streams_group(self, group_id: str, create: bool = False) -> StreamsGroup | None:
        """The streams group ``group_id`` (None: none yet, and a join may create it). Another
        type's id is GROUP_ID_NOT_FOUND, as Kafka answers; a heartbeat to no group too."""
        group = self.ctx.groups.get(group_id)
        if group is not None and group.group_type == GROUP_TYPE:
            return group
        if group is None:
            if create:
                return None
            raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND,
                                   f"Streams group {group_id} not found.")
        classic = self.ctx.group_of(group_id, "classic")
        if create and classic is not None and not classic.members:
            return None
        raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND,
                               f"Group {group_id} is not a streams group.")

    @staticmethod
    def _check_epoch(member: StreamsGroupMember, epoch: int, owned: Tasks | None) -> None:
        """Kafka's ``throwIfStreamsGroupMemberEpochIsInvalid``."""
        if epoch > member.member_epoch:
            raise CoordinatorError(
                Errors.FENCED_MEMBER_EPOCH,
                f"The streams group member has a greater member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}). The member must "
                f"abandon all its tasks and rejoin.")
        if epoch < member.member_epoch and (
                epoch != member.previous_member_epoch or owned is None
                or not owned.contained_in(member.tasks)):
            raise CoordinatorError(
                Errors.FENCED_MEMBER_EPOCH,
                f"The streams group member has a smaller member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}). The member must "
                f"abandon all its tasks and rejoin.")

    def _replace_static(self, group: StreamsGroup, holder: StreamsGroupMember, mid: str,
                        req: sm.StreamsGroupHeartbeatRequest) -> StreamsGroupMember:
        """A static member's new process takes its place and its tasks, at its epoch."""
        new = StreamsGroupMember(mid, holder.metadata, replace(
            holder.current, member_epoch=holder.previous_member_epoch
            if holder.member_epoch == STATIC_LEAVE_EPOCH else holder.member_epoch))
        self.take_place(group, holder, new)
        return group.members[mid]

    def _update(self, req: sm.StreamsGroupHeartbeatRequest, group: StreamsGroup,
                member: StreamsGroupMember) -> None:
        """Apply the heartbeat's member fields; any change is a record and an epoch bump."""
        md = member.metadata
        changes: dict = {"client_id": req.client_id, "client_host": req.client_host}
        if req.instance_id is not None:
            changes["instance_id"] = req.instance_id
        if req.rack_id is not None:
            changes["rack_id"] = req.rack_id
        if req.rebalance_timeout_ms != -1:
            changes["rebalance_timeout_ms"] = req.rebalance_timeout_ms
        if req.topology is not None:
            changes["topology_epoch"] = req.topology.epoch
        if req.process_id is not None:
            changes["process_id"] = req.process_id
        if req.user_endpoint is not None:
            changes["user_endpoint"] = req.user_endpoint
        if req.client_tags is not None:
            changes["client_tags"] = tuple(sorted(req.client_tags, key=lambda kv: kv.key))
        new = replace(md, **changes)
        if new != md:
            updated = member.with_metadata(new)
            self.emit_metadata(group.group_id, updated)
            self.epochs.mark(group.group_id, "member metadata changed", updated)

    def _start_delay(self, group: StreamsGroup) -> None:
        """Kafka's ``scheduleIfAbsent`` of the initial rebalance delay: a delay already
        scheduled keeps its deadline (also one left from a group deleted meanwhile)."""
        delay = setting(self.ctx, group.group_id, "initial_rebalance_delay_ms")
        key = StreamsInitialDelay(group.group_id)
        if delay > 0 and key not in self.ctx.timers:
            self.ctx.timers.schedule(key, self.ctx.now_ms + delay)

    def delaying(self, group_id: str) -> bool:
        """Whether the initial rebalance delay of ``group_id`` runs (its timer is scheduled:
        Kafka's ``timer.isScheduled``; a timer firing is no longer scheduled)."""
        return StreamsInitialDelay(group_id) in self.ctx.timers

    # ------------------------------------------------------------------ leave and fence

    def leave(self, group: StreamsGroup | None, req) -> StreamsGroupMember:
        if group is None:
            raise CoordinatorError(Errors.GROUP_ID_NOT_FOUND,
                                   f"Streams group {req.group_id} not found.")
        return super().leave(group, req)

    def fence(self, group: StreamsGroup, member_id: str, reason: str = "member removed") -> None:
        """Kafka 4.4's ``streamsGroupFenceMember`` (a leave, a session or rebalance timeout):
        the member's records go and the group epoch is bumped, but no target is computed;
        the next heartbeat of the group computes it (so a member back before then finds its
        tasks free: a rolling restart moves nothing). The last member leaving also writes
        the target epoch at the bump: the (empty) target is computed then, with time 0 (so
        the assignment interval lets the next join's target be computed at once)."""
        member = group.members.get(member_id)
        self.remove_member_records(group.group_id, member_id)
        self.epochs.mark(group.group_id, reason, member, compute=not group.members)

    # ------------------------------------------------------------------ events

    def on_timer(self, key: StreamsTimer) -> None:
        if isinstance(key, StreamsInitialDelay):
            self._end_delay(key.group_id)
        else:
            self.sessions.on_timer(key)

    def _end_delay(self, group_id: str) -> None:
        """Kafka's ``computeDelayedTargetAssignment``: the target at the group's epoch now,
        with no bump; nothing for a group gone, empty, without a topology, or (Kafka throws,
        writing nothing) whose assignment epoch already reached its group epoch."""
        group = self.group_of(group_id)
        if group is None or not group.members or group.topology is None:
            return
        if group.group_epoch <= group.assignment_epoch:
            log.error("streams group %s: the initial rebalance delay ended with the group "
                      "epoch %d not above the assignment epoch %d", group_id,
                      group.group_epoch, group.assignment_epoch)
            return
        if self.epochs.may_compute(group):  # Kafka's timer passes the interval's gate too
            self.epochs.compute(group)

    def on_metadata(self, groups: list[StreamsGroup]) -> None:
        """Topics created, deleted or grown: a group whose topology now configures otherwise
        (its topics' hash changed) bumps its epoch (so a created internal topic lets a
        NOT_READY group proceed)."""
        for group in groups:
            if group.topology is None:
                continue
            group.configured = None
            after = self.configured(group)
            validated = after.topology_epoch if after.ready else -1
            if group.members and (
                    validated != group.validated_topology_epoch
                    or metadata_hash(group.topology, self.ctx.image) != group.metadata_hash):
                self.epochs.mark(group.group_id, "topic metadata changed")

    def replay(self, record: Record) -> None:
        key = record.key
        gid = key.group_id  # type: ignore[attr-defined]
        group = self.group_of(gid)
        if type(key) is self.records.group and record.value is None:
            if group is not None:  # its delay, if any, stays scheduled, as Kafka's does
                del self.ctx.groups[gid]
            return
        if group is None:
            group = self.ctx.groups[gid] = StreamsGroup(gid)
        before = group.members.get(getattr(key, "member_id", None) or "")
        group.replay(record)
        self.sessions.after_replay(group, record, before)
        if type(key) is StreamsGroupTopologyKey and record.value is not None:
            group.configured = configure(record.value, self.ctx.image)


def _check_tasks(configured, owned: Tasks | None) -> None:
    """Owned tasks must exist in the configured topology (INVALID_REQUEST)."""
    if owned is None:
        return
    for sub, p in sorted(owned.all()):
        count = configured.tasks.get(sub)
        if count is None:
            raise invalid_request(f"Subtopology {sub} does not exist in the topology.")
        if not 0 <= p < count:
            raise invalid_request(
                f"Task {p} for subtopology {sub} is invalid. Number of tasks for this "
                f"subtopology: {count}")
