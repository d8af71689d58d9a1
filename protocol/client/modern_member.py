"""The client core of a KIP-848-style group member, generic over the units it is assigned.

A KIP-848 consumer (``protocol/client/consumer.py``, topic partitions) and a Connect worker on
the new protocol (``protocol/client/connect_worker.py``, connectors and tasks) run one loop:
heartbeat at the interval the coordinator gives, reconcile each reply's assignment (revoke
before acknowledging, never take what is still pending), lose everything and rejoin at epoch 0
when fenced, back off on retriable errors, run a client-side assignment round when asked
(``protocol/client/assignment_job.py``), and give everything up at the earliest moment the
coordinator could have fenced the member (session or rebalance timeout counted from when the
requests were *sent*), whether or not replies arrive (invariant 1). ``ModernMemberClient`` is
that loop, written once; a half says only what differs, by name:

* its units: an ``Ownership`` over them and how an assignment's wire form becomes them
  (``_target``, ``_pending_of``);
* its heartbeat: the request class and the fields a full heartbeat restates (``_restate``);
* its assignors: which reply asks it to compute (``_wants_job``), what it advertises and
  what a new assignment's metadata does (``_on_metadata``);
* ``SUCCESS``: the reply codes that carry an assignment;
* ``leave_waits_for_backoff``: whether a leave waits out a retry's backoff (consumers do).

It never sends, sleeps or reads a clock: the host passes ``now_s`` (monotonic seconds) into
every call, sends what ``poll`` returns and feeds back ``on_response`` or ``on_failure``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from assignors.client.interfaces import Assignor
from protocol import messages as m
from protocol.client.assignment_job import AssignmentJob, Flavour, JobStats
from protocol.client.client_assignors import advertised, deliver
from protocol.client.member import GroupMember
from protocol.client.ownership import Ownership
from protocol.consumer.member import JOIN_EPOCH, LEAVE_EPOCH, STATIC_LEAVE_EPOCH
from protocol.errors import COORDINATOR_UNAVAILABLE, Errors
from protocol.retry import backoff_s

# Errors after which the same request may simply be tried again (Kafka's retriable ones).
# REBALANCE_IN_PROGRESS: a classic group converts to the new protocol only once it is stable.
RETRIABLE = COORDINATOR_UNAVAILABLE | {
    Errors.UNKNOWN_SERVER_ERROR,
    Errors.UNRELEASED_INSTANCE_ID,
    Errors.REBALANCE_IN_PROGRESS,
}
FENCED = frozenset({Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID})
DONE = ("stopped", "failed")


class ModernMemberClient(GroupMember):
    """One member of one KIP-848-style group: what to send when, and what it owns meanwhile.

    Guarantees: at most one request in flight; units are used only between the reply that
    granted them and the moment they were revoked, lost, or could have been fenced away
    (invariant 1); member epochs never go down (asserted); an assignment it installs is
    computed from a PrepareAssignment reply for that reply's group epoch; ``timeline``
    records every change (bounded; ``events_recorded`` counts them all).
    """

    HEARTBEAT: ClassVar[type]  # the heartbeat request class
    RESPONSE: ClassVar[type]  # and its response
    SUCCESS: ClassVar[frozenset[int]] = frozenset({Errors.NONE})
    leave_waits_for_backoff: ClassVar[bool] = False

    def __init__(
        self,
        group_id: str,
        member_id: str,
        *,
        ownership: Callable[[int], Ownership],
        flavour: Flavour,
        assignors: Sequence[Assignor],
        instance_id: str | None,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        timeline_max_events: int,
        wall_offset_s: float = 0.0,
    ) -> None:
        if rebalance_timeout_ms <= 0 or session_timeout_ms <= 0 or timeline_max_events <= 0:
            raise ValueError("timeouts and the timeline bound must be positive")
        super().__init__(ownership, timeline_max_events)
        self.group_id, self.member_id, self.instance_id = group_id, member_id, instance_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.session_timeout_ms = session_timeout_ms
        self.wall_offset_s = wall_offset_s
        self.member_epoch = JOIN_EPOCH
        self.heartbeat_interval_ms = 0  # unknown until the first reply
        self.error: int | None = None
        self._pending = self._own.EMPTY
        self._assignors = list(assignors)
        self._job = AssignmentJob(flavour, self._assignors)
        self._full = True  # restate every field: a join, or a retry after a lost reply
        self._ack_due = False
        self._hurry = False  # woken while a heartbeat was in flight: send the next at once
        self._alive_until: float | None = None  # no session fence before this
        self._unconfirmed_since: float | None = None  # a revocation may be timing since then
        self._maybe_member = False  # the coordinator may know us: a leave must be sent
        self._leaving = self._stopped = False
        self._reported: list[m.Assignor] | None = None  # the ClientAssignors last sent
        self._delivered: tuple[int, bytes] | None = None  # the assignment metadata last read

    # ------------------------------------------------------------------ what the caller sees

    @property
    def job(self) -> str:
        """The client-side assignment job: idle | asked | preparing | ready | installing."""
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
        """The earliest time the coordinator may have fenced this member, given what it knows.

        From then on its units count as lost (the next call records it at that time); a host
        should stop using them then even if it has not called in.
        """
        return self._fence_deadline() if self.member_epoch > 0 else None

    def now_ms(self, now_s: float) -> int:
        return round((now_s + self.wall_offset_s) * 1000)

    # -------------------------------------------------------------------------- the loop

    def poll(self, now_s: float) -> object | None:
        """The request to send now, marked in flight, or None (not due, busy, stopped): a
        heartbeat, or a step of a client-side assignment this member was asked to run."""
        self._check_deadline(now_s)
        if self._in_flight is not None or self.state in DONE:
            return None
        if self._leaving:
            if self.leave_waits_for_backoff and now_s < self._due:
                return None
            return self._send_leave(now_s)
        if self._job.has_request and not self._ack_due:
            kind = "prepare" if self._job.state == "asked" else "install"
            request = self._job.next_request(self.group_id, self.member_id, self.member_epoch)
            return self._send(now_s, kind, request)
        if not self._heartbeat_due(now_s):
            return None
        self._maybe_member = True
        if self._unconfirmed_since is None:
            self._unconfirmed_since = now_s
        return self._send(now_s, "heartbeat", self._request(now_s))

    def heartbeat_now(self) -> bool:
        """Make the next heartbeat due at once (the coordinator said something changed for
        us); False when there is nothing to hurry (stopped, leaving, or already due). With a
        heartbeat in flight, the next one goes as soon as its reply is read: the coordinator
        may have answered it before the change it woke us for."""
        if self.state in DONE or self._leaving:
            return False
        if self._in_flight is not None:
            hurried, self._hurry = self._hurry, True
            return not hurried
        if self._due == -math.inf:
            return False
        self._due = -math.inf
        return True

    def leave(self) -> None:
        """Leave the group: the next poll gives up everything and sends the leave heartbeat."""
        if self.state in DONE:
            return
        self._leaving, self._due = True, -math.inf
        self._job.abandon()
        if not self._maybe_member and self._in_flight is None:
            self._stopped = True  # the coordinator never heard of us: nothing to say

    def on_response(self, now_s: float, response: Any) -> None:
        """The reply to the request in flight, read at ``now_s``."""
        sent = self._finish()
        if sent is None:
            return
        if sent.kind == "prepare":
            self._job.on_prepared(
                response, self.group_id, self.member_id, self.member_epoch, self.now_ms(now_s)
            )
            if self._job.state == "idle":  # refused: the next heartbeat says what is next
                self._due = min(self._due, now_s + backoff_s(0))
            return
        if sent.kind == "install":
            self._job.on_installed(response)
            self._due = min(self._due, now_s)  # our own target may have changed: ask at once
            return
        assert isinstance(response, self.RESPONSE)
        code = response.error_code
        if code in self.SUCCESS:
            self._on_success(now_s, sent.at_s, response)
            return
        was_member = self.member_epoch > 0  # the request was not a join
        self._check_deadline(now_s)
        if code in FENCED or (code == Errors.GROUP_ID_NOT_FOUND and was_member):
            # GROUP_ID_NOT_FOUND to a member that had joined: while it was away its group
            # became a classic one (the last new-protocol member left a mixed group), which
            # Kafka answers so to a heartbeat that is not a join. It is no longer a member:
            # as fenced, it rejoins at epoch 0 (a join may upgrade the group again).
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
        if sent is None:
            return
        self._check_deadline(now_s)
        if sent.kind != "heartbeat":
            self._job.on_failure()
        self._retry(now_s)

    # -------------------------------------------------------------------------- internals

    def _done(self) -> bool:
        return self.state in DONE

    def _left(self) -> None:
        self._stopped = True

    def _request_due(self) -> float:
        return -math.inf if self._job.has_request else super()._request_due()

    def _on_success(self, now_s: float, sent_at_s: float, resp: Any) -> None:
        owned, assignment = self._own.owned, resp.assignment
        target = owned if assignment is None else self._target(assignment)
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
        if self._wants_job(resp):
            self._job.ask()
        if assignment is not None:
            self._pending = self._pending_of(assignment)
            epoch, mid = self.member_epoch, self.member_id
            self._own.end(now_s, "revoked", revoked, epoch, mid)
            self._own.assign(now_s, added, epoch, mid)
            self._deliver(now_s, assignment)
        self._ack_due = bool(revoked or added)
        hurry, self._hurry = self._hurry, False
        self._due = now_s if self._ack_due or hurry else now_s + self.heartbeat_interval_ms / 1000

    def _deliver(self, now_s: float, assignment: Any) -> None:
        """New assignment metadata goes to the client-side assignors (once per change)."""
        got = (assignment.metadata_version, bytes(assignment.metadata_bytes))
        if not self._assignors or got == self._delivered:
            return
        self._delivered = got
        self._on_metadata(now_s, assignment.error, got)

    def _on_metadata(self, now_s: float, error: int, got: tuple[int, bytes]) -> None:
        deliver(self._assignors, self.member_id, error, *got)

    def _fence_deadline(self) -> float | None:
        """Session: from the last answered send; rebalance: from the first unconfirmed one."""
        if self._alive_until is None or self._unconfirmed_since is None:
            return self._alive_until
        return min(self._alive_until, self._unconfirmed_since + self.rebalance_timeout_ms / 1000)

    def _lose(self, at_s: float) -> None:
        """Drop every unit without revoking (Kafka's onPartitionsLost) and rejoin at epoch 0."""
        self._own.end_all(at_s, "lost", self.member_epoch, self.member_id)
        self._pending = self._own.EMPTY
        self._job.abandon()
        self._delivered = None
        self._forget()
        self.member_epoch, self._due, self._full, self._ack_due = JOIN_EPOCH, -math.inf, True, False
        self._alive_until = self._unconfirmed_since = None

    def _retry(self, now_s: float) -> None:
        self._full = True  # the reply may have carried an assignment: ask for it again
        self._back_off(now_s)

    def _send_leave(self, now_s: float) -> object | None:
        self._own.end_all(now_s, "revoked", self.member_epoch, self.member_id)
        self._pending = self._own.EMPTY
        self._job.abandon()
        if not self._maybe_member:
            self._stopped = True
            return None
        static = self.instance_id is not None  # a static member keeps its place for a while
        self.member_epoch = STATIC_LEAVE_EPOCH if static else LEAVE_EPOCH
        request = self.HEARTBEAT(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.member_epoch,
            instance_id=self.instance_id,
        )
        return self._send(now_s, "leave", request)

    def _request(self, now_s: float) -> Any:
        """A join (epoch 0), a full heartbeat, or a lean one: ids, epoch, what we own, and
        the client assignors whenever they changed."""
        assert self.member_epoch > 0 or not self._own.owned, "a joining member owns nothing"
        req = self.HEARTBEAT(
            group_id=self.group_id, member_id=self.member_id, member_epoch=self.member_epoch
        )
        self._report_owned(req)
        full = self._full or self.member_epoch == JOIN_EPOCH
        if full:
            req.instance_id = self.instance_id
            req.rebalance_timeout_ms = self.rebalance_timeout_ms
            self._restate(req)
        if self._assignors:
            advert = self._advert(now_s)
            if full or advert != self._reported:
                req.client_assignors = self._reported = advert
        return req

    # ------------------------------------------------------------------ what a half says

    def _target(self, assignment: Any) -> Any:
        """The units an assignment (wire form) assigns to this member."""
        raise NotImplementedError

    def _pending_of(self, assignment: Any) -> Any:
        """The units assigned but still held by their previous owners."""
        raise NotImplementedError

    def _report_owned(self, req: Any) -> None:
        """Put what the member owns into a heartbeat."""
        raise NotImplementedError

    def _restate(self, req: Any) -> None:
        """The half's own fields of a join or full heartbeat (none by default)."""

    def _wants_job(self, resp: Any) -> bool:
        """Whether a successful reply asks this member to compute the assignment."""
        raise NotImplementedError

    def _advert(self, now_s: float) -> list[m.Assignor]:
        return advertised(self._assignors, self.now_ms(now_s))

    def _heartbeat_due(self, now_s: float) -> bool:
        return now_s >= self._due

    def _forget(self) -> None:
        """What else the member drops when it loses its membership (nothing by default)."""
