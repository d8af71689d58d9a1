"""Client-side assignment for Connect groups: who computes, ConnectGroupPrepareAssignment,
ConnectGroupInstallAssignment (seed 004).

When every worker offers a client-side assignor the coordinator picks the worker whose version
range covers everyone's (A [1-5], B [3-4], C [2-4] -> A), answers its heartbeats with
COMPUTE_ASSIGNMENT while the group needs a target, hands it the group state (Prepare) and
validates and installs what it computed (Install). An assignment computed for an older group
epoch is installed anyway and the worker is asked again. A chosen worker that does not install
within its rebalance timeout is passed over: the next worker by the same rule gets the job.
Who was passed over lives in memory only, like the timers: a restarted coordinator starts over
with the first choice and a fresh deadline.
"""

from __future__ import annotations

from assignors.client.version_range import select_by_version_range
from protocol import messages as m
from protocol.connect import units as u
from protocol.connect.group import NO_TARGET, ConnectGroup
from protocol.connect.member import ConnectWorkerMember
from protocol.connect.records import ConnectGroupTargetAssignmentMemberValue
from protocol.connect.sessions import AssignmentDeadline
from protocol.connect.target import Targets, target_records
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.modern.client_assignment import (
    check_install_epoch,
    chosen_member,
    prepare_header,
)
from protocol.records import ClientAssignorEntry
from protocol.validation import check_types


class ConnectClientAssignment:
    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx
        self._passed_over: dict[str, set[str]] = {}  # group id -> workers that missed a deadline
        # group id -> the group epoch the last PrepareAssignment handed out: a computation
        # pending beyond it will still read every worker's metadata as it is now
        self._prepared: dict[str, int] = {}

    # ------------------------------------------------------------------ who computes

    def chosen(self, group: ConnectGroup) -> str | None:
        """The worker to compute the group's assignment; ``None``: the coordinator does."""
        choice = group.assignor(self.ctx.config.default_connect_assignor)
        if not choice.client_side:
            return None
        skipped = self._passed_over.get(group.group_id, set()) & set(group.members)
        if choice.chosen_member_id not in skipped:
            return choice.chosen_member_id
        ranges = {
            mid: (e.minimum_version, e.maximum_version)
            for mid, mem in group.members.items()
            if mid not in skipped and (e := mem.client_assignor(choice.name)) is not None
        }
        pick = select_by_version_range(ranges)
        if pick is None:  # everyone missed a deadline: start over
            self._passed_over.pop(group.group_id, None)
            return choice.chosen_member_id
        return pick

    def asked(self, group: ConnectGroup, member: ConnectWorkerMember) -> None:
        """A COMPUTE_ASSIGNMENT reply went to ``member``: its rebalance timeout starts."""
        key = AssignmentDeadline(group.group_id, member.member_id)
        if key not in self.ctx.timers:
            self.ctx.timers.schedule(key, self.ctx.now_ms + max(member.rebalance_timeout_ms, 0))

    def on_deadline(self, key: AssignmentDeadline) -> None:
        group = self.ctx.groups.get(key.group_id)
        if group is None or group.group_type != ConnectGroup.group_type:
            return
        if group.group_epoch <= group.assignment_epoch:
            return
        if self.chosen(group) == key.member_id:
            self._passed_over.setdefault(group.group_id, set()).add(key.member_id)

    def forget(self, group_id: str, member_id: str) -> None:
        self.ctx.timers.cancel(AssignmentDeadline(group_id, member_id))
        skipped = self._passed_over.get(group_id)
        if skipped is not None:
            skipped.discard(member_id)

    def forget_group(self, group_id: str) -> None:
        self._passed_over.pop(group_id, None)
        self._prepared.pop(group_id, None)

    def pending_unprepared(self, group: ConnectGroup) -> bool:
        """A new target is due and no worker has been handed its inputs yet, so whatever a
        worker says now reaches that computation without another epoch."""
        if group.group_epoch <= group.assignment_epoch:
            return False
        return self._prepared.get(group.group_id, -1) < group.group_epoch

    # ------------------------------------------------------------------ the requests

    def prepare(
        self, req: m.ConnectGroupPrepareAssignmentRequest
    ) -> m.ConnectGroupPrepareAssignmentResponse:
        check_types(req)
        group, _ = self._chosen_member(req)
        choice = group.assignor(self.ctx.config.default_connect_assignor)
        members = []
        for mid in sorted(group.members):
            mem = group.members[mid]
            entry = mem.client_assignor(choice.name) or ClientAssignorEntry(
                choice.name, 0, 0, 0, 0, b""
            )
            target = group.target.get(mid, NO_TARGET)
            # The metadata the assignor wrote with the worker's target is authoritative (the
            # worker's echo of it may lag a round); before any, what the worker sent.
            version, metadata = (
                (target.metadata_version, target.metadata_bytes)
                if mid in group.target
                else (entry.metadata_version, entry.metadata_bytes)
            )
            members.append(
                m.ConnectPrepareAssignmentMember(
                    member_id=mid,
                    member_epoch=mem.member_epoch,
                    instance_id=mem.instance_id,
                    assignor=m.PrepareAssignmentAssignor(entry.reason, version, metadata),
                    connectors_and_tasks=u.to_wire(group.target_of(mid)),
                    maximum_version=entry.maximum_version,
                )
            )
        self._prepared[group.group_id] = group.group_epoch
        return m.ConnectGroupPrepareAssignmentResponse(
            **prepare_header(group, choice),
            members=members,
            connectors=[m.ConnectorTasks(c, n) for c, n in sorted(group.connectors.items())],
        )

    def install(
        self, req: m.ConnectGroupInstallAssignmentRequest
    ) -> m.ConnectGroupInstallAssignmentResponse:
        check_types(req)
        group, _ = self._chosen_member(req)
        if req.error != 0:
            # The worker's assignor failed: nothing is installed and another worker (if any)
            # gets the job on its next heartbeat.
            self._passed_over.setdefault(group.group_id, set()).add(req.member_id)
            self.forget_deadline(group.group_id, req.member_id)
            return m.ConnectGroupInstallAssignmentResponse()
        targets = self._validated_targets(group, req)
        if req.group_epoch == group.assignment_epoch and all(
            group.target.get(mid, NO_TARGET) == t for mid, t in targets.items()
        ):
            return m.ConnectGroupInstallAssignmentResponse()  # a retry of the installed one
        check_install_epoch(group, req.group_epoch)
        for record in target_records(group, targets, req.group_epoch):
            self.ctx.emit(record)
        self._passed_over.pop(group.group_id, None)
        self.forget_deadline(group.group_id, req.member_id)
        return m.ConnectGroupInstallAssignmentResponse()

    def forget_deadline(self, group_id: str, member_id: str) -> None:
        self.ctx.timers.cancel(AssignmentDeadline(group_id, member_id))

    # ------------------------------------------------------------------ checks

    def _validated_targets(
        self, group: ConnectGroup, req: m.ConnectGroupInstallAssignmentRequest
    ) -> Targets:
        """INVALID_ASSIGNMENT unless every connector and task exists in the group's connectors
        and none is given twice. Workers that left since Prepare are skipped (their leaving
        already asked for a new computation); workers not named get an empty target."""
        seen: set[u.Unit] = set()
        seen_members: set[str] = set()
        targets: Targets = {mid: NO_TARGET for mid in sorted(group.members)}
        for entry in req.members:
            if entry.member_id in seen_members:
                raise CoordinatorError(
                    Errors.INVALID_ASSIGNMENT, f"Member {entry.member_id} appears twice."
                )
            seen_members.add(entry.member_id)
            named = entry.connectors_and_tasks
            for t in named.tasks:
                if t.task < 0:  # -1 would read as the connector itself
                    raise CoordinatorError(
                        Errors.INVALID_ASSIGNMENT,
                        f"Task {t.connector}-{t.task} does not exist: task ids start at 0.",
                    )
            given = [(c, u.CONNECTOR) for c in named.connectors] + [
                (t.connector, t.task) for t in named.tasks
            ]
            for unit in given:
                self._check_unit(group, unit, seen)
            if entry.member_id not in group.members:
                continue
            connectors, tasks = u.split(given)
            targets[entry.member_id] = ConnectGroupTargetAssignmentMemberValue(
                connectors, tasks, entry.error, entry.metadata_version, entry.metadata_bytes
            )
        return targets

    @staticmethod
    def _check_unit(group: ConnectGroup, unit: u.Unit, seen: set[u.Unit]) -> None:
        connector, task = unit
        count = group.connectors.get(connector)
        if count is None:
            raise CoordinatorError(
                Errors.INVALID_ASSIGNMENT, f"Connector {connector!r} does not exist in the group."
            )
        if task != u.CONNECTOR and not 0 <= task < count:
            raise CoordinatorError(
                Errors.INVALID_ASSIGNMENT,
                f"Task {u.label(unit)} does not exist: connector {connector!r} has {count} tasks.",
            )
        if unit in seen:
            raise CoordinatorError(Errors.INVALID_ASSIGNMENT, f"{u.label(unit)} is assigned twice.")
        seen.add(unit)

    def _chosen_member(
        self, req: m.ConnectGroupPrepareAssignmentRequest
    ) -> tuple[ConnectGroup, ConnectWorkerMember]:
        """Seed 004's checks for both requests, in its order (FENCED_MEMBER_EPOCH, where
        consumers answer STALE_MEMBER_EPOCH)."""
        return chosen_member(
            self.ctx, ConnectGroup.group_type, req, Errors.FENCED_MEMBER_EPOCH, self.chosen
        )
