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

The loop itself is ``ModernMemberClient`` (``protocol/client/modern_member.py``), shared with
the consumer; this module says what is a worker's own: its units (connectors and tasks), that
COMPUTE_ASSIGNMENT is a success, and the scheduled rebalances of its assignors.
"""

from __future__ import annotations

from collections.abc import Sequence

from assignors.client.interfaces import ConnectAssignor
from assignors.connect import IncrementalCooperativeAssignor
from protocol import messages as m
from protocol.classic.connect_protocol import Work
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
from protocol.client.modern_member import ModernMemberClient
from protocol.client.timeline import DEFAULT_MAX_EVENTS
from protocol.errors import Errors


class ConnectWorkerClient(ModernMemberClient):
    """One worker of one Connect group: what to send when, and what it runs meanwhile.

    It exists so that the worker's protocol logic runs the same under any host (the
    ``ConnectWorker`` Ray actor, a test's simulated clock next to a coordinator shard) and can
    be checked without Ray, sockets or sleeping. Guarantees (``ModernMemberClient``'s): at
    most one request in flight; work runs only between the reply that granted it and the
    moment it was revoked, lost, or could have been fenced away (invariant 1); member epochs
    never go down (asserted); the assignment it installs is computed from a PrepareAssignment
    reply for that reply's group epoch; ``timeline`` records every change (bounded;
    ``events_recorded`` counts them all). ``now_ms`` (the assignors' time) is the host's
    monotonic time plus ``wall_offset_s``, so that workers' delays agree on the same clock
    (a host on several machines passes wall time minus its monotonic time).
    """

    HEARTBEAT = m.ConnectGroupHeartbeatRequest
    RESPONSE = m.ConnectGroupHeartbeatResponse
    SUCCESS = frozenset({Errors.NONE, Errors.COMPUTE_ASSIGNMENT})
    role = "worker"

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
        chosen = list(assignors if assignors is not None else [IncrementalCooperativeAssignor()])
        if not chosen:
            raise ValueError("a Connect worker needs a ConnectAssignor")
        super().__init__(
            group_id,
            worker_id,
            ownership=lambda n: WorkOwnership(on_assigned, on_revoked, on_lost, n),
            flavour=ConnectFlavour(),
            assignors=chosen,
            instance_id=instance_id,
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            timeline_max_events=timeline_max_events,
            wall_offset_s=wall_offset_s,
        )
        self.assignors: list[ConnectAssignor] = self._assignors
        self._advert_now: list[m.Assignor] | None = None  # computed by the last poll
        self._rebalance_at_s: float | None = None  # when an assignor's delay is over

    # ------------------------------------------------------------------ what the caller sees

    @property
    def pending(self) -> Work:
        """Assigned but still run by their previous owners: not ours yet."""
        return self._pending

    # ------------------------------------------------------------------ a worker's own

    def _target(self, assignment: m.ConnectGroupAssignment) -> Work:
        return work_from_wire(assignment.connectors_and_tasks)

    def _pending_of(self, assignment: m.ConnectGroupAssignment) -> Work:
        return work_from_wire(assignment.pending_connectors_and_tasks)

    def _report_owned(self, req: m.ConnectGroupHeartbeatRequest) -> None:
        req.connectors_and_tasks = work_to_wire(self._own.owned)

    def _wants_job(self, resp: m.ConnectGroupHeartbeatResponse) -> bool:
        return resp.error_code == Errors.COMPUTE_ASSIGNMENT

    def _heartbeat_due(self, now_s: float) -> bool:
        """Due at the interval, or at once when the assignors' advert changed (unless the
        coordinator is away and we are backing off)."""
        self._advert_now = advertised(self.assignors, self.now_ms(now_s))
        backing_off = self._retries > 0
        return now_s >= self._due or (not backing_off and self._advert_now != self._reported)

    def _advert(self, now_s: float) -> list[m.Assignor]:
        return self._advert_now if self._advert_now is not None else super()._advert(now_s)

    def _request(self, now_s: float) -> m.ConnectGroupHeartbeatRequest:
        req = super()._request(now_s)
        asked = req.client_assignors is not None and any(a.reason for a in req.client_assignors)
        if asked and self._rebalance_at_s is not None:
            self._rebalance_at_s = None  # asked: wait for the next assignment
        return req

    def _on_metadata(self, now_s: float, error: int, got: tuple[int, bytes]) -> None:
        """New assignment metadata goes to the assignor, which may schedule a rebalance."""
        if got[1]:
            deliver(self.assignors, self.member_id, error, *got)
        else:
            self._reset_assignors()  # nothing installed for us: metadata from scratch
        delay_ms = next_rebalance_delay_ms(self.assignors, self.now_ms(now_s))
        self._rebalance_at_s = None if delay_ms is None else now_s + delay_ms / 1000

    def _extra_due(self) -> float | None:
        return self._rebalance_at_s

    def _forget(self) -> None:
        self._reset_assignors()  # their memory belonged to the membership we just lost
        self._rebalance_at_s = None

    def _reset_assignors(self) -> None:
        for a in self.assignors:
            reset = getattr(a, "reset", None)
            if callable(reset):
                reset()
