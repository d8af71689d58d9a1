"""Online migration of a classic Connect group to the ``connect`` group type and back (seed
004, "Migration To the New Protocol", on the model of seed 002's consumer migration).

Rolling a Connect cluster restarts its workers one by one with the new protocol. The first
ConnectGroupHeartbeat join naming a classic group of protocol type ``connect`` converts it:
the generation becomes the group epoch, and what each classic worker runs (its Connect
assignment, read with ``classic/connect_protocol``) becomes both its target and its current
assignment, so nobody stops or starts anything in the conversion itself. The joining worker
then bumps the epoch as any join does. Classic workers stay in the converted group
(``connect_classic_members``). When the last new-protocol worker leaves a group whose other
workers all speak the classic protocol, the group converts back and rebalances as a classic
group: the generation is the group epoch, each worker's current work its classic assignment.

Why here and not in ``protocol/connect/``: a conversion reads and writes both representations
(classic ``GroupMetadata`` and its Connect protocol bytes, and the Connect records), as the
consumer conversion beside it does; ``connect/`` stays the new protocol only and never reads
classic bytes. Both conversions are a tombstone of the old form followed by the records of the
new one in one event, so the log never holds the group twice and a replay rebuilds the same
state; the rebalance history is another key and is untouched. ``group_connect_migration_policy``
says which directions are allowed (``group_consumer_migration_policy``'s values).
"""

from __future__ import annotations

from protocol.classic import group as cg
from protocol.classic.connect_protocol import (
    PROTOCOL_TYPE,
    VERSION_OF,
    ConnectAssignment,
    ConnectProtocolError,
    Work,
    encode_assignment,
    owned_work,
    revoking_work,
)
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.connect import units as u
from protocol.connect.group import ConnectGroup, group_tombstones
from protocol.connect.member import WorkerState
from protocol.context import ShardContext
from protocol.errors import CoordinatorError, Errors
from protocol.records import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConnectGroupCurrentMemberAssignmentKey,
    ConnectGroupCurrentMemberAssignmentValue,
    ConnectGroupMemberMetadataKey,
    ConnectGroupMemberMetadataValue,
    ConnectGroupMetadataKey,
    ConnectGroupMetadataValue,
    ConnectGroupTargetAssignmentMemberKey,
    ConnectGroupTargetAssignmentMemberValue,
    ConnectGroupTargetAssignmentMetadataKey,
    ConnectGroupTargetAssignmentMetadataValue,
    ConnectorEntry,
    GroupMetadataKey,
    Record,
)


def work_of(units: u.Units) -> Work:
    """Units as the classic protocol's ``Work`` (connectors, (connector, task) pairs)."""
    return Work.of(
        (c for c, t in units if t == u.CONNECTOR), ((c, t) for c, t in units if t != u.CONNECTOR)
    )


def units_of(work: Work) -> u.Units:
    return frozenset({(c, u.CONNECTOR) for c in work.connectors} | set(work.tasks))


class ConnectMigration:
    def __init__(self, ctx: ShardContext) -> None:
        self.ctx = ctx

    def _allows(self, direction: str) -> bool:
        policy = self.ctx.config.group_connect_migration_policy
        return policy == "bidirectional" or policy == direction

    # ------------------------------------------------------------------ upgrade

    def before_connect_join(self, group: ClassicGroup) -> None:
        """A worker joins with the new protocol a non-empty classic group: convert it, or
        say why not (nothing changes on a refusal)."""
        gid = group.group_id
        if group.protocol_type != PROTOCOL_TYPE:
            raise CoordinatorError(
                Errors.GROUP_ID_NOT_FOUND,
                f"Group {gid} is a classic group of protocol type {group.protocol_type!r}, "
                "not a connect group.",
            )
        if not self._allows("upgrade"):
            raise CoordinatorError(
                Errors.GROUP_ID_NOT_FOUND,
                f"Group {gid} is a classic connect group and online upgrade is disabled.",
            )
        if any(mem.group_instance_id is not None for mem in group.members.values()):
            raise CoordinatorError(
                Errors.GROUP_ID_NOT_FOUND,
                f"Group {gid} has static classic members; Kafka Connect has none, so it is "
                "not converted.",
            )
        if len(group.members) >= self.ctx.config.group_connect_max_size:
            raise CoordinatorError(
                Errors.GROUP_MAX_SIZE_REACHED,
                f"Group {gid} is larger than group_connect_max_size.",
            )
        if group.state != cg.STABLE:
            # As for consumers (Kafka answers GROUP_ID_NOT_FOUND, fatal to its client): the
            # work of a rebalancing group is not settled, so the worker retries shortly.
            raise CoordinatorError(
                Errors.REBALANCE_IN_PROGRESS,
                f"Classic group {gid} is {group.state}; it converts to the new protocol once "
                "stable: retry.",
            )
        self.upgrade(group)

    def upgrade(self, group: ClassicGroup) -> None:
        gid, epoch = group.group_id, group.generation_id
        taken: set[u.Unit] = set()
        converted = []
        for member in group.members.values():
            runs, revoking = self._runs(group, member)
            runs, revoking = runs - taken, revoking - taken  # a bad leader's duplicate stays out
            taken |= runs | revoking
            converted.append((member, u.split(runs), revoking))
        self.ctx.emit(Record(GroupMetadataKey(gid), None))
        for member, (connectors, tasks), revoking in converted:
            mid = member.member_id
            metadata = ConnectGroupMemberMetadataValue(
                client_id=member.client_id,
                client_host=member.client_host,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                classic_member_metadata=ClassicMemberMetadata(
                    session_timeout_ms=member.session_timeout_ms,
                    supported_protocols=tuple(ClassicProtocol(n, md) for n, md in member.protocols),
                ),
            )
            target = ConnectGroupTargetAssignmentMemberValue(connectors=connectors, tasks=tasks)
            # What its generation revokes, it may run until its SyncGroup reply reaches it:
            # pending revocation, so nobody else is given it before it has stopped.
            pending_connectors, pending_tasks = u.split(revoking)
            current = ConnectGroupCurrentMemberAssignmentValue(
                member_epoch=epoch,
                previous_member_epoch=epoch - 1,
                state=int(WorkerState.UNREVOKED if revoking else WorkerState.STABLE),
                connectors=connectors,
                tasks=tasks,
                connectors_pending_revocation=pending_connectors,
                tasks_pending_revocation=pending_tasks,
            )
            self.ctx.emit(Record(ConnectGroupMemberMetadataKey(gid, mid), metadata))
            self.ctx.emit(Record(ConnectGroupTargetAssignmentMemberKey(gid, mid), target))
            self.ctx.emit(Record(ConnectGroupCurrentMemberAssignmentKey(gid, mid), current))
        self.ctx.emit(
            Record(
                ConnectGroupTargetAssignmentMetadataKey(gid),
                ConnectGroupTargetAssignmentMetadataValue(epoch),
            )
        )
        connectors_now = self.ctx.image.connectors_of(gid)
        self.ctx.emit(
            Record(
                ConnectGroupMetadataKey(gid),
                ConnectGroupMetadataValue(
                    epoch,
                    tuple(ConnectorEntry(n, c) for n, c in sorted(connectors_now.items())),
                ),
            )
        )

    @staticmethod
    def _runs(group: ClassicGroup, member: ClassicMember) -> tuple[u.Units, u.Units]:
        """What a classic worker runs once its generation's assignment reached it, and what
        that assignment revokes (undecodable: nothing — it will be told to revoke whatever it
        reports when it rejoins)."""
        metadata = member.metadata_for(group.protocol_name)
        try:
            work = owned_work(metadata, member.assignment)
            revoking = revoking_work(metadata, member.assignment)
        except ConnectProtocolError:
            return u.EMPTY, u.EMPTY
        return units_of(work), units_of(revoking) - units_of(work)

    # ------------------------------------------------------------------ downgrade

    def maybe_downgrade(self, group: ConnectGroup) -> bool:
        """The last new-protocol worker left (or was replaced by a classic process): a group
        of classic workers only converts back. Returns whether it did."""
        members = list(group.members.values())
        if (
            not members
            or any(mem.metadata.classic_member_metadata is None for mem in members)
            or not self._allows("downgrade")
        ):
            return False
        self.downgrade(group)
        return True

    def downgrade(self, connect: ConnectGroup) -> None:
        gid = connect.group_id
        classic = ClassicGroup(
            gid,
            state=cg.STABLE,
            generation_id=connect.group_epoch,
            protocol_type=PROTOCOL_TYPE,
            state_timestamp_ms=self.ctx.now_ms,
        )
        for member in connect.members.values():
            meta = member.metadata.classic_member_metadata
            assert meta is not None
            classic.add(
                ClassicMember(
                    member_id=member.member_id,
                    group_instance_id=None,
                    client_id=member.client_id,
                    client_host=member.client_host,
                    rebalance_timeout_ms=max(member.rebalance_timeout_ms, 0),
                    session_timeout_ms=meta.session_timeout_ms,
                    protocol_type=PROTOCOL_TYPE,
                    protocols=[(p.name, p.metadata) for p in meta.supported_protocols],
                )
            )
        classic.protocol_name = classic.select_protocol()
        version = VERSION_OF.get(classic.protocol_name, 1)
        for member in connect.members.values():
            # The whole set each worker may run (pending revocations too: it may not have
            # stopped them yet), as its assignment; the classic leader moves work from here.
            classic.members[member.member_id].assignment = encode_assignment(
                ConnectAssignment(version=version, assigned=work_of(member.held))
            )
        for record in group_tombstones(connect):
            self.ctx.emit(record)
        self.ctx.groups[gid] = classic
        self.ctx.emit(Record(GroupMetadataKey(gid), classic.to_record()))
        self.ctx.classic.start_after_downgrade(classic)
