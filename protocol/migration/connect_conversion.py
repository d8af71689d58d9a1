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

The path is ``conversion_driver``'s, shared with consumers; this module says what is
Connect's own: a worker's classic bytes are Connect protocol metadata and assignments (what it
runs, and what its generation revokes, kept as pending revocation), static classic members
refuse the conversion (Kafka Connect has none), the records are the Connect group's (with its
connectors), and ``group_connect_migration_policy`` governs it. Why here and not in
``protocol/connect/``: a conversion reads and writes both representations; ``connect/`` stays
the new protocol only and never reads classic bytes.
"""

from __future__ import annotations

from collections.abc import Iterator

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
from protocol.connect.member import ConnectWorkerMember, WorkerState
from protocol.connect.records import (
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
)
from protocol.errors import CoordinatorError, Errors
from protocol.migration.conversion_driver import (
    ConversionDriver,
    ConvertedMember,
    classic_member_metadata,
)
from protocol.records import Record


def work_of(units: u.Units) -> Work:
    """Units as the classic protocol's ``Work`` (connectors, (connector, task) pairs)."""
    return Work.of(
        (c for c, t in units if t == u.CONNECTOR), ((c, t) for c, t in units if t != u.CONNECTOR)
    )


def units_of(work: Work) -> u.Units:
    return frozenset({(c, u.CONNECTOR) for c in work.connectors} | set(work.tasks))


class ConnectMigration(ConversionDriver[ConnectGroup]):
    """Classic Connect group <-> connect group."""

    protocol_type = PROTOCOL_TYPE
    label = "connect"
    policy_key = "group_connect_migration_policy"
    max_size_key = "group_connect_max_size"
    member_keys = (
        ConnectGroupMemberMetadataKey,
        ConnectGroupTargetAssignmentMemberKey,
        ConnectGroupCurrentMemberAssignmentKey,
    )

    def before_connect_join(self, group: ClassicGroup) -> None:
        """A worker joins with the new protocol a non-empty classic group: convert it, or
        say why not (nothing changes on a refusal)."""
        self.check_upgrade(group)
        self.upgrade(group)

    def refuse(self, group: ClassicGroup) -> None:
        if any(mem.group_instance_id is not None for mem in group.members.values()):
            raise CoordinatorError(
                Errors.GROUP_ID_NOT_FOUND,
                f"Group {group.group_id} has static classic members; Kafka Connect has none, "
                "so it is not converted.",
            )

    def convert_members(self, group: ClassicGroup) -> list[ConvertedMember]:
        epoch = group.generation_id
        taken: set[u.Unit] = set()
        out = []
        for member in group.members.values():
            runs, revoking = self._runs(group, member)
            runs, revoking = runs - taken, revoking - taken  # a bad leader's duplicate stays out
            taken |= runs | revoking
            connectors, tasks = u.split(runs)
            metadata = ConnectGroupMemberMetadataValue(
                client_id=member.client_id,
                client_host=member.client_host,
                rebalance_timeout_ms=member.rebalance_timeout_ms,
                classic_member_metadata=classic_member_metadata(member),
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
            out.append(ConvertedMember(member.member_id, metadata, target, current))
        return out

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

    def group_records(self, group_id: str, epoch: int) -> Iterator[Record]:
        yield Record(
            ConnectGroupTargetAssignmentMetadataKey(group_id),
            ConnectGroupTargetAssignmentMetadataValue(epoch),
        )
        connectors_now = self.ctx.image.connectors_of(group_id)
        entries = tuple(ConnectorEntry(n, c) for n, c in sorted(connectors_now.items()))
        yield Record(ConnectGroupMetadataKey(group_id), ConnectGroupMetadataValue(epoch, entries))

    def classic_assignment(self, group: ConnectGroup, member: ConnectWorkerMember,
                           protocol_name: str) -> bytes:
        # The whole set the worker may run (pending revocations too: it may not have stopped
        # them yet), as its assignment; the classic leader moves work from here.
        version = VERSION_OF.get(protocol_name, 1)
        return encode_assignment(ConnectAssignment(version=version, assigned=work_of(member.held)))

    def tombstones(self, group: ConnectGroup) -> list[Record]:
        return group_tombstones(group)
