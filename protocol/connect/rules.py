"""The rules of Connect worker groups (seed 004): heartbeats, leaving, fencing, static
workers, timers, connector changes, and the requests around client-side assignment.

The Connect half of a group coordinator, over the kernel every modern group shares
(``protocol.modern.rules``: static membership, lost response, leave, fence): every decision
becomes records, replayed at once (``ctx.emit``), so memory is always what the log rebuilds.
A heartbeat is handled whole: validate, find or create the worker, check its epoch, apply its
changes (``changes``), settle the epoch bumps they caused and compute a server-side target
(``target.ConnectEpochs``), then move the worker one safe step toward its target
(``modern.reconciler``) and reply.
"""

from __future__ import annotations

from dataclasses import replace

from protocol import messages as m
from protocol.classic.records import GroupMetadataKey
from protocol.connect import units as u
from protocol.connect.changes import apply_request, assignment_changed, bump_reason, only_asks
from protocol.connect.client_assignment import ConnectClientAssignment
from protocol.connect.describe import describe_as_classic, describe_groups
from protocol.connect.group import GROUP_TYPE, NO_TARGET, ConnectGroup, connector_changes
from protocol.connect.member import (
    JOIN_EPOCH,
    LEAVE_EPOCH,
    STATIC_LEAVE_EPOCH,
    ConnectWorkerMember,
)
from protocol.connect.records import ConnectGroupMetadataKey
from protocol.connect.sessions import (
    AssignmentDeadline,
    ConnectTimer,
    ScheduledRebalance,
    WorkerTimers,
)
from protocol.connect.target import ConnectEpochs
from protocol.connect.validation import validate_heartbeat
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.modern.reconciler import reconcile
from protocol.modern.rules import ModernRules
from protocol.records import Record


class ConnectGroupRules(ModernRules):
    """Every ConnectGroupHeartbeat, leave, fence, timer and connector change, and the
    Prepare/Install/Describe requests of Connect groups."""

    GROUP, ASSIGNMENT = ConnectGroup, m.ConnectGroupAssignment

    def __init__(self, ctx: ShardContext) -> None:
        super().__init__(ctx)
        self.epochs = self.epoch_turn = ConnectEpochs(ctx)
        self.sessions = WorkerTimers(ctx, self.fence)
        self.compute = ConnectClientAssignment(ctx)

    # ------------------------------------------------------------------ requests

    def heartbeat(self, req: m.ConnectGroupHeartbeatRequest) -> m.ConnectGroupHeartbeatResponse:
        validate_heartbeat(req, self.ctx.config)
        group = self._group_for(req.group_id, join=req.member_epoch == JOIN_EPOCH)
        if req.member_epoch in (LEAVE_EPOCH, STATIC_LEAVE_EPOCH):
            return self._leave(group, req)
        owned: u.Units | None
        if req.member_epoch == JOIN_EPOCH:
            before, owned = self._join(group, req), u.EMPTY
        else:
            member = self.existing_member(group, req.group_id, req.member_id, req.instance_id)
            assert group is not None
            owned = (
                u.from_wire(req.connectors_and_tasks)
                if req.connectors_and_tasks is not None
                else None
            )
            if req.member_epoch != member.member_epoch and not self.lost_response(
                member, req.member_epoch, owned
            ):
                return self._fenced(group, member, req.member_epoch)
            self._update_member(group, member, apply_request(member, req))
            before = member
        self.epochs.settle()
        return self._reply(req, before, owned)

    def prepare_assignment(
        self, req: m.ConnectGroupPrepareAssignmentRequest
    ) -> m.ConnectGroupPrepareAssignmentResponse:
        return self.compute.prepare(req)

    def install_assignment(
        self, req: m.ConnectGroupInstallAssignmentRequest
    ) -> m.ConnectGroupInstallAssignmentResponse:
        return self.compute.install(req)

    def describe(self, req: m.ConnectGroupDescribeRequest) -> m.ConnectGroupDescribeResponse:
        return describe_groups(self.ctx, req)

    def describe_classic(self, group: ConnectGroup, history: list) -> m.DescribeGroupsResponseGroup:
        name = group.assignor(self.ctx.config.default_connect_assignor).name
        return describe_as_classic(group, name, history)

    # ------------------------------------------------------------------ the group

    def _group_for(self, group_id: str, join: bool) -> ConnectGroup | None:
        """The Connect group ``group_id`` (None: none yet); GROUP_ID_NOT_FOUND if the id is
        another type's. An empty classic group (offsets only) simply becomes a Connect group
        on a join, as it becomes a consumer group on a consumer's (``_join`` retires it); a
        classic Connect group is converted (``migration/connect_conversion``)."""
        group = self.ctx.groups.get(group_id)
        if group is None or group.group_type == GROUP_TYPE:
            return group
        classic = self.ctx.group_of(group_id, "classic")
        if join and classic is not None and not classic.members:
            return None
        if join and classic is not None:
            # A rolling upgrade's first new-protocol worker converts a classic Connect group.
            self.ctx.connect_migration.before_connect_join(classic)
            converted = self.group_of(group_id)
            assert converted is not None
            return converted
        raise CoordinatorError(
            Errors.GROUP_ID_NOT_FOUND,
            f"Group {group_id} is a {group.group_type} group, not a connect group.",
        )

    # ------------------------------------------------------------------ join

    def _join(
        self, group: ConnectGroup | None, req: m.ConnectGroupHeartbeatRequest
    ) -> ConnectWorkerMember | None:
        """Add the worker (or take a static worker's place, or refresh a rejoining worker);
        returns the worker as it was before, ``None`` if new."""
        gid, mid = req.group_id, req.member_id
        holder = self.static_holder(group, mid, req.instance_id)
        if holder is not None:
            assert group is not None
            self._replace_static_worker(group, holder, req)
            return None
        existing = group.members.get(mid) if group is not None else None
        if existing is not None:
            # A worker rejoining under its own id (it was fenced or restarted): it runs nothing.
            assert group is not None
            self._update_member(group, existing, apply_request(existing, req))
            return existing
        self.check_size(group)
        member = apply_request(ConnectWorkerMember(mid), req)
        self.check_client_assignors(group, member)
        if self.ctx.group_of(gid, "classic") is not None:  # an empty classic group: retire it
            self.ctx.emit(Record(GroupMetadataKey(gid), None))
        self.emit_new_member(gid, member)
        self.epochs.mark(gid, "new worker joined", member)
        self.sessions.reset_session(gid, mid)
        return None

    def _replace_static_worker(
        self, group: ConnectGroup, old: ConnectWorkerMember, req: m.ConnectGroupHeartbeatRequest
    ) -> None:
        """A static worker back from a temporary leave under a new member id takes its old
        place and work at once; the epoch moves only if its assignors changed."""
        gid, new_id = group.group_id, req.member_id
        new = apply_request(replace(old, member_id=new_id), req)
        self.check_client_assignors(group, new, replacing=old.member_id)
        target = self.take_place(group, old, new)
        self.compute.forget(gid, old.member_id)
        self.ctx.connect_classic_members.forget(gid, old.member_id)  # it may have been classic
        reason = bump_reason(old, new, target)
        if reason is not None:
            self.epochs.mark(gid, f"static worker rejoined: {reason}", new)
        self.epochs.mark(gid, None)
        self.sessions.reset_session(gid, new_id)

    # ------------------------------------------------------------------ updates

    def _update_member(
        self, group: ConnectGroup, member: ConnectWorkerMember, updated: ConnectWorkerMember
    ) -> None:
        """Persist a worker's changed metadata (a rebalance if seed 004 says so)."""
        gid = group.group_id
        if updated.metadata != member.metadata:
            self.check_client_assignors(group, updated)
            self.emit_metadata(gid, updated)
            reason = bump_reason(member, updated, group.target.get(member.member_id, NO_TARGET))
            if reason is not None and not (
                only_asks(member, updated) and self.compute.pending_unprepared(group)
            ):  # an ask a computation not yet prepared will read anyway needs no new epoch
                self.epochs.mark(gid, reason, updated)
        # Touched even when unchanged: a target that could not be computed earlier is retried.
        self.epochs.mark(gid, None)
        self.sessions.reset_session(gid, member.member_id)

    # ------------------------------------------------------------------ leave and fence

    def _leave(
        self, group: ConnectGroup | None, req: m.ConnectGroupHeartbeatRequest
    ) -> m.ConnectGroupHeartbeatResponse:
        member = self.leave(group, req)
        self.epochs.settle()
        return m.ConnectGroupHeartbeatResponse(
            member_id=member.member_id,
            member_epoch=req.member_epoch,
            heartbeat_interval_ms=self.sessions.heartbeat_interval_ms(),
        )

    def _fenced(
        self, group: ConnectGroup, member: ConnectWorkerMember, epoch: int
    ) -> m.ConnectGroupHeartbeatResponse:
        self.fence(group, member.member_id, "worker fenced: stale epoch")
        self.epochs.settle()
        return m.ConnectGroupHeartbeatResponse(
            error_code=Errors.FENCED_MEMBER_EPOCH,
            error_message=(
                f"The worker's epoch ({epoch}) is not the one known by the group coordinator "
                f"({member.member_epoch}). The worker must stop all its connectors and tasks "
                "and rejoin with epoch 0."
            ),
        )

    def fence(self, group: ConnectGroup, member_id: str, reason: str = "worker removed") -> None:
        """Remove a worker (it left, was fenced or timed out) and trigger a rebalance."""
        member = group.members.get(member_id)
        self.remove_member_records(group.group_id, member_id)
        self.compute.forget(group.group_id, member_id)
        self.ctx.connect_classic_members.forget(group.group_id, member_id)
        self.epochs.mark(group.group_id, reason, member)
        self.ctx.connect_migration.maybe_downgrade(group)  # only classic workers left?

    # ------------------------------------------------------------------ reply

    def _reply(
        self,
        req: m.ConnectGroupHeartbeatRequest,
        before: ConnectWorkerMember | None,
        owned: u.Units | None,
    ) -> m.ConnectGroupHeartbeatResponse:
        """Move the worker one step and answer. The Assignment is set, as the seed says, when
        the worker's epoch is behind the target's; and whenever the worker needs it: on a
        join, when its work or epoch changed, or when it reports running something else."""
        group_id, member_id = req.group_id, req.member_id
        group = self.group_of(group_id)
        assert group is not None
        member = group.members[member_id]
        new = reconcile(
            member, group.assignment_epoch, group.target_of(member_id), owned, group.owner_of
        )
        if new != member:
            self.emit_assignment(group_id, new)
        resp = m.ConnectGroupHeartbeatResponse(
            member_id=member_id,
            member_epoch=new.member_epoch,
            heartbeat_interval_ms=self.sessions.heartbeat_interval_ms(),
        )
        if group.group_epoch > group.assignment_epoch and self.compute.chosen(group) == member_id:
            resp.error_code = Errors.COMPUTE_ASSIGNMENT
            resp.error_message = (
                f"Worker {member_id} is chosen to compute the assignment of group {group_id} "
                f"at epoch {group.group_epoch}."
            )
            self.compute.asked(group, new)
        send = (
            req.member_epoch == JOIN_EPOCH
            or req.member_epoch < group.assignment_epoch
            or (owned is not None and owned != new.assigned)
            or assignment_changed(before, new)
        )
        if send:
            resp.assignment = self.assignment(group, new)
        return resp

    # ------------------------------------------------------------------ events

    def finish_turn(self) -> None:
        self.epochs.settle()

    # --------------------------------------------- for classic workers (migration)

    def mark(
        self, group_id: str, reason: str | None, member: ConnectWorkerMember | None = None
    ) -> None:
        self.epochs.mark(group_id, reason, member)

    def reset_session(self, group_id: str, member_id: str) -> None:
        self.sessions.reset_session(group_id, member_id)

    def on_timer(self, key: ConnectTimer) -> None:
        if isinstance(key, ScheduledRebalance):
            group = self.group_of(key.group_id)
            if group is not None and group.members:
                self.epochs.mark(key.group_id, "scheduled rebalance delay expired")
        elif isinstance(key, AssignmentDeadline):
            self.compute.on_deadline(key)
        else:
            self.sessions.on_timer(key)  # type: ignore[arg-type]

    def on_metadata(self, groups: list[ConnectGroup]) -> None:
        """New connectors: bump every group whose connectors or task counts changed."""
        for group in groups:
            now = self.ctx.image.connectors_of(group.group_id)
            if group.members and now != group.connectors:
                self.epochs.mark(group.group_id, connector_changes(group.connectors, now))

    def replay(self, record: Record) -> None:
        key = record.key
        gid = key.group_id  # type: ignore[attr-defined]
        if isinstance(key, ConnectGroupMetadataKey) and record.value is None:
            if self.group_of(gid) is not None:
                del self.ctx.groups[gid]
                self.ctx.timers.cancel(ScheduledRebalance(gid))
                self.compute.forget_group(gid)
            return
        group = self.group_of(gid)
        if group is None:
            group = self.ctx.groups[gid] = ConnectGroup(gid)
        before = group.members.get(getattr(key, "member_id", None) or "")
        group.replay(record)
        self.sessions.after_replay(group, record, before)

