"""The client core of a classic group member (JoinGroup/SyncGroup), for any protocol type.

A classic consumer (``protocol/client/classic.py``, topic partitions) and a classic Connect
worker (``protocol/client/classic_connect.py``, connectors and tasks) run Kafka's
``AbstractCoordinator``, one request at a time (state while it waits -> on success; the
"rejoin" errors REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID send every state
back to ``unjoined``)::

    unjoined  --JoinGroup-->   joining  -> syncing (MEMBER_ID_REQUIRED: unjoined, with the id)
    syncing   --SyncGroup-->   syncing  -> stable  (or unjoined: a half may rejoin at once)
    stable    --Heartbeat-->   stable   -> stable
    (any)     leave()  -->     leaving  --LeaveGroup (dynamic or forced)--> stopped
    FENCED_INSTANCE_ID -> fenced; a non-retriable error -> failed; nothing more after these.

``ClassicGroupMember`` is that machine and its ownership rule, written once. Safety
(invariant 1) does not rest on the replies alone: a member that cannot prove it is still in
the group gives its units up (timeline "lost") at the earliest moment the coordinator could
have removed it: the session timeout, or the rebalance timeout if shorter (a rebalance the
member misses removes it), counted from the *send* time of the last heartbeat or SyncGroup
that succeeded. The one exception is the JoinGroup: the coordinator holds it until the whole
group has rejoined and does not expire the member meanwhile (seed 003), so while one is out
the units are kept up to rebalance + session timeouts from its send; the reply that ends the
join phase restarts the session (and starts the rebalance timeout for the SyncGroup; a repeat
of that reply restarts neither). Both rest on one assumption about the transport: a reply
the coordinator held is read as soon as it is sent (a JoinGroup reply lost on the way must
surface as ``on_failure``, which falls back to the last proven session). Replies read later
than the deadline are not trusted.

What a half says, by name: ``PROTOCOL_TYPE``, ``PROTOCOL_ERROR`` and ``LEAVE_REASON``; its
JoinGroup protocols (``_join_protocols``); what the leader does with a JoinGroup reply
(``_lead``); what a SyncGroup assignment changes (``_decode``, ``_delta``); whether it rejoins
at once after a revocation (``_rejoins_at_once``) or later (``_extra_due``, ``_rejoin_due``);
and ``leave_waits_for_backoff``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

from protocol import messages as m
from protocol.client.member import GroupMember, Sent
from protocol.client.ownership import Ownership
from protocol.errors import COORDINATOR_UNAVAILABLE, Errors

STATES = ("unjoined", "joining", "syncing", "stable", "leaving", "fenced", "failed", "stopped")
TERMINAL = frozenset({"fenced", "failed", "stopped"})
NO_GENERATION = -1

# Errors after which the same step may be tried again later (Kafka's retriable ones).
RETRIABLE = COORDINATOR_UNAVAILABLE | {Errors.UNKNOWN_SERVER_ERROR, Errors.UNRELEASED_INSTANCE_ID}


class ClassicGroupMember(GroupMember):
    """One member of one classic group: what to send when, and what it owns meanwhile.

    Guarantees: at most one request in flight; no heartbeat while a JoinGroup waits (seed
    003); units are used only between the SyncGroup reply that granted them and the moment
    they were revoked, lost, or could have been taken away, whether or not replies arrive
    (invariant 1); each callback runs while its units are still listed; ``timeline`` records
    every change (bounded: the oldest events are dropped first; ``events_recorded`` counts
    them all).
    """

    PROTOCOL_TYPE: ClassVar[str]
    PROTOCOL_ERROR: ClassVar[type[Exception]]
    LEAVE_REASON: ClassVar[str]
    leave_waits_for_backoff: ClassVar[bool] = True
    instance_id: str | None = None

    def __init__(
        self,
        group_id: str,
        ownership: Callable[[int], Ownership],
        timeouts_ms: tuple[int, int, int],
        timeline_max_events: int,
        join_reason: str | None = None,
    ) -> None:
        """``timeouts_ms``: (session timeout, rebalance timeout, heartbeat interval)."""
        if min(timeouts_ms) <= 0:
            raise ValueError("timeouts and the heartbeat interval must be positive")
        super().__init__(ownership, timeline_max_events)
        self.group_id = group_id
        self.session_timeout_ms, self.rebalance_timeout_ms, self.heartbeat_interval_ms = (
            timeouts_ms
        )
        self.generation = NO_GENERATION
        self.protocol_name: str | None = None
        self.leader_id = ""  # of the last JoinGroup reply read
        self.error: int | None = None
        self.rebalances = 0  # SyncGroups completed
        self._state = "unjoined"
        self._reason = join_reason  # for the next JoinGroup; cleared once one succeeds
        self._rejoin_requested = False
        self._sync_assignments: list[m.SyncGroupRequestAssignment] = []
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
    def ownership_deadline(self) -> float | None:
        """The earliest time the coordinator may have removed this member, given what it
        knows (None while it owns nothing). From then on its units count as lost (the next
        call records it); a host should stop using them then."""
        if not self._own.owned:
            return None
        if self._held_since is not None:
            return self._held_since + (self.rebalance_timeout_ms + self.session_timeout_ms) / 1000
        return self._alive_until

    # -------------------------------------------------------------------------- the loop

    def poll(self, now_s: float) -> object | None:
        """The request to send now, marked in flight, or None (not due, busy, stopped)."""
        self._check_deadline(now_s)
        if self._in_flight is not None or self._state in TERMINAL:
            return None
        if self._state == "leaving":
            if self.leave_waits_for_backoff and now_s < self._due:
                return None
            return self._send_leave(now_s)
        if self._state == "stable" and self._rejoin_due(now_s):
            self._state, self._due = "unjoined", min(self._due, now_s)
        if now_s < self._due:
            return None
        if self._state == "unjoined":
            return self._send_join(now_s)
        if self._state == "syncing":
            return self._send_sync(now_s)
        beat = m.HeartbeatRequest(self.group_id, self.generation, self.member_id, self.instance_id)
        return self._send(now_s, "heartbeat", beat)

    def on_response(self, now_s: float, response: object) -> None:
        """The reply to the request in flight, read at ``now_s``."""
        sent = self._finish()
        if sent is None:
            return
        code = getattr(response, "error_code", Errors.UNKNOWN_SERVER_ERROR)
        if self._check_deadline(now_s) and code == Errors.NONE:
            return  # read too late to trust: everything was given up, start over
        if sent.kind == "join":
            self._held_since = None  # the coordinator let go of our JoinGroup
        if code != Errors.NONE:
            self._on_error(now_s, sent, code, response)
        elif sent.kind == "join":
            self._joined(now_s, sent, response)  # type: ignore[arg-type]
        elif sent.kind == "sync":
            self._synced(now_s, sent, response)  # type: ignore[arg-type]
        else:
            self._heartbeat_ok(now_s, sent)

    def on_failure(self, now_s: float) -> None:
        """No reply (transport failure, dead coordinator, timeout): retry with backoff."""
        sent = self._finish()
        if sent is None:
            return
        self._held_since = None  # nothing shows the coordinator holds a request of ours
        self._check_deadline(now_s)
        self._retry(now_s, rejoin=sent.kind != "heartbeat")

    def leave(self, force: bool = False) -> None:
        """Close: the next poll revokes everything; a dynamic member (or any, with ``force``)
        also sends LeaveGroup. A static member by Kafka's rule keeps its place in the group
        until its session ends, so that a restart under the same instance id takes it back
        without a rebalance."""
        if self._state in TERMINAL:
            return
        self._state, self._due = "leaving", -math.inf
        self._force_leave = self._force_leave or force

    # ------------------------------------------------------------------- sending

    def _send_join(self, now_s: float) -> m.JoinGroupRequest:
        protocols = self._join_protocols(now_s)
        self._rejoin_requested = False
        self._held_since, self._state = now_s, "joining"
        timeouts = (self.session_timeout_ms, self.rebalance_timeout_ms)
        request = m.JoinGroupRequest(
            self.group_id, *timeouts, self.member_id, self.instance_id,
            protocol_type=self.PROTOCOL_TYPE, protocols=protocols, reason=self._reason,
        )
        return self._send(now_s, "join", request)

    def _send_sync(self, now_s: float) -> m.SyncGroupRequest:
        request = m.SyncGroupRequest(
            self.group_id, self.generation, self.member_id, self.instance_id,
            protocol_type=self.PROTOCOL_TYPE, protocol_name=self.protocol_name,
            assignments=self._sync_assignments,
        )
        return self._send(now_s, "sync", request)

    def _send_leave(self, now_s: float) -> m.LeaveGroupRequest | None:
        self._own.end_all(now_s, "revoked", self.generation, self.member_id)
        self._held_since = self._alive_until = None
        dynamic = self.instance_id is None
        if not self.member_id or not (dynamic or self._force_leave):
            self._state = "stopped"  # the coordinator knows no id of ours, or keeps our place
            return None
        identity = m.MemberIdentity(self.member_id, self.instance_id, self.LEAVE_REASON)
        return self._send(
            now_s, "leave", m.LeaveGroupRequest(group_id=self.group_id, members=[identity])
        )

    # ------------------------------------------------------------------- replies

    def _done(self) -> bool:
        return self._state in TERMINAL

    def _left(self) -> None:
        self._state = "stopped"

    def _joined(self, now_s: float, sent: Sent, resp: m.JoinGroupResponse) -> None:
        if resp.generation_id != self._joined_generation:
            # The join phase just ended (held replies are read as soon as they are sent): it
            # restarted our session and gave us the rebalance timeout to sync. A repeat of a
            # generation's reply (ours was lost) restarts neither clock: keep the first one.
            self._alive_until = now_s + self._session_bound_s()
            self._joined_generation = resp.generation_id
        self.member_id, self.generation = resp.member_id or self.member_id, resp.generation_id
        self.protocol_name, self._reason, self._retries = resp.protocol_name, None, 0
        self.leader_id = resp.leader
        if self._state == "leaving":
            # Adopt the ids (the LeaveGroup names them) and stop the work now: a generation
            # that counts us has formed, and its leader may already have handed our work to
            # others (an eager round assumes every member stopped before joining), who may
            # start it before our next poll sends the LeaveGroup.
            self._own.end_all(now_s, "revoked", self.generation, self.member_id)
            return
        self._sync_assignments = []
        if self._lead(now_s, sent, resp):
            self._state, self._due = "syncing", now_s

    def _synced(self, now_s: float, sent: Sent, resp: m.SyncGroupResponse) -> None:
        try:
            assignment = self._decode(resp.assignment)
        except self.PROTOCOL_ERROR:
            self._retry(now_s, rejoin=True)  # Kafka fails the rebalance; try a fresh one
            return
        self._alive_until = sent.at_s + self._session_bound_s()  # its arrival restarted it
        self._retries = 0
        self.rebalances += 1
        if self._state == "leaving":
            return  # everything goes at the leave; take nothing new
        if now_s >= self._alive_until:
            self._lose(self._alive_until)  # read too late to trust: start over
            return
        delta = self._delta(assignment)
        if delta is None:
            self._retry(now_s, rejoin=True)  # the leader refused the round: rejoin
            return
        revoked, added = delta
        self._own.end(now_s, "revoked", revoked, self.generation, self.member_id)
        self._own.assign(now_s, added, self.generation, self.member_id)
        if revoked and self._rejoins_at_once():
            self._state, self._due = "unjoined", now_s  # hand them over in a second rebalance
            return
        self._state = "stable"
        self._due = now_s if self._rejoin_requested else now_s + self.heartbeat_interval_ms / 1000
        self._settled(now_s, revoked, assignment)

    def _heartbeat_ok(self, now_s: float, sent: Sent) -> None:
        self._alive_until = sent.at_s + self._session_bound_s()
        self._retries = 0
        if self._state == "stable":
            interval_s = self.heartbeat_interval_ms / 1000
            self._due = now_s if self._rejoin_requested else now_s + interval_s

    def _on_error(self, now_s: float, sent: Sent, code: int, resp: object) -> None:
        """Kafka's AbstractCoordinator: the same codes mean the same for every request."""
        if self._state == "leaving":
            return
        if code == Errors.MEMBER_ID_REQUIRED and sent.kind == "join":
            self.member_id = getattr(resp, "member_id", "") or self.member_id
            self._state, self._due = "unjoined", now_s  # rejoin at once under that id
        elif code == Errors.REBALANCE_IN_PROGRESS:
            self._state, self._due = "unjoined", now_s
        elif code == Errors.ILLEGAL_GENERATION:
            self._lose(sent.at_s)
        elif code == Errors.UNKNOWN_MEMBER_ID:
            self._lose(sent.at_s)
            self.member_id = ""
        elif code == Errors.FENCED_INSTANCE_ID:
            self._lose(sent.at_s)
            self._state, self.error = "fenced", code
        elif code in RETRIABLE:
            self._retry(now_s, rejoin=sent.kind != "heartbeat")
        else:
            self._fail(sent.at_s, code)

    def _retry(self, now_s: float, rejoin: bool) -> None:
        """Back off; a failed JoinGroup or SyncGroup restarts with a JoinGroup (Kafka)."""
        if self._state in TERMINAL or self._state == "leaving":
            return
        self._held_since = None
        if rejoin:
            self._state = "unjoined"
        self._back_off(now_s)

    # ------------------------------------------------------------------- ownership

    def _session_bound_s(self) -> float:
        """After a success: the session ends, or a rebalance we miss removes us, no sooner."""
        return min(self.session_timeout_ms, self.rebalance_timeout_ms) / 1000

    def _lose(self, at_s: float) -> None:
        """Drop every unit without revoking (Kafka's onPartitionsLost), forget the
        generation (its ownership claims are void) and rejoin at once."""
        self._own.end_all(at_s, "lost", self.generation, self.member_id)
        self.generation, self._alive_until, self._held_since = NO_GENERATION, None, None
        self._forget_leadership()
        if self._state not in TERMINAL and self._state != "leaving":
            self._state, self._due = "unjoined", -math.inf

    def _fail(self, at_s: float, code: int) -> None:
        self._lose(at_s)
        self._state, self.error = "failed", code

    # ------------------------------------------------------------------ what a half says

    def _join_protocols(self, now_s: float) -> list[m.JoinGroupRequestProtocol]:
        """The JoinGroup's protocols (and whatever the half gives up before joining)."""
        raise NotImplementedError

    def _lead(self, now_s: float, sent: Sent, resp: m.JoinGroupResponse) -> bool:
        """Lead the round if elected (the SyncGroup's ``_sync_assignments``); False if the
        member failed instead."""
        raise NotImplementedError

    def _decode(self, raw: bytes) -> Any:
        """A SyncGroup assignment (raises ``PROTOCOL_ERROR``)."""
        raise NotImplementedError

    def _delta(self, assignment: Any) -> tuple[Any, Any] | None:
        """(revoked, added) by an assignment; None: refused, rejoin."""
        raise NotImplementedError

    def _rejoins_at_once(self) -> bool:
        """Whether a revocation makes the member rejoin at once (no: it becomes stable)."""
        return False

    def _settled(self, now_s: float, revoked: Any, assignment: Any) -> None:
        """The member became stable with ``assignment`` (nothing more by default)."""

    def _rejoin_due(self, now_s: float) -> bool:
        """Whether a stable member should rejoin now."""
        return self._rejoin_requested and now_s >= self._due

    def _forget_leadership(self) -> None:
        """What the member forgets of leading when it loses its generation."""
