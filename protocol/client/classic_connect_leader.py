"""The leader of a classic Connect group: every worker's assignment, in Kafka's two styles.

In the classic protocol the coordinator does not assign: it elects a leader and hands it every
worker's JoinGroup metadata (``protocol/classic/connect_protocol.py``); the leader's SyncGroup
carries each worker's share. Kafka Connect's leader works in one of two ways, by the protocol
the group agreed on:

* **eager** (``default``, V0): every worker stopped everything before joining, so the leader
  deals every connector, then every task, round robin over the workers sorted by id (Kafka's
  ``EagerAssignor``), and each worker gets its whole set.
* **incremental** (``compatible`` V1 / ``sessioned`` V2): workers keep running through the
  rebalance and report what they run (the Allocation). The leader computes the target with
  the incremental cooperative assignor (``assignors/connect``), then writes deltas: ``revoked``
  (what a worker must stop) and ``assignment`` (new work that nobody runs now). Work another
  worker still runs is not handed over in the same round (the classic coordinator does not
  hold it back as the new protocol's does): its owner stops it and rejoins, and the next
  round hands it out. ``delay`` tells every worker when to rejoin for a scheduled rebalance.

``ConnectLeader`` keeps what Kafka's leader keeps between rounds (the targets it wrote and
the assignor's memory); a new leader starts without it, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from assignors.client.interfaces import ConnectGroup, ConnectGroupMember
from assignors.connect import IncrementalCooperativeAssignor
from assignors.connect.metadata import NO_TIME
from protocol import messages as m
from protocol.classic.connect_protocol import (
    CONFIG_MISMATCH,
    VERSION_OF,
    ConnectAssignment,
    ConnectProtocolError,
    Work,
    WorkerState,
    decode_metadata,
    encode_assignment,
)


@dataclass
class _Member:
    member_id: str
    state: WorkerState
    running: Work


@dataclass
class LeaderRound:
    """What the leader decided: the SyncGroup assignments and, for the leader's own view,
    whether it revoked anything and the delay it asked for."""

    assignments: list[m.SyncGroupRequestAssignment]
    revoked: bool = False
    delay_ms: int = 0
    mismatch: bool = False
    targets: dict[str, Work] = field(default_factory=dict)


class ConnectLeader:
    """Runs a classic Connect group's assignment on the elected worker."""

    def __init__(self, assignor: IncrementalCooperativeAssignor) -> None:
        self.assignor = assignor
        self._targets: dict[str, Work] = {}  # what the last round meant each worker to run
        self._memory: dict[str, tuple[int, bytes]] = {}  # the assignor's metadata per worker

    def forget(self) -> None:
        """No longer the leader: the next time starts from scratch (as Kafka's leader)."""
        self._targets, self._memory = {}, {}

    def lead(
        self,
        resp: m.JoinGroupResponse,
        own_url: str,
        config_offset: int,
        connectors: Mapping[str, int],
        now_ms: int,
    ) -> LeaderRound:
        """Every worker's assignment for the generation in ``resp`` (the leader's reply)."""
        name = resp.protocol_name or "default"
        version = VERSION_OF.get(name, 0)
        members = [_member(mm) for mm in resp.members]
        leader, leader_url = resp.member_id, own_url

        def assignment(**kw) -> ConnectAssignment:
            return ConnectAssignment(version, leader=leader, leader_url=leader_url,
                                     config_offset=config_offset, **kw)

        highest = max((mm.state.config_offset for mm in members), default=config_offset)
        if highest > config_offset:
            # Kafka's CONFIG_MISMATCH: a worker read a newer config than the leader; everyone
            # re-reads and rejoins.
            mismatch = assignment(error=CONFIG_MISMATCH)
            return LeaderRound(_sync(members, lambda _: mismatch), mismatch=True)
        if version == 0:
            targets = _eager(sorted(mm.member_id for mm in members), connectors)
            return LeaderRound(
                _sync(members, lambda mid: assignment(assigned=targets[mid])), targets=targets
            )
        return self._incremental(members, connectors, now_ms, assignment)

    def _incremental(self, members: list[_Member], connectors: Mapping[str, int], now_ms: int,
                     assignment) -> LeaderRound:
        group = ConnectGroup(
            members=tuple(self._group_member(mm) for mm in members),
            connectors=dict(connectors),
            now_ms=now_ms,
        )
        plan = self.assignor.plan(group)
        targets = {a.member_id: Work.of(a.connectors, a.tasks) for a in plan.members}
        self._targets = targets
        self._memory = {a.member_id: (a.version, a.metadata) for a in plan.members}
        running_anywhere = Work()
        for mm in members:
            running_anywhere = running_anywhere | mm.running
        delay_ms = 0 if plan.next_rebalance_ms == NO_TIME else max(
            1, plan.next_rebalance_ms - now_ms)
        deltas: dict[str, ConnectAssignment] = {}
        revoked_any = False
        for mm in members:
            target = targets.get(mm.member_id, Work())
            revoked = mm.running - target
            # New work only if nobody runs it now: its owner stops it first, and rejoins.
            new = target - mm.running - running_anywhere
            revoked_any = revoked_any or bool(revoked)
            deltas[mm.member_id] = assignment(assigned=new, revoked=revoked, delay_ms=delay_ms)
        return LeaderRound(_sync(members, deltas.__getitem__), revoked_any, delay_ms,
                           targets=targets)

    def _group_member(self, mm: _Member) -> ConnectGroupMember:
        """The worker as the assignor sees it: what the last round meant it to run (its
        target), else what it reports running; and the assignor's memory kept for it."""
        owned = self._targets.get(mm.member_id, mm.running)
        version, metadata = self._memory.get(mm.member_id, (self.assignor.maximum_version(), b""))
        return ConnectGroupMember(
            member_id=mm.member_id,
            version=version,
            metadata=metadata,
            maximum_version=self.assignor.maximum_version(),
            owned_connectors=owned.connectors,
            owned_tasks=owned.tasks,
        )


def _member(mm: m.JoinGroupResponseMember) -> _Member:
    """A member's metadata; bytes that are not Connect's count as an empty, new worker."""
    try:
        _, state = decode_metadata(mm.metadata)
    except ConnectProtocolError:
        return _Member(mm.member_id, WorkerState("", -1), Work())
    running = state.allocation.assigned if state.allocation is not None else Work()
    return _Member(mm.member_id, state, running)


def _eager(member_ids: list[str], connectors: Mapping[str, int]) -> dict[str, Work]:
    """Kafka's EagerAssignor: connectors, then tasks, dealt round robin in sorted order."""
    dealt: dict[str, tuple[set[str], set[tuple[str, int]]]] = {
        mid: (set(), set()) for mid in member_ids
    }
    if not member_ids:
        return {}
    turn = 0
    for c in sorted(connectors):
        dealt[member_ids[turn % len(member_ids)]][0].add(c)
        turn += 1
    for c in sorted(connectors):
        for t in range(connectors[c]):
            dealt[member_ids[turn % len(member_ids)]][1].add((c, t))
            turn += 1
    return {mid: Work.of(cs, ts) for mid, (cs, ts) in dealt.items()}


def _sync(members: list[_Member], assignment_of) -> list[m.SyncGroupRequestAssignment]:
    return [
        m.SyncGroupRequestAssignment(mm.member_id, encode_assignment(assignment_of(mm.member_id)))
        for mm in members
    ]
