"""Classic Kafka Connect workers in a ``connect`` group: JoinGroup, SyncGroup, Heartbeat and
LeaveGroup after an online upgrade (seed 004, "Migration To the New Protocol").

The rules are ``classic_in_modern``'s, shared with consumers; this module says what is
Connect's own. A worker's JoinGroup offers Kafka Connect's protocols; an incremental worker's
metadata lists what it runs (its revocation acknowledgement), an eager worker stopped
everything before joining. Kafka Connect workers never use static membership: a JoinGroup with
an instance id naming a Connect group is INVALID_REQUEST. The coordinator assigns with its own
connect assignor, as no classic worker offers a client one. The SyncGroup reply is in the
Connect protocol version the worker prefers: its whole set as ``assignment`` and what it must
stop as ``revoked`` (V1/V2; an incremental worker then rejoins at once), or its whole set (V0,
eager), with the config offset its JoinGroup reported.
"""

from __future__ import annotations

from operator import attrgetter

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
from protocol.connect.group import GROUP_TYPE, ConnectGroup
from protocol.connect.member import ConnectWorkerMember
from protocol.connect.records import (
    ConnectGroupCurrentMemberAssignmentKey,
    ConnectGroupMemberMetadataKey,
    ConnectGroupMemberMetadataValue,
)
from protocol.errors import CoordinatorError, Errors
from protocol.migration import classic_in_modern as cim
from protocol.migration.connect_conversion import units_of, work_of
from protocol.modern.reconciler import reconcile
from protocol.records import Record


class ClassicWorkersOfConnectGroup(
    cim.ClassicMembersOfModernGroup[ConnectGroup, ConnectWorkerMember]
):
    protocol_type = PROTOCOL_TYPE
    group_type = GROUP_TYPE
    noun = "worker"
    rebalance_message = "Your connectors or tasks changed: rejoin the group."
    steps = cim.Steps(reconcile, attrgetter("assigned"), ConnectGroupCurrentMemberAssignmentKey)

    # ------------------------------------------------------------------ JoinGroup

    def read_join(self, group: ConnectGroup, req: m.JoinGroupRequest) -> cim.Joined:
        gid = group.group_id
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
        return cim.Joined(owned=runs, protocol_name=chosen.name, config_offset=state.config_offset)

    def admit(self, group: ConnectGroup, req: m.JoinGroupRequest) -> str:
        gid, mid, rules = group.group_id, req.member_id, self.ctx.connect
        member = self.known(group, mid)  # a new-protocol worker's id: it turns classic
        metadata = ConnectGroupMemberMetadataValue(
            client_id=req.client_id,
            client_host=req.client_host,
            rebalance_timeout_ms=cim.rebalance_timeout_of(req),
            classic_member_metadata=cim.classic_metadata_of(req),
        )
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
            rules.mark(gid, "new worker joined (classic protocol)", fresh)
        else:
            if metadata != member.metadata:
                self.ctx.emit(Record(ConnectGroupMemberMetadataKey(gid, mid), metadata))
            rules.mark(gid, None)
        rules.reset_session(gid, mid)
        return mid

    # ------------------------------------------------------------------ SyncGroup

    def sync_assignment(
        self, member: ConnectWorkerMember, req: m.SyncGroupRequest, joined: cim.Joined | None
    ) -> tuple[str | None, bytes]:
        name = req.protocol_name or (joined.protocol_name if joined else None)
        if name not in VERSION_OF:
            name = _preferred(member)
        version = VERSION_OF[name]
        offset = joined.config_offset if joined is not None else -1
        if version == 0:
            a = ConnectAssignment(0, config_offset=offset, assigned=work_of(member.assigned))
        else:
            ran = joined.owned if joined is not None else u.EMPTY
            stop = member.pending_revocation | (ran - member.assigned)
            a = ConnectAssignment(
                version,
                config_offset=offset,
                assigned=work_of(member.assigned),
                revoked=work_of(stop),
            )
        return name, encode_assignment(a)

    def ports(self) -> cim.Ports:
        rules = self.ctx.connect
        return cim.Ports(
            rules.reset_session,
            rules.fence,
            rules.finish_turn,
            self.ctx.connect_migration.maybe_downgrade,
        )


def _preferred(member: ConnectWorkerMember) -> str:
    meta = member.metadata.classic_member_metadata
    names = [p.name for p in meta.supported_protocols] if meta is not None else []
    return next((n for n in names if n in VERSION_OF), "compatible")
