"""The client half of a Connect worker on the new protocol (seed 004), as a pure object.

``ConnectWorkerClient`` is a Kafka Connect worker's ``WorkerCoordinator`` rebuilt for the
``ConnectGroupHeartbeat`` protocol, without the network: it decides which request to send and
when, and what each reply means for the connectors and tasks the worker runs. It never sends,
sleeps or reads a clock: the caller passes ``now_s`` (seconds, monotonic) into every call,
sends what ``poll`` returns, and feeds back ``on_response`` or ``on_failure``. It follows
``ConsumerMemberClient`` (``protocol/client/consumer.py``) wherever the protocols agree:

* it heartbeats at the interval the coordinator gives; the member id is the worker id, chosen
  by the worker and kept for its whole life;
* reconciliation: work a reply takes away is stopped first (timeline "revoked",
  ``on_revoked``) and acknowledged by the very next heartbeat; new work starts
  (``on_assigned``) as the reply grants it (the coordinator grants only work its previous
  owner has released);
* COMPUTE_ASSIGNMENT (an otherwise successful reply) makes it the group's assignor for a
  round: PrepareAssignment, its own ``ConnectAssignor`` over the group's state (with
  ``now_ms``, Connect's delays need the time), InstallAssignment
  (``protocol/client/assignment_job.py``);
* FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: all work is abandoned (timeline "lost") and the
  worker rejoins with epoch 0 under the same worker id;
* the assignor may schedule a rebalance (Connect's ``scheduled.rebalance.max.delay.ms``): the
  coordinator rebalances only when something changes, so when the delay is over the worker
  sends its assignor metadata again with ``reason`` REASON_REBALANCE_DUE (seed 004,
  "Triggering Rebalances");
* a worker that cannot prove it is still in the group stops its work at the earliest moment
  the coordinator could have fenced it (session or rebalance timeout counted from when its
  requests were *sent*), so no task ever runs on two workers, whatever the replies do.

Static workers (``instance_id``) leave with epoch -2 and keep their place for a session;
dynamic ones leave with -1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from assignors.client.interfaces import ConnectAssignor
from assignors.connect import IncrementalCooperativeAssignor
from protocol import messages as m
from protocol.classic.connect_protocol import Work
from protocol.client.assignment_job import AssignmentJob, JobStats
from protocol.client.client_assignors import (
    ConnectFlavour,
    advertised,
    deliver,
    next_rebalance_delay_ms,
)
from protocol.client.connect_ownership import (
    WorkCallback,
    WorkOwnership,
    work_from_wire,
    work_to_wire,
)
from protocol.client.timeline import DEFAULT_MAX_EVENTS
from protocol.consumer.member import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from protocol.errors import COORDINATOR_UNAVAILABLE, Errors
from protocol.retry import backoff_s, next_retries

RETRIABLE = COORDINATOR_UNAVAILABLE | {
    Errors.UNKNOWN_SERVER_ERROR,
    Errors.UNRELEASED_INSTANCE_ID,
    Errors.REBALANCE_IN_PROGRESS,
}
FENCED = frozenset({Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID})
SUCCESS = frozenset({Errors.NONE, Errors.COMPUTE_ASSIGNMENT})


@dataclass
class _Sent:
    """The request in flight: what it was and when it left."""

    kind: str  # "heartbeat" | "leave" | "prepare" | "install"
    at_s: float
    stale: bool = False  # the worker gave up its state meanwhile: the reply means nothing now


class ConnectWorkerClient:
    """One worker of one Connect group: what to send when, and what it runs meanwhile.

    It exists so that the worker's protocol logic runs the same under any host (the
    ``ConnectWorker`` Ray actor, a test's simulated clock next to a coordinator shard) and can
    be checked without Ray, sockets or sleeping. Guarantees: at most one request in flight;
    work runs only between the reply that granted it and the moment it was revoked, lost, or
    could have been fenced away (invariant 1); member epochs never go down (asserted); the
    assignment it installs is computed from a PrepareAssignment reply for that reply's group
    epoch; ``timeline`` records every change (bounded; ``events_recorded`` counts them all).

    ``wall_offset_s`` is added to ``now_s`` for the assignor's ``now_ms``: Connect's delays
    are absolute times in the group's metadata, so every worker should read the same clock
    (a host on several machines passes wall time minus its monotonic time).
    """

    def __init__(
        self,
        group_id: str,
        worker_id: str,
        *,
        instance_id: str | None = None,
        assignors: Sequence[ConnectAssignor] | None = None,
        rebalance_timeout_ms: int = 60_000,
        session_timeout_ms: int = 45_000,
        on_assigned: WorkCallback | None = None,
        on_revoked: WorkCallback | None = None,
        on_lost: WorkCallback | None = None,
        timeline_max_events: int = DEFAULT_MAX_EVENTS,
        wall_offset_s: float = 0.0,
    ) -> None:
        if not worker_id:
            raise ValueError("a worker id is required: it is the member id (seed 004)")
        if rebalance_timeout_ms <= 0 or session_timeout_ms <= 0 or timeline_max_events <= 0:
            raise ValueError("timeouts and the timeline bound must be positive")
        self.group_id, self.member_id, self.instance_id = group_id, worker_id, instance_id
        self.assignors: list[ConnectAssignor] = list(
            assignors if assignors is not None else [IncrementalCooperativeAssignor()]
        )
        if not self.assignors:
            raise ValueError("a Connect worker needs a ConnectAssignor")
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.wall_offset_s = wall_offset_s
        self.member_epoch = JOIN_EPOCH
        self.heartbeat_interval_ms = 0  # unknown until the first reply
        self.error: int | None = None
        self._work = WorkOwnership(on_assigned, on_revoked, on_lost, timeline_max_events)
        self._pending = Work()
        self._job = AssignmentJob(ConnectFlavour(), self.assignors)
        self._in_flight: _Sent | None = None
        self._due = -math.inf  # when the next heartbeat is due; -inf: at once
        self._full = True  # restate every field: a join, or a retry after a lost reply
        self._ack_due = False
        self._retries = 0
        self._alive_until: float | None = None  # no session fence before this
        self._unconfirmed_since: float | None = None  # a revocation may be timing since then
        self._maybe_member = False  # the coordinator may know us: a leave must be sent
        self._leaving = self._stopped = False
        self._reported: list[m.Assignor] | None = None  # the ClientAssignors last sent
        self._delivered: tuple[int, bytes] | None = None  # the assignment metadata last read
        self._rebalance_at_s: float | None = None  # when an assignor's delay is over

    # ------------------------------------------------------------------ what the caller sees

    @property
    def assignment(self) -> dict[str, list]:
        """What runs now: ``{"connectors": [...], "tasks": [(connector, task), ...]}``."""
        return self._work.as_dict()

    @property
    def owned(self) -> Work:
        return self._work.owned

    @property
    def pending(self) -> Work:
        """Assigned but still run by their previous owners: not ours yet."""
        return self._pending

    @property
    def timeline(self) -> list[dict]:
        return self._work.timeline.events

    @property
    def events_recorded(self) -> int:
        return self._work.timeline.recorded

    @property
    def job(self) -> str:
        """The assignment job's state: idle | asked | preparing | ready | installing."""
        return self._job.state

    @property
    def job_stats(self) -> JobStats:
        return self._job.stats

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
        """The earliest time the coordinator may have fenced this worker: from then on its
        work counts as lost (the next call records it at that time)."""
        return self._fence_deadline() if self.member_epoch > 0 else None

    def next_due(self) -> float | None:
        """When the caller should next call ``poll`` (-inf: now; None: only after a reply)."""
        if self.state in ("stopped", "failed"):
            return None
        deadline = self.ownership_deadline
        if self._in_flight is not None:
            return deadline
        due = -math.inf if self._job.has_request else self._due
        if self._rebalance_at_s is not None:
            due = min(due, self._rebalance_at_s)
        return due if deadline is None else min(due, deadline)

    def now_ms(self, now_s: float) -> int:
        return round((now_s + self.wall_offset_s) * 1000)

    # -------------------------------------------------------------------------- the loop

    def poll(self, now_s: float) -> object | None:
        """The request to send now, marked in flight, or None (not due, busy, stopped)."""
        self._check_deadline(now_s)
        if self._in_flight is not None or self.state in ("stopped", "failed"):
            return None
        if self._leaving:
            return self._send_leave(now_s)
        if not self._ack_due and self._job.has_request:
            kind = "prepare" if self._job.state == "asked" else "install"
            request = self._job.next_request(self.group_id, self.member_id, self.member_epoch)
            self._in_flight = _Sent(kind, now_s)
            return request
        advert = advertised(self.assignors, self.now_ms(now_s))
        backing_off = self._retries > 0
        if now_s < self._due and (backing_off or advert == self._reported):
            return None  # a changed advert goes at once, unless the coordinator is away
        self._in_flight = _Sent("heartbeat", now_s)
        self._maybe_member = True
        if self._unconfirmed_since is None:
            self._unconfirmed_since = now_s
        return self._heartbeat(advert)

    def leave(self) -> None:
        """Leave the group: the next poll stops all work and sends the leave heartbeat."""
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
                response, self.group_id, self.member_id, self.member_epoch, self.now_ms(now_s)
            )
            self._after_job(now_s)
        elif sent.kind == "install":
            self._job.on_installed(response)
            self._due = min(self._due, now_s)  # our own target may have changed: ask at once
        else:
            self._on_heartbeat(now_s, sent, response)

    def on_failure(self, now_s: float) -> None:
        """No reply (transport failure, dead coordinator): keep state and retry with backoff."""
        sent = self._finish()
        if sent is None:
            return
        self._check_deadline(now_s)
        if sent.kind in ("prepare", "install"):
            self._job.on_failure()
        self._retry(now_s)

    # -------------------------------------------------------------------------- internals

    def _finish(self) -> _Sent | None:
        sent = self._in_flight
        if sent is None:
            raise RuntimeError(f"worker {self.member_id}: a reply with no request in flight")
        self._in_flight = None
        if sent.kind == "leave":
            self._stopped = True  # whatever the coordinator said, this worker is done
            return None
        return None if sent.stale else sent

    def _after_job(self, now_s: float) -> None:
        """A refused or failed step: the next heartbeat says whether we still compute."""
        if self._job.state == "idle":
            self._due = min(self._due, now_s + backoff_s(0))

    def _on_heartbeat(
        self, now_s: float, sent: _Sent, resp: m.ConnectGroupHeartbeatResponse
    ) -> None:
        code = resp.error_code
        if code in SUCCESS:
            if self._on_success(now_s, sent.at_s, resp) and code == Errors.COMPUTE_ASSIGNMENT:
                self._job.ask()
            return
        self._check_deadline(now_s)
        if code in FENCED:
            self._lose(sent.at_s)  # the coordinator may have acted on it as soon as it arrived
            self._maybe_member = False
        elif code in RETRIABLE:
            self._retry(now_s)
        else:
            self._lose(sent.at_s)
            self.error = code

    def _on_success(
        self, now_s: float, sent_at_s: float, resp: m.ConnectGroupHeartbeatResponse
    ) -> bool:
        """Apply a successful reply; False if it came too late to be trusted."""
        owned, assignment = self._work.owned, resp.assignment
        target = owned if assignment is None else work_from_wire(assignment.connectors_and_tasks)
        revoked, added = owned - target, target - owned
        self._alive_until = sent_at_s + self.session_timeout_ms / 1000
        if not revoked:
            self._unconfirmed_since = None  # the coordinator waits for no revocation from us
        deadline = self._fence_deadline()
        if deadline is not None and now_s >= deadline:
            self._lose(deadline)  # read too late to trust (even a join's reply): start over
            return False
        assert resp.member_epoch >= self.member_epoch, "member epochs never go down"
        self.member_epoch = resp.member_epoch
        self.member_id = resp.member_id or self.member_id
        if resp.heartbeat_interval_ms > 0:
            self.heartbeat_interval_ms = resp.heartbeat_interval_ms
        self._retries, self._full = 0, False
        if self._leaving:
            return False  # everything goes at the leave; take nothing new
        if assignment is not None:
            self._pending = work_from_wire(assignment.pending_connectors_and_tasks)
            epoch, mid = self.member_epoch, self.member_id
            self._work.end(now_s, "revoked", revoked, epoch, mid)
            self._work.assign(now_s, added, epoch, mid)
            self._deliver(now_s, assignment)
        self._ack_due = bool(revoked or added)
        self._due = now_s if self._ack_due else now_s + self.heartbeat_interval_ms / 1000
        return True

    def _deliver(self, now_s: float, assignment: m.ConnectGroupAssignment) -> None:
        """New assignment metadata goes to the assignor, which may schedule a rebalance."""
        got = (assignment.metadata_version, bytes(assignment.metadata_bytes))
        if got == self._delivered:
            return
        self._delivered = got
        if got[1]:
            deliver(self.assignors, self.member_id, assignment.error, *got)
        else:
            self._reset_assignors()  # nothing installed for us: metadata from scratch
        delay_ms = next_rebalance_delay_ms(self.assignors, self.now_ms(now_s))
        self._rebalance_at_s = None if delay_ms is None else now_s + delay_ms / 1000

    def _reset_assignors(self) -> None:
        for a in self.assignors:
            reset = getattr(a, "reset", None)
            if callable(reset):
                reset()

    def _fence_deadline(self) -> float | None:
        """Session: from the last answered send; rebalance: from the first unconfirmed one."""
        if self._alive_until is None or self._unconfirmed_since is None:
            return self._alive_until
        return min(self._alive_until, self._unconfirmed_since + self.rebalance_timeout_ms / 1000)

    def _check_deadline(self, now_s: float) -> bool:
        """Give all work up if the coordinator may have fenced us by now; True if it did."""
        deadline = self.ownership_deadline
        if deadline is None or now_s < deadline:
            return False
        self._lose(deadline)
        if self._in_flight is not None:
            self._in_flight.stale = True
        return True

    def _lose(self, at_s: float) -> None:
        """Abandon all work without revoking, forget the round, rejoin at epoch 0."""
        self._work.end(at_s, "lost", self._work.owned, self.member_epoch, self.member_id)
        self._pending = Work()
        self._job.abandon()
        self._reset_assignors()  # their memory belonged to the membership we just lost
        self._delivered = self._rebalance_at_s = None
        self.member_epoch, self._due, self._full, self._ack_due = JOIN_EPOCH, -math.inf, True, False
        self._alive_until = self._unconfirmed_since = None

    def _retry(self, now_s: float) -> None:
        self._full = True  # the reply may have carried an assignment: ask for it again
        self._due = now_s + backoff_s(self._retries)
        self._retries = next_retries(self._retries)

    def _send_leave(self, now_s: float) -> m.ConnectGroupHeartbeatRequest | None:
        self._work.end(now_s, "revoked", self._work.owned, self.member_epoch, self.member_id)
        self._pending = Work()
        self._job.abandon()
        if not self._maybe_member:
            self._stopped = True
            return None
        self._in_flight = _Sent("leave", now_s)
        static = self.instance_id is not None  # a static worker keeps its place for a while
        self.member_epoch = STATIC_LEAVE_EPOCH if static else LEAVE_EPOCH
        return m.ConnectGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            instance_id=self.instance_id,
        )

    def _heartbeat(self, advert: list[m.Assignor]) -> m.ConnectGroupHeartbeatRequest:
        """A join (epoch 0), a full heartbeat, or a lean one: ids, epoch, what we run, and the
        assignors' metadata whenever it changed (a new reason asks for a rebalance)."""
        assert self.member_epoch > 0 or not self._work.owned, "a joining worker runs nothing"
        req = m.ConnectGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            connectors_and_tasks=work_to_wire(self._work.owned),
        )
        if self._full or self.member_epoch == JOIN_EPOCH:
            req.instance_id = self.instance_id
            req.rebalance_timeout_ms = self.rebalance_timeout_ms
        if self._full or self.member_epoch == JOIN_EPOCH or advert != self._reported:
            req.client_assignors = advert
            self._reported = advert
            if self._rebalance_at_s is not None and any(a.reason for a in advert):
                self._rebalance_at_s = None  # asked: wait for the next assignment
        return req
