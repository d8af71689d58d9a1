"""A classic member's bookkeeping: its state, what it owns, until when, and the timeline.

``ClassicMemberClient`` (``protocol/client/classic.py``) does two jobs: the JoinGroup/SyncGroup
state machine (what to send, what each reply means) and the bookkeeping every step of it
relies on. This module holds the second, as the class the client is built on, so that the state
machine reads on its own and the ownership rules (give partitions up at the earliest moment
the coordinator could have removed the member; tell the callbacks while the partitions are
still listed as owned; record every change) are written once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from assignors.classic import classic_assignor
from protocol import messages as m
from protocol.client.timeline import DEFAULT_MAX_EVENTS, Timeline

TopicPartition = tuple[str, int]
Partitions = list[TopicPartition]  # sorted
Callback = Callable[[Partitions], None]
PartitionCounts = Mapping[str, int] | Callable[[], Mapping[str, int]]

EAGER, COOPERATIVE = "eager", "cooperative"

STATES = ("unjoined", "joining", "syncing", "stable", "leaving", "fenced", "failed", "stopped")
TERMINAL = frozenset({"fenced", "failed", "stopped"})
NO_GENERATION = -1


@dataclass
class SentRequest:
    """The request in flight: what it was and when it left (deadlines count from there)."""

    kind: str  # "join" | "sync" | "heartbeat" | "leave"
    at_s: float
    stale: bool = False  # the member gave up its state meanwhile: the reply means nothing now


class ClassicClientState:
    """The state of one classic group member and what it owns; ``ClassicMemberClient``'s base.

    It exists so the state machine in ``ClassicMemberClient`` can be read apart from its
    bookkeeping; it sends nothing and is not used alone. Guarantees: partitions are listed as
    owned from the reply that granted them until they are revoked, lost, or the coordinator
    could have removed the member (``ownership_deadline``); each callback runs while its
    partitions are still listed; every change is on the bounded ``timeline``, and
    ``events_recorded`` counts them all.
    """

    def __init__(
        self,
        group_id: str,
        *,
        topics: list[str],
        instance_id: str | None = None,
        rack_id: str | None = None,
        assignors: Iterable[str] = ("range",),
        session_timeout_ms: int = 45_000,
        rebalance_timeout_ms: int = 60_000,
        heartbeat_interval_ms: int = 3_000,
        join_reason: str | None = None,
        on_revoke: Callback | None = None,
        on_assign: Callback | None = None,
        on_lost: Callback | None = None,
        partitions_per_topic: PartitionCounts | None = None,
        timeline_max_events: int = DEFAULT_MAX_EVENTS,
    ) -> None:
        names = list(assignors)
        kinds = {classic_assignor(name).rebalance_protocol for name in names}  # KeyError: unknown
        if not names or len(set(names)) != len(names):
            raise ValueError("name at least one assignor, each once")
        if min(session_timeout_ms, rebalance_timeout_ms, heartbeat_interval_ms) <= 0:
            raise ValueError("timeouts and the heartbeat interval must be positive")
        self.group_id, self.topics = group_id, sorted(set(topics))
        self.instance_id, self.rack_id, self.assignors = instance_id, rack_id, tuple(names)
        # Cooperative only if every assignor is (Kafka: the protocol all of them support).
        self.rebalance_protocol = COOPERATIVE if kinds == {COOPERATIVE} else EAGER
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.on_revoke, self.on_assign, self.on_lost = on_revoke, on_assign, on_lost
        self._counts_source = partitions_per_topic
        self.member_id = ""
        self.generation = NO_GENERATION
        self.protocol_name: str | None = None
        self.error: int | None = None
        self._state = "unjoined"
        self._reason = join_reason  # for the next JoinGroup; cleared once one succeeds
        self._rejoin_requested = False
        self._leader = False
        self._leader_metadata: dict[str, int] | None = None
        self._sync_assignments: list[m.SyncGroupRequestAssignment] = []
        self._owned: set[TopicPartition] = set()
        self._timeline = Timeline(timeline_max_events)  # oldest dropped first
        self._in_flight: SentRequest | None = None
        self._due = -math.inf  # when the next request is due; -inf: at once
        self._retries = 0
        self._alive_until: float | None = None  # proven: no removal before this
        self._held_since: float | None = None  # the coordinator holds our JoinGroup
        self._joined_generation = NO_GENERATION  # of the last JoinGroup reply read
        self._force_leave = False

    # ------------------------------------------------------------------ what the caller sees

    @property
    def state(self) -> str:
        """One of ``STATES``."""
        return self._state

    @property
    def in_flight(self) -> bool:
        """A request is out; its reply (or ``on_failure``) must come before the next one."""
        return self._in_flight is not None

    @property
    def assignment(self) -> Partitions:
        return sorted(self._owned)

    @property
    def timeline(self) -> list[dict]:
        return self._timeline.events

    @property
    def events_recorded(self) -> int:
        """How many timeline events were ever recorded (for appending the new ones)."""
        return self._timeline.recorded

    @property
    def is_leader(self) -> bool:
        return self._leader

    @property
    def leader_metadata(self) -> dict[str, int] | None:
        """Partition counts the leader assigned with (None unless leading): a change in
        them is a reason to rebalance (``check_metadata``)."""
        return dict(self._leader_metadata) if self._leader_metadata is not None else None

    @property
    def ownership_deadline(self) -> float | None:
        """The earliest time the coordinator may have removed this member, given what it
        knows (None while it owns nothing). From then on the partitions count as lost (the
        next call records it); a host should stop processing them then."""
        if not self._owned:
            return None
        if self._held_since is not None:
            return self._held_since + (self.rebalance_timeout_ms + self.session_timeout_ms) / 1000
        return self._alive_until

    def next_due(self) -> float | None:
        """When the caller should next call ``poll`` (-inf: now; None: only after a reply)."""
        if self._state in TERMINAL:
            return None
        deadline = self.ownership_deadline
        if self._in_flight is not None:
            return deadline
        return self._due if deadline is None else min(self._due, deadline)

    # ------------------------------------------------------------------- ownership

    def _session_bound_s(self) -> float:
        """After a success: the session ends, or a rebalance we miss removes us, no sooner."""
        return min(self.session_timeout_ms, self.rebalance_timeout_ms) / 1000

    def _check_deadline(self, now_s: float) -> bool:
        """Give everything up if the coordinator may have removed us by now; True if so."""
        deadline = self.ownership_deadline
        if deadline is None or now_s < deadline:
            return False
        self._lose(deadline)
        if self._in_flight is not None:
            self._in_flight.stale = True
        return True

    def _lose(self, at_s: float) -> None:
        """Drop every partition without revoking (Kafka's onPartitionsLost), forget the
        generation (its ownership claims are void) and rejoin at once."""
        if self._owned:
            self._end(at_s, "lost", set(self._owned), self.on_lost)
        self.generation, self._leader, self._leader_metadata = NO_GENERATION, False, None
        self._alive_until = self._held_since = None
        if self._state not in TERMINAL and self._state != "leaving":
            self._state, self._due = "unjoined", -math.inf

    def _fail(self, at_s: float, code: int) -> None:
        self._lose(at_s)
        self._state, self.error = "failed", code

    def _end(
        self, at_s: float, event: str, parts: set[TopicPartition], cb: Callback | None
    ) -> None:
        """Stop owning ``parts``: the callback runs while they are still listed as owned."""
        self._record(at_s, event, parts)
        try:
            if cb is not None:
                cb(sorted(parts))
        finally:
            self._owned -= parts

    def _record(self, at_s: float, event: str, parts: Iterable[TopicPartition]) -> None:
        self._timeline.append(
            {
                "t": at_s,
                "event": event,
                "partitions": sorted(parts),
                "epoch": self.generation,
                "member_id": self.member_id,
            }
        )

    def _counts(self) -> Mapping[str, int]:
        source = self._counts_source
        if source is None:
            return {}
        return source() if callable(source) else source

