"""The client half of KIP-848: one group member's heartbeat loop, as a pure object.

``ConsumerMemberClient`` is to a KIP-848 consumer what ``h11.Connection`` is to an HTTP client:
it decides which ``ConsumerGroupHeartbeatRequest`` to send and when, and what each reply means
for the partitions the member owns, but it never sends, sleeps or reads a clock. The caller (a
Ray actor hosting one or many members) passes ``now_s`` (seconds, monotonic) into every call,
sends what ``poll`` returns, and feeds back ``on_response`` or ``on_failure``.

It follows Kafka 4.x's AsyncKafkaConsumer:

* revoke before acknowledging: partitions a reply takes away stop being used (timeline
  "revoked", ``on_revoke``) before the next heartbeat reports what the member still owns; only
  that acknowledgement lets the coordinator hand them to another member (invariant 1);
* FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID lose everything (``on_lost``) and rejoin at epoch 0
  under the same member id; a lost reply makes the next heartbeat a full one, so the
  coordinator resends the assignment the member may have missed;
* a member that cannot prove it is still in the group gives its partitions up at the earliest
  moment the coordinator could have fenced it (session or rebalance timeout, counted from when
  the requests were *sent*), so two members' ownership never overlaps, even when the process
  stalls or replies go missing;
* with ``client_assignors`` (seed 000's client-side assignment, which Kafka never shipped) it
  advertises them in its heartbeats and, when a reply says ``should_compute_assignment``,
  runs the group's round: PrepareAssignment, its own ``PartitionAssignor``,
  InstallAssignment (``protocol/client/assignment_job.py``, shared with Connect workers).

The loop itself is ``ModernMemberClient`` (``protocol/client/modern_member.py``), shared with
the Connect worker; this module says what is a consumer's own: its units (topic partitions,
shown by name), its subscription, and that a leave waits out a retry's backoff.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import ClassVar

from assignors.client.interfaces import PartitionAssignor
from protocol import messages as m
from protocol import partitions as pm
from protocol.client.client_assignors import PartitionFlavour, advertised
from protocol.client.modern_member import ModernMemberClient
from protocol.client.ownership import Callback, PartitionOwnership, Partitions
from protocol.client.timeline import DEFAULT_MAX_EVENTS


class ConsumerMemberClient(ModernMemberClient):
    """One member of one consumer group: what to send when, and what it owns meanwhile.

    It exists so that the KIP-848 client logic runs the same under any host (the
    ``ConsumerClient`` Ray actor hosting thousands of members, a test's simulated clock next to
    a real coordinator shard) and can be checked without Ray, sockets or sleeping.
    Guarantees (``ModernMemberClient``'s): at most one request in flight; partitions are used
    only between the reply that granted them and the moment they were revoked, lost, or could
    have been fenced away, whether or not replies arrive (invariant 1); member epochs never go
    down (asserted); ``timeline`` records those moments (bounded: the oldest events are
    dropped first; ``events_recorded`` counts them all).
    """

    HEARTBEAT = m.ConsumerGroupHeartbeatRequest
    RESPONSE = m.ConsumerGroupHeartbeatResponse
    leave_waits_for_backoff: ClassVar[bool] = True

    def __init__(
        self,
        group_id: str,
        member_id: str,
        *,
        topics: list[str] | None = None,
        topic_regex: str | None = None,
        instance_id: str | None = None,
        rack_id: str | None = None,
        rebalance_timeout_ms: int = 60_000,
        server_assignor: str | None = None,
        session_timeout_ms: int = 45_000,
        on_revoke: Callback | None = None,
        on_assign: Callback | None = None,
        on_lost: Callback | None = None,
        topic_names: Mapping[str, str] | None = None,
        timeline_max_events: int = DEFAULT_MAX_EVENTS,
        client_assignors: Sequence[PartitionAssignor] | None = None,
    ) -> None:
        if (topics is None) == (topic_regex is None):
            raise ValueError("subscribe to topic names or to a regex, exactly one of them")
        if server_assignor is not None and client_assignors:
            raise ValueError("ServerAssignor and ClientAssignors cannot be used together")
        super().__init__(
            group_id,
            member_id,
            ownership=lambda n: PartitionOwnership(self._render, on_assign, on_revoke, on_lost, n),
            flavour=PartitionFlavour(),
            assignors=client_assignors or (),
            instance_id=instance_id,
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            timeline_max_events=timeline_max_events,
        )
        self.topics = sorted(set(topics)) if topics is not None else None
        self.topic_regex, self.rack_id, self.server_assignor = topic_regex, rack_id, server_assignor
        self.on_revoke, self.on_assign, self.on_lost = on_revoke, on_assign, on_lost
        self.topic_names: Mapping[str, str] = topic_names if topic_names is not None else {}
        self.client_assignors = self._assignors

    # ------------------------------------------------------------------ what the caller sees

    @property
    def pending(self) -> Partitions:
        """Assigned but still held by their previous owners: not ours yet (debugging only)."""
        return self._render(self._pending)

    @property
    def partitions_unresolved(self) -> list[str]:
        topic_ids = {t for t, _ in self._own.owned | self._pending}
        return sorted(topic_ids - self.topic_names.keys())

    # ------------------------------------------------------------------ a consumer's own

    def _target(self, assignment: m.HeartbeatAssignment) -> frozenset[tuple[str, int]]:
        return frozenset(pm.pairs(pm.from_wire(assignment.assigned_topic_partitions)))

    def _pending_of(self, assignment: m.HeartbeatAssignment) -> frozenset[tuple[str, int]]:
        return frozenset(pm.pairs(pm.from_wire(assignment.pending_topic_partitions)))

    def _report_owned(self, req: m.ConsumerGroupHeartbeatRequest) -> None:
        req.topic_partitions = pm.to_wire(pm.from_pairs(self._own.owned))

    def _restate(self, req: m.ConsumerGroupHeartbeatRequest) -> None:
        req.rack_id = self.rack_id
        req.subscribed_topic_names = list(self.topics) if self.topics is not None else None
        req.subscribed_topic_regex = self.topic_regex
        req.server_assignor = self.server_assignor

    def _wants_job(self, resp: m.ConsumerGroupHeartbeatResponse) -> bool:
        return bool(resp.should_compute_assignment and self._assignors)

    def _advert(self, now_s: float) -> list[m.Assignor]:
        return advertised(self._assignors, 0)  # a partition assignor's metadata takes no time

    def _render(self, parts: Iterable[tuple[str, int]]) -> Partitions:
        """(name, partition) pairs; a topic whose name is not known yet shows its id."""
        return sorted((self.topic_names.get(t, t), p) for t, p in parts)
