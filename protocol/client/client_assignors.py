"""Client-side assignors seen from a member: what it advertises, and its two ``Flavour``s.

A member that assigns on the client advertises each of its assignors in its heartbeat (name,
version range, reason, metadata) and hands each new assignment's metadata back to the
assignor (``on_assignment``). When chosen, it turns the PrepareAssignment reply into the
assignor's input and the assignor's answer into an InstallAssignment: consumers with
``PartitionFlavour`` (topic partitions), Connect workers with ``ConnectFlavour`` (connectors and
tasks). ``protocol/client/assignment_job.py`` runs the steps; this module only translates.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from typing import Any, ClassVar

from assignors.client.interfaces import (
    Assignment,
    Assignor,
    AssignorMetadata,
    ConnectGroup,
    ConnectGroupMember,
    MemberAssignment,
    PartitionGroup,
    PartitionGroupMember,
    TopicMetadata,
)
from protocol import messages as m
from protocol import partitions as pm


def assignor_metadata(assignor: Assignor, now_ms: int) -> AssignorMetadata:
    """The assignor's metadata now; an assignor that schedules rebalances (Connect's) takes
    the time, so its ``reason`` can say a delay is over."""
    if _takes_time(type(assignor)):
        return assignor.metadata(now_ms=now_ms)  # type: ignore[call-arg]
    return assignor.metadata()


@functools.cache
def _takes_time(cls: type) -> bool:
    return "now_ms" in inspect.signature(cls.metadata).parameters


def advertised(assignors: Sequence[Assignor], now_ms: int) -> list[m.Assignor]:
    """The heartbeat's ``ClientAssignors``: each assignor's range and current metadata."""
    out = []
    for a in assignors:
        meta = assignor_metadata(a, now_ms)
        out.append(
            m.Assignor(
                name=a.name(),
                minimum_version=a.minimum_version(),
                maximum_version=a.maximum_version(),
                reason=meta.reason,
                metadata_version=meta.version,
                metadata_bytes=meta.metadata,
            )
        )
    return out


def next_rebalance_delay_ms(assignors: Sequence[Assignor], now_ms: int) -> int | None:
    """The soonest any assignor wants a rebalance (ms from now; 0: now; None: never)."""
    delays = [
        d
        for a in assignors
        if callable(getattr(a, "next_rebalance_delay_ms", None))
        and (d := a.next_rebalance_delay_ms(now_ms)) is not None
    ]
    return min(delays) if delays else None


def deliver(assignors: Sequence[Assignor], member_id: str, error: int, version: int,
            metadata: bytes) -> None:
    """Hand a new assignment's metadata to every assignor (the group uses one of them; the
    coordinator does not say which, and the others ignore metadata they cannot read)."""
    for a in assignors:
        a.on_assignment(MemberAssignment(member_id, error, version, metadata))


class _Flavour:
    """What both flavours do alike: the three steps' requests, the same fields around each
    member. A flavour names its request classes and how one member is read (``_member_in``,
    with ``_group`` around them) and written (``_member_out``)."""

    PREPARE: ClassVar[type]
    INSTALL: ClassVar[type]

    def prepare_request(self, group_id: str, member_id: str, member_epoch: int) -> object:
        return self.PREPARE(group_id, member_id, member_epoch)

    def assignor_input(self, prepared: Any, now_ms: int) -> Any:
        members = tuple(self._member_in(mem, prepared) for mem in prepared.members)
        return self._group(prepared, members, now_ms)

    def install_request(
        self, group_id: str, member_id: str, member_epoch: int, prepared: Any, result: Assignment
    ) -> object:
        return self.INSTALL(
            group_id=group_id,
            member_id=member_id,
            member_epoch=member_epoch,
            group_epoch=prepared.group_epoch,
            error=result.error,
            members=[self._member_out(a) for a in result.members],
        )

    def _member_in(self, mem: Any, prepared: Any) -> Any:
        raise NotImplementedError

    def _group(self, prepared: Any, members: tuple, now_ms: int) -> Any:
        raise NotImplementedError

    def _member_out(self, a: Any) -> object:
        raise NotImplementedError


def _member(mem: Any, maximum_version: int) -> dict[str, Any]:
    """What every flavour's assignor reads of a PrepareAssignment member: its ids and its
    assignor's state (``maximum_version`` -1 or 0: not known)."""
    return {
        "member_id": mem.member_id,
        "instance_id": mem.instance_id,
        "reason": mem.assignor.reason,
        "version": mem.assignor.version,
        "metadata": bytes(mem.assignor.metadata),
        "maximum_version": maximum_version if maximum_version > 0 else None,
    }


class ConnectFlavour(_Flavour):
    """Connect workers: connectors and tasks (seed 004's Connect* requests)."""

    PREPARE = m.ConnectGroupPrepareAssignmentRequest
    INSTALL = m.ConnectGroupInstallAssignmentRequest

    def _member_in(self, mem: Any, prepared: Any) -> ConnectGroupMember:
        owned = mem.connectors_and_tasks
        return ConnectGroupMember(
            **_member(mem, mem.maximum_version),
            owned_connectors=frozenset(owned.connectors),
            owned_tasks=frozenset((t.connector, t.task) for t in owned.tasks),
        )

    def _group(self, prepared: Any, members: tuple, now_ms: int) -> ConnectGroup:
        connectors = {c.name: c.task_count for c in prepared.connectors}
        return ConnectGroup(members=members, connectors=connectors, now_ms=now_ms)

    def _member_out(self, a: Any) -> m.ConnectInstallAssignmentMember:
        tasks = sorted(getattr(a, "tasks", ()))
        work = m.ConnectorsAndTasks(
            sorted(getattr(a, "connectors", ())), [m.ConnectorTaskId(c, t) for c, t in tasks]
        )
        return m.ConnectInstallAssignmentMember(
            member_id=a.member_id, error=a.error, connectors_and_tasks=work,
            metadata_version=a.version, metadata_bytes=a.metadata,
        )


class PartitionFlavour(_Flavour):
    """Consumers: topic partitions (seed 000's ConsumerGroup* requests)."""

    PREPARE = m.ConsumerGroupPrepareAssignmentRequest
    INSTALL = m.ConsumerGroupInstallAssignmentRequest

    def _member_in(self, mem: Any, prepared: Any) -> PartitionGroupMember:
        return PartitionGroupMember(
            **_member(mem, prepared.maximum_version),
            subscribed_topic_ids=frozenset(mem.subscribed_topic_ids),
            owned_partitions=frozenset(pm.pairs(pm.from_wire(mem.topic_partitions))),
        )

    def _group(self, prepared: Any, members: tuple, now_ms: int) -> PartitionGroup:
        topics = tuple(TopicMetadata(t.topic_id, t.num_partitions) for t in prepared.topics)
        return PartitionGroup(members=members, topics=topics)

    def _member_out(self, a: Any) -> m.InstallAssignmentMember:
        parts = pm.to_wire(pm.from_pairs(getattr(a, "partitions", ())))
        return m.InstallAssignmentMember(
            member_id=a.member_id, error=a.error, topic_partitions=parts,
            metadata_version=a.version, metadata_bytes=a.metadata,
        )
