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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from assignors.client.interfaces import PartitionAssignor
from protocol import messages as m
from protocol import partitions as pm
from protocol.client.assignment_job import AssignmentJob, JobStats
from protocol.client.client_assignors import PartitionFlavour, advertised, deliver
from protocol.client.timeline import DEFAULT_MAX_EVENTS, Timeline
from protocol.consumer.member import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from protocol.errors import COORDINATOR_UNAVAILABLE, Errors
from protocol.records import PartitionMap
from protocol.retry import backoff_s, next_retries

Partitions = list[tuple[str, int]]  # (topic name, partition), sorted
Callback = Callable[[Partitions], None]

# Errors after which the same request may simply be tried again (Kafka's retriable ones).
# REBALANCE_IN_PROGRESS: a classic group converts to the new protocol only once it is stable.
RETRIABLE = COORDINATOR_UNAVAILABLE | {
    Errors.UNKNOWN_SERVER_ERROR,
    Errors.UNRELEASED_INSTANCE_ID,
    Errors.REBALANCE_IN_PROGRESS,
}
FENCED = frozenset({Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID})


@dataclass
class _Sent:
    """The request in flight: when it left (the session safety rule counts from there)."""

    at_s: float
    leave: bool
    stale: bool = False  # the member gave up its state meanwhile: the reply means nothing now
    kind: str = "heartbeat"  # | "prepare" | "install" (client-side assignment)


class ConsumerMemberClient:
    """One member of one consumer group: what to send when, and what it owns meanwhile.

    It exists so that the KIP-848 client logic runs the same under any host (the
    ``ConsumerClient`` Ray actor hosting thousands of members, a test's simulated clock next to
    a real coordinator shard) and can be checked without Ray, sockets or sleeping.
    Guarantees: at most one request in flight; partitions are used only between the reply
    that granted them and the moment they were revoked, lost, or could have been fenced away,
    whether or not replies arrive (invariant 1); member epochs never go down (asserted);
    ``timeline`` records those moments (bounded: the oldest events are dropped first;
    ``events_recorded`` counts them all).
    """

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
        if rebalance_timeout_ms <= 0 or session_timeout_ms <= 0 or timeline_max_events <= 0:
            raise ValueError("timeouts and the timeline bound must be positive")
        self.group_id, self.member_id = group_id, member_id
        self.topics = sorted(set(topics)) if topics is not None else None
        self.topic_regex, self.instance_id, self.rack_id = topic_regex, instance_id, rack_id
        self.rebalance_timeout_ms, self.server_assignor = rebalance_timeout_ms, server_assignor
        self.session_timeout_ms = session_timeout_ms
        self.on_revoke, self.on_assign, self.on_lost = on_revoke, on_assign, on_lost
        self.topic_names: Mapping[str, str] = topic_names if topic_names is not None else {}
        self.member_epoch = JOIN_EPOCH
        self.heartbeat_interval_ms = 0  # unknown until the first reply
        self.error: int | None = None
        self._owned: PartitionMap = {}
        self._pending: PartitionMap = {}
        self._timeline = Timeline(timeline_max_events)  # oldest dropped first
        self._in_flight: _Sent | None = None
        self._due = -math.inf  # when the next heartbeat is due; -inf: at once
        self._full = True  # restate every field: a join, or a retry after a lost reply
        self._ack_due = False
        self._hurry = False  # woken while a heartbeat was in flight: send the next at once
        self._retries = 0
        self._alive_until: float | None = None  # no session fence before this
        self._unconfirmed_since: float | None = None  # a revocation may be timing since then
        self._maybe_member = False  # the coordinator may know us: a leave must be sent
        self._leaving = self._stopped = False
        self.client_assignors = list(client_assignors or ())
        self._job = AssignmentJob(PartitionFlavour(), self.client_assignors)
        self._reported: list[m.Assignor] | None = None  # the ClientAssignors last sent
        self._delivered: tuple[int, bytes] | None = None

    # ------------------------------------------------------------------ what the caller sees

    @property
    def assignment(self) -> Partitions:
        return self._render(self._owned)

    @property
    def pending(self) -> Partitions:
        """Assigned but still held by their previous owners: not ours yet (debugging only)."""
        return self._render(self._pending)

    @property
    def timeline(self) -> list[dict]:
        return self._timeline.events

    @property
    def events_recorded(self) -> int:
        """How many timeline events were ever recorded (for appending the new ones)."""
        return self._timeline.recorded

    @property
    def job(self) -> str:
        """The client-side assignment job: idle | asked | preparing | ready | installing."""
        return self._job.state

    @property
    def job_stats(self) -> JobStats:
        return self._job.stats

    @property
    def partitions_unresolved(self) -> list[str]:
        return sorted((self._owned.keys() | self._pending.keys()) - self.topic_names.keys())

    @property
    def state(self) -> str:
        if self.error is not None:
            return "failed"
        if self._stopped:
            return "stopped"
        if self._leaving:
            return "leaving"
        if self.member_epoch <= 0:
            return "joining"
        return "reconciling" if self._ack_due or self._pending else "stable"

    @property
    def ownership_deadline(self) -> float | None:
        """The earliest time the coordinator may have fenced this member, given what it knows.

        From then on the partitions count as lost (the next call records it); a host should
        stop processing them then even if it has not called in.
        """
        return self._fence_deadline() if self.member_epoch > 0 else None

    def next_due(self) -> float | None:
        """When the caller should next call ``poll`` (-inf: now; None: only after a reply)."""
        if self.state in ("stopped", "failed"):
            return None
        deadline = self.ownership_deadline
        if self._in_flight is not None:
            return deadline
        due = -math.inf if self._job.has_request else self._due
        return due if deadline is None else min(due, deadline)

    # -------------------------------------------------------------------------- the loop

    def poll(self, now_s: float) -> object | None:
        """The request to send now, marked in flight, or None (not due, busy, stopped): a
        heartbeat, or a step of a client-side assignment this member was asked to run."""
        self._check_deadline(now_s)
        if self._in_flight is not None or self.state in ("stopped", "failed"):
            return None
        if self._job.has_request and not self._leaving and not self._ack_due:
            kind = "prepare" if self._job.state == "asked" else "install"
            self._in_flight = _Sent(now_s, leave=False, kind=kind)
            return self._job.next_request(self.group_id, self.member_id, self.member_epoch)
        if now_s < self._due:
            return None
        if self._leaving:
            return self._send_leave(now_s)
        self._in_flight = _Sent(now_s, leave=False)
        self._maybe_member = True
        if self._unconfirmed_since is None:
            self._unconfirmed_since = now_s
        return self._request()

    def heartbeat_now(self) -> bool:
        """Make the next heartbeat due at once (the coordinator said something changed for
        us); False when there is nothing to hurry (stopped, leaving, or already due). With a
        heartbeat in flight, the next one goes as soon as its reply is read: the coordinator
        may have answered it before the change it woke us for."""
        if self.state in ("stopped", "failed") or self._leaving:
            return False
        if self._in_flight is not None:
            hurried, self._hurry = self._hurry, True
            return not hurried
        if self._due == -math.inf:
            return False
        self._due = -math.inf
        return True

    def leave(self) -> None:
        """Leave the group: the next poll revokes everything and sends the leave heartbeat."""
        if self.state in ("stopped", "failed"):
            return
        self._leaving, self._due = True, -math.inf
        self._job.abandon()
        if not self._maybe_member and self._in_flight is None:
            self._stopped = True  # the coordinator never heard of us: nothing to say

    def on_response(self, now_s: float, response: object) -> None:
        """The reply to the request in flight, read at ``now_s``."""
        sent = self._finish()
        if sent is None:
            return
        if sent.kind == "prepare":
            self._job.on_prepared(
                response, self.group_id, self.member_id, self.member_epoch, round(now_s * 1000)
            )
            if self._job.state == "idle":  # refused: the next heartbeat says what is next
                self._due = min(self._due, now_s + backoff_s(0))
            return
        if sent.kind == "install":
            self._job.on_installed(response)
            self._due = min(self._due, now_s)  # our own target may have changed: ask at once
            return
        assert isinstance(response, m.ConsumerGroupHeartbeatResponse)
        code = response.error_code
        if code == Errors.NONE:
            self._on_success(now_s, sent.at_s, response)
            return
        self._check_deadline(now_s)
        if code in FENCED:
            self._lose(sent.at_s)  # the coordinator may have acted on it as soon as it arrived
            self._maybe_member = False  # it removed us (or never had us)
        elif code in RETRIABLE:
            self._retry(now_s)
        else:
            self._lose(sent.at_s)
            self.error = code

    def on_failure(self, now_s: float) -> None:
        """No reply (transport failure, dead coordinator): keep state and retry with backoff."""
        sent = self._finish()
        if sent is not None:
            self._check_deadline(now_s)
            if sent.kind != "heartbeat":
                self._job.on_failure()
            self._retry(now_s)

    # -------------------------------------------------------------------------- internals

    def _finish(self) -> _Sent | None:
        """Take the request in flight; None when its reply no longer matters."""
        sent = self._in_flight
        if sent is None:
            raise RuntimeError(f"member {self.member_id}: a reply with no request in flight")
        self._in_flight = None
        if sent.leave:
            self._stopped = True  # whatever the coordinator said, this member is done
            return None
        return None if sent.stale else sent

    def _on_success(
        self, now_s: float, sent_at_s: float, resp: m.ConsumerGroupHeartbeatResponse
    ) -> None:
        owned, assignment = pm.pairs(self._owned), resp.assignment
        target = (
            owned
            if assignment is None
            else pm.pairs(pm.from_wire(assignment.assigned_topic_partitions))
        )
        revoked, added = owned - target, target - owned
        # The coordinator heard from us at or after sent_at: no session fence before this.
        self._alive_until = sent_at_s + self.session_timeout_ms / 1000
        if not revoked:
            self._unconfirmed_since = None  # the coordinator waits for no revocation from us
        deadline = self._fence_deadline()
        if deadline is not None and now_s >= deadline:
            self._lose(deadline)  # read too late to trust (even a join's reply): start over
            return
        assert resp.member_epoch >= self.member_epoch, "member epochs never go down"
        self.member_epoch = resp.member_epoch
        self.member_id = resp.member_id or self.member_id
        if resp.heartbeat_interval_ms > 0:
            self.heartbeat_interval_ms = resp.heartbeat_interval_ms
        self._retries, self._full = 0, False
        if self._leaving:
            return  # everything goes at the leave; take nothing new
        if resp.should_compute_assignment and self.client_assignors:
            self._job.ask()
        if assignment is not None:
            got = (assignment.metadata_version, bytes(assignment.metadata_bytes))
            if self.client_assignors and got != self._delivered:
                self._delivered = got
                deliver(self.client_assignors, self.member_id, assignment.error, *got)
            self._pending = pm.from_wire(assignment.pending_topic_partitions)
            if revoked:
                self._end(now_s, "revoked", revoked, self.on_revoke)
            if added:
                self._owned = pm.union(self._owned, pm.from_pairs(added))
                self._record(now_s, "assigned", added)
                if self.on_assign is not None:
                    self.on_assign(self._render(pm.from_pairs(added)))
        self._ack_due = bool(revoked or added)
        hurry, self._hurry = self._hurry, False
        self._due = now_s if self._ack_due or hurry else now_s + self.heartbeat_interval_ms / 1000

    def _fence_deadline(self) -> float | None:
        """Session: from the last answered send; rebalance: from the first unconfirmed one."""
        if self._alive_until is None or self._unconfirmed_since is None:
            return self._alive_until
        return min(self._alive_until, self._unconfirmed_since + self.rebalance_timeout_ms / 1000)

    def _check_deadline(self, now_s: float) -> bool:
        """Give everything up if the coordinator may have fenced us by now; True if it did."""
        deadline = self.ownership_deadline
        if deadline is None or now_s < deadline:
            return False
        self._lose(deadline)
        if self._in_flight is not None:
            self._in_flight.stale = True
        return True

    def _lose(self, at_s: float) -> None:
        """Drop all partitions without revoking (Kafka's onPartitionsLost) and start over."""
        if self._owned:
            self._end(at_s, "lost", pm.pairs(self._owned), self.on_lost)
        self._pending = {}
        self._job.abandon()
        self._delivered = None
        self.member_epoch, self._due, self._full, self._ack_due = JOIN_EPOCH, -math.inf, True, False
        self._alive_until = self._unconfirmed_since = None

    def _retry(self, now_s: float) -> None:
        self._full = True  # the reply may have carried an assignment: ask for it again
        self._due = now_s + backoff_s(self._retries)
        self._retries = next_retries(self._retries)

    def _end(
        self, at_s: float, event: str, parts: set[tuple[str, int]], cb: Callback | None
    ) -> None:
        """Stop owning ``parts``: the callback runs while they are still listed as owned."""
        self._record(at_s, event, parts)
        try:
            if cb is not None:
                cb(self._render(pm.from_pairs(parts)))
        finally:
            self._owned = pm.minus(self._owned, pm.from_pairs(parts))

    def _send_leave(self, now_s: float) -> m.ConsumerGroupHeartbeatRequest | None:
        if self._owned:
            self._end(now_s, "revoked", pm.pairs(self._owned), self.on_revoke)
        self._pending = {}
        if not self._maybe_member:
            self._stopped = True
            return None
        self._in_flight = _Sent(now_s, leave=True)
        static = self.instance_id is not None  # a static member keeps its place for a while
        self.member_epoch = STATIC_LEAVE_EPOCH if static else LEAVE_EPOCH
        return m.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            instance_id=self.instance_id,
        )

    def _request(self) -> m.ConsumerGroupHeartbeatRequest:
        """A join (epoch 0), a full heartbeat, or a lean one: ids, epoch and what we own."""
        assert self.member_epoch > 0 or not self._owned, "a joining member owns nothing"
        req = m.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            topic_partitions=pm.to_wire(self._owned),
        )
        if self._full or self.member_epoch == JOIN_EPOCH:
            req.instance_id, req.rack_id = self.instance_id, self.rack_id
            req.rebalance_timeout_ms = self.rebalance_timeout_ms
            req.subscribed_topic_names = list(self.topics) if self.topics is not None else None
            req.subscribed_topic_regex = self.topic_regex
            req.server_assignor = self.server_assignor
        if self.client_assignors:
            advert = advertised(self.client_assignors, 0)
            if self._full or self.member_epoch == JOIN_EPOCH or advert != self._reported:
                req.client_assignors, self._reported = advert, advert
        return req

    def _record(self, at_s: float, event: str, parts: Iterable[tuple[str, int]]) -> None:
        self._timeline.append(
            {
                "t": at_s,
                "event": event,
                "partitions": self._render(pm.from_pairs(parts)),
                "epoch": self.member_epoch,
                "member_id": self.member_id,
            }
        )

    def _render(self, parts: PartitionMap) -> Partitions:
        """(name, partition) pairs; a topic whose name is not known yet shows its id."""
        return sorted((self.topic_names.get(t, t), p) for t, ps in parts.items() for p in ps)
