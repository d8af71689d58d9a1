"""Classic Kafka Connect workers in a ``connect`` group: JoinGroup, SyncGroup, Heartbeat and
LeaveGroup after an online upgrade (seed 004, "Migration To the New Protocol"), as classic
consumers live in a converted consumer group (``classic_members``).

A classic worker cannot be told "stop these, then start those" the way a new-protocol worker
is; what it understands is "rebalance" and a SyncGroup assignment. So the coordinator runs the
new protocol for it: its JoinGroup is its full heartbeat (an incremental worker's metadata
lists what it runs, so it is also its revocation acknowledgement; an eager worker stopped
everything before joining), the group's target decides, the Connect reconciler moves it one
safe step (revoke before assign), and the SyncGroup reply carries the result in the Connect
protocol version the worker prefers: the worker's whole set as ``assignment`` and what it must
stop as ``revoked`` (V1/V2; an incremental worker then rejoins at once), or its whole set (V0,
eager). Its generation is its member epoch; its Heartbeat answers REBALANCE_IN_PROGRESS while
the reconciler has a next step for it. Everyone is a follower (the leader is ""): the
coordinator assigns with its own connect assignor, as no classic worker offers a client one.

Kafka Connect workers never use static membership; a JoinGroup with an instance id naming a
Connect group is INVALID_REQUEST.
"""

from __future__ import annotations

from dataclasses import dataclass

from protocol import messages as m
from protocol.classic.connect_protocol import (
    PROTOCOL_TYPE,
    VERSION_OF,
    ConnectAssignment,
    ConnectProtocolError,
    decode_metadata,
    encode_assignment,
    owned_work,
)
from protocol.connect import units as u
from protocol.connect.group import ConnectGroup
from protocol.connect.member import ConnectWorkerMember
from protocol.connect.reconciler import reconcile
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.migration.connect_conversion import units_of, work_of
from protocol.records import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConnectGroupCurrentMemberAssignmentKey,
    ConnectGroupMemberMetadataKey,
    ConnectGroupMemberMetadataValue,
    Record,
)


@dataclass(frozen=True)
class _Joined:
    """What a worker's last JoinGroup said, kept for its SyncGroup (not persisted, as a
    classic group's sync phase is not)."""

    runs: u.Units
    config_offset: int
    protocol_name: str


class ClassicWorkersOfConnectGroup:
    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx
        self._joined: dict[tuple[str, str], _Joined] = {}
        # (group, member id) handed out with MEMBER_ID_REQUIRED, good for one session timeout.
        self._issued: dict[tuple[str, str], int] = {}

    # ------------------------------------------------------------------ JoinGroup

    def join(self, group: ConnectGroup, req: m.JoinGroupRequest) -> m.JoinGroupResponse | None:
        gid = group.group_id
        if req.protocol_type != PROTOCOL_TYPE:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                f"Group {gid} is a connect group: protocol type must be {PROTOCOL_TYPE!r}.",
            )
        if req.group_instance_id is not None:
            raise CoordinatorError(
                Errors.INVALID_REQUEST,
                f"Group {gid} is a connect group: classic Connect workers have no static "
                "membership (no group instance id).",
            )
        chosen = next((p for p in req.protocols if p.name in VERSION_OF), None)
        if chosen is None:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                f"Group {gid} runs Kafka Connect's protocols {sorted(VERSION_OF)}; the worker "
                "offers none of them.",
            )
        try:
            _, state = decode_metadata(chosen.metadata)
            runs = units_of(owned_work(chosen.metadata, None))  # eager (V0): stopped all
        except ConnectProtocolError as e:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL, f"Unreadable Connect worker metadata: {e}"
            ) from None
        if not req.member_id:
            return self._member_id_required(group, req)
        member = group.members.get(req.member_id)
        if member is None and self._issued.get((gid, req.member_id), -1) <= self.ctx.now_ms:
            raise _unknown(gid, req.member_id)
        if member is not None and member.metadata.classic_member_metadata is None:
            raise _unknown(gid, req.member_id, "it uses the new protocol")
        metadata = ConnectGroupMemberMetadataValue(
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=(
                req.session_timeout_ms
                if req.rebalance_timeout_ms == -1
                else req.rebalance_timeout_ms
            ),
            classic_member_metadata=ClassicMemberMetadata(
                session_timeout_ms=req.session_timeout_ms,
                supported_protocols=tuple(
                    ClassicProtocol(p.name, p.metadata) for p in req.protocols
                ),
            ),
        )
        mid, rules = req.member_id, self.ctx.connect
        if member is None:
            if len(group.members) >= self.ctx.config.group_connect_max_size:
                raise CoordinatorError(
                    Errors.GROUP_MAX_SIZE_REACHED,
                    f"The connect group has reached its maximum capacity of "
                    f"{self.ctx.config.group_connect_max_size} members.",
                )
            fresh = ConnectWorkerMember(mid, metadata)
            self.ctx.emit(Record(ConnectGroupMemberMetadataKey(gid, mid), metadata))
            self.ctx.emit(Record(ConnectGroupCurrentMemberAssignmentKey(gid, mid), fresh.current))
            self._issued.pop((gid, mid), None)
            rules.mark(gid, "new worker joined (classic protocol)", fresh)
        else:
            if metadata != member.metadata:
                self.ctx.emit(Record(ConnectGroupMemberMetadataKey(gid, mid), metadata))
            rules.mark(gid, None)
        rules.reset_session(gid, mid)
        if self.ctx.connect_migration.maybe_downgrade(group):
            # Only classic workers are left (the policy kept the group until now): the group
            # is classic again, and this JoinGroup is one more worker rejoining it.
            return self.ctx.classic.join(req)
        rules.finish_turn()
        group = self.ctx.groups[gid]  # type: ignore[assignment]
        member = self._step(group, group.members[mid], runs)
        self._joined[(gid, mid)] = _Joined(runs, state.config_offset, chosen.name)
        return m.JoinGroupResponse(
            generation_id=member.member_epoch,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=chosen.name,
            leader="",
            member_id=mid,
        )

    def _member_id_required(
        self, group: ConnectGroup, req: m.JoinGroupRequest
    ) -> m.JoinGroupResponse:
        """A newcomer learns its id first (KIP-394), as in a classic group."""
        while True:
            mid = f"{req.client_id or 'connect'}-{self.ctx.new_member_id()}"
            if mid not in group.members and (group.group_id, mid) not in self._issued:
                break
        now = self.ctx.now_ms
        self._issued = {k: t for k, t in self._issued.items() if t > now}  # stays bounded
        self._issued[(group.group_id, mid)] = now + req.session_timeout_ms
        return m.JoinGroupResponse(
            error_code=Errors.MEMBER_ID_REQUIRED,
            error_message="The group requires a member id: rejoin with the one given.",
            member_id=mid,
        )

    def _step(
        self, group: ConnectGroup, member: ConnectWorkerMember, runs: u.Units
    ) -> ConnectWorkerMember:
        new = reconcile(
            member, group.assignment_epoch, group.target_of(member.member_id), runs, group.owner_of
        )
        if new != member:
            key = ConnectGroupCurrentMemberAssignmentKey(group.group_id, member.member_id)
            self.ctx.emit(Record(key, new.current))
        return new

    # ------------------------------------------------------------------ SyncGroup

    def sync(self, group: ConnectGroup, req: m.SyncGroupRequest) -> m.SyncGroupResponse:
        member = self._member(group, req.member_id)
        if req.generation_id != member.member_epoch:
            raise _illegal_generation(req.generation_id, member)
        if req.protocol_type is not None and req.protocol_type != PROTOCOL_TYPE:
            raise CoordinatorError(
                Errors.INCONSISTENT_GROUP_PROTOCOL, "The group's protocol type is 'connect'."
            )
        gid, mid = group.group_id, member.member_id
        joined = self._joined.pop((gid, mid), None)
        self.ctx.connect.reset_session(gid, mid)
        name = req.protocol_name or (joined.protocol_name if joined else None)
        if name not in VERSION_OF:
            name = _preferred(member)
        version = VERSION_OF[name]
        offset = joined.config_offset if joined is not None else -1
        if version == 0:
            a = ConnectAssignment(0, config_offset=offset, assigned=work_of(member.assigned))
        else:
            ran = joined.runs if joined is not None else u.EMPTY
            stop = member.pending_revocation | (ran - member.assigned)
            a = ConnectAssignment(
                version,
                config_offset=offset,
                assigned=work_of(member.assigned),
                revoked=work_of(stop),
            )
        return m.SyncGroupResponse(
            protocol_type=PROTOCOL_TYPE, protocol_name=name, assignment=encode_assignment(a)
        )

    # ------------------------------------------------------------------ Heartbeat

    def heartbeat(self, group: ConnectGroup, req: m.HeartbeatRequest) -> m.HeartbeatResponse:
        member = self._member(group, req.member_id)
        if req.generation_id != member.member_epoch:
            raise _illegal_generation(req.generation_id, member)
        self.ctx.connect.reset_session(group.group_id, member.member_id)
        if self.needs_rebalance(group, member):
            return m.HeartbeatResponse(
                error_code=Errors.REBALANCE_IN_PROGRESS,
                error_message="Your connectors or tasks changed: rejoin the group.",
            )
        return m.HeartbeatResponse()

    @staticmethod
    def needs_rebalance(group: ConnectGroup, member: ConnectWorkerMember) -> bool:
        """Whether a reconciliation step waits for the worker (checked as if it ran all it
        was given: a classic worker acknowledges a revocation only by rejoining)."""
        step = reconcile(
            member,
            group.assignment_epoch,
            group.target_of(member.member_id),
            member.assigned,
            group.owner_of,
        )
        return step != member

    # ------------------------------------------------------------------ LeaveGroup

    def leave(self, group: ConnectGroup, req: m.LeaveGroupRequest) -> m.LeaveGroupResponse:
        results = []
        gid = group.group_id
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
                reason = identity.reason or "no reason given"
                self.ctx.connect.fence(group, mid, f"worker left the group: {reason}")
            results.append(
                m.LeaveGroupResponseMember(identity.member_id, identity.group_instance_id, error)
            )
            converted = self.ctx.groups.get(gid)
            if not isinstance(converted, ConnectGroup):  # it became a classic group again
                break
            group = converted
        return m.LeaveGroupResponse(members=results)

    # ------------------------------------------------------------------ helpers

    def _member(self, group: ConnectGroup, member_id: str) -> ConnectWorkerMember:
        member = group.members.get(member_id)
        if member is None:
            raise _unknown(group.group_id, member_id)
        if member.metadata.classic_member_metadata is None:
            raise _unknown(group.group_id, member_id, "it uses the new protocol")
        return member

    def forget(self, group_id: str, member_id: str) -> None:
        self._joined.pop((group_id, member_id), None)


def _preferred(member: ConnectWorkerMember) -> str:
    meta = member.metadata.classic_member_metadata
    names = [p.name for p in meta.supported_protocols] if meta is not None else []
    return next((n for n in names if n in VERSION_OF), "compatible")


def _unknown(group_id: str, member_id: str, why: str = "") -> CoordinatorError:
    tail = f": {why}" if why else ""
    return CoordinatorError(
        Errors.UNKNOWN_MEMBER_ID,
        f"Member {member_id} is not a classic member of group {group_id}{tail}.",
    )


def _illegal_generation(generation: int, member: ConnectWorkerMember) -> CoordinatorError:
    return CoordinatorError(
        Errors.ILLEGAL_GENERATION,
        f"Generation {generation} is not worker {member.member_id}'s epoch {member.member_epoch}.",
    )
