"""The client half of the classic consumer protocol (JoinGroup/SyncGroup), as a pure object.

``ClassicMemberClient`` is Kafka's ``ConsumerCoordinator``/``AbstractCoordinator`` without the
network: it decides which JoinGroup, SyncGroup, Heartbeat or LeaveGroup request to send and
when, runs the group's assignor when it leads, and says what each reply means for the
partitions the member owns. It never sends, sleeps or reads a clock: the caller passes
``now_s`` (seconds, monotonic) into every call, sends what ``poll`` returns, and feeds back
``on_response`` or ``on_failure``. At most one request is in flight (Kafka's socket server
reads one request per client at a time; Ray does not order calls to an async actor).

The member's life, one request at a time (state while it waits -> on success; the
"rejoin" errors REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID send every state
back to ``unjoined``)::

    unjoined  --JoinGroup-->   joining  -> syncing (MEMBER_ID_REQUIRED: unjoined, with the id)
    syncing   --SyncGroup-->   syncing  -> stable  (cooperative, something revoked: unjoined)
    stable    --Heartbeat-->   stable   -> stable
    (any)     leave()  -->     leaving  --LeaveGroup (dynamic or forced)--> stopped
    FENCED_INSTANCE_ID -> fenced; a non-retriable error -> failed; nothing more after these.

Ownership follows the rebalance protocol the configured assignors share: *eager* members
revoke everything before each JoinGroup; *cooperative* ones keep what they own through the
rebalance and revoke only what the new assignment leaves out, then rejoin at once so that
the revoked partitions can be handed over in a second rebalance.

Safety (invariant 1) does not rest on the replies alone: a member that cannot prove it is
still in the group gives its partitions up (timeline "lost") at the earliest moment the
coordinator could have removed it: the session timeout, or the rebalance timeout if shorter
(a rebalance the member misses removes it), counted from the *send* time of the last
heartbeat or SyncGroup that succeeded. The one exception is the JoinGroup: the coordinator
holds it until the whole group has rejoined and does not expire the member meanwhile (seed
003), so while one is out the partitions are kept up to rebalance + session timeouts from
its send; the reply that ends the join phase restarts the session (and starts the
rebalance timeout for the SyncGroup; a repeat of that reply restarts neither). Both rest
on one assumption about the transport: a reply the coordinator held is read as soon as it
is sent (a JoinGroup reply lost on the way must surface as ``on_failure``, which falls back
to the last proven session). Replies read later than the deadline are not trusted.

This module is the state machine; the bookkeeping it moves (state, owned partitions, deadlines,
timeline) is ``protocol/client/classic_state.py``, and the leader's assignment is
``protocol/client/classic_leader.py``.
"""

from __future__ import annotations

import math

from protocol import messages as m
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    encode_subscription,
)
from protocol.classic.group import TOPIC_METADATA_CHANGE
from protocol.client.classic_leader import grouped, lead
from protocol.client.classic_state import (
    COOPERATIVE,
    EAGER,
    NO_GENERATION,
    TERMINAL,
    ClassicClientState,
    SentRequest,
)
from protocol.errors import COORDINATOR_UNAVAILABLE, Errors
from protocol.retry import backoff_s, next_retries

LEAVE_REASON = "the consumer is being closed"  # what Kafka's consumer says on close

# Errors after which the same step may be tried again later (Kafka's retriable ones).
RETRIABLE = COORDINATOR_UNAVAILABLE | {Errors.UNKNOWN_SERVER_ERROR, Errors.UNRELEASED_INSTANCE_ID}


class ClassicMemberClient(ClassicClientState):
    """One member of one classic consumer group: what to send when, and what it owns.

    It exists so that the classic consumer's protocol logic runs the same under any host (the
    ``ClassicConsumer`` Ray actor, a test's simulated clock next to a real coordinator shard)
    and can be checked without Ray, sockets or sleeping. Guarantees: at most one request in
    flight; no heartbeat while a JoinGroup waits (seed 003); partitions are used only between
    the SyncGroup reply that granted them and the moment they were revoked, lost, or could
    have been taken away, whether or not replies arrive (invariant 1); ``timeline`` records
    those moments (bounded: the oldest events are dropped first; ``events_recorded`` counts
    them all). Constructor arguments: see ``ClassicClientState``.
    """

    # -------------------------------------------------------------------------- the loop

    def poll(self, now_s: float) -> object | None:
        """The request to send now, marked in flight, or None (not due, busy, stopped)."""
        self._check_deadline(now_s)
        if self._in_flight is not None or self._state in TERMINAL or now_s < self._due:
            return None
        if self._state == "leaving":
            return self._send_leave(now_s)
        if self._state == "stable" and self._rejoin_requested:
            self._state = "unjoined"
        if self._state == "unjoined":
            return self._send_join(now_s)
        if self._state == "syncing":
            return self._send_sync(now_s)
        return self._send(
            now_s,
            "heartbeat",
            m.HeartbeatRequest(
                group_id=self.group_id,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.instance_id,
            ),
        )

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
            self._joined(now_s, sent, response)
        elif sent.kind == "sync":
            self._synced(now_s, sent, response)
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

    def metadata_changed(self) -> None:
        """The leader saw the partition counts of a subscribed topic change: rejoin, saying
        why (KIP-800), so the coordinator rebalances the group."""
        if self._state in TERMINAL or self._state == "leaving":
            return
        self._rejoin_requested, self._reason = True, TOPIC_METADATA_CHANGE
        self._leader_metadata = None
        if self._state == "stable" and self._in_flight is None:
            self._due = -math.inf

    def check_metadata(self) -> bool:
        """Leader only: compare the partition counts now with the ones it assigned with;
        a difference calls ``metadata_changed``. True if it did."""
        if self._leader_metadata is None:
            return False
        counts = self._counts()
        if all(counts.get(t, 0) == n for t, n in self._leader_metadata.items()):
            return False
        self.metadata_changed()
        return True

    # ------------------------------------------------------------------- sending

    def _send(self, now_s: float, kind: str, request: object) -> object:
        self._in_flight = SentRequest(kind, now_s)
        return request

    def _send_join(self, now_s: float) -> m.JoinGroupRequest:
        if self.rebalance_protocol == EAGER and self._owned:
            self._end(now_s, "revoked", set(self._owned), self.on_revoke)
        cooperative = self.rebalance_protocol == COOPERATIVE
        subscription = Subscription(
            topics=list(self.topics),
            owned_partitions=grouped(self._owned) if cooperative else [],
            generation_id=self.generation if cooperative else NO_GENERATION,
            rack_id=self.rack_id,
        )
        metadata = encode_subscription(subscription)
        self._rejoin_requested, self._leader, self._leader_metadata = False, False, None
        self._held_since, self._state = now_s, "joining"
        return self._send(
            now_s,
            "join",
            m.JoinGroupRequest(
                group_id=self.group_id,
                session_timeout_ms=self.session_timeout_ms,
                rebalance_timeout_ms=self.rebalance_timeout_ms,
                member_id=self.member_id,
                group_instance_id=self.instance_id,
                protocol_type=PROTOCOL_TYPE,
                protocols=[m.JoinGroupRequestProtocol(name, metadata) for name in self.assignors],
                reason=self._reason,
            ),
        )

    def _send_sync(self, now_s: float) -> m.SyncGroupRequest:
        return self._send(
            now_s,
            "sync",
            m.SyncGroupRequest(
                group_id=self.group_id,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.instance_id,
                protocol_type=PROTOCOL_TYPE,
                protocol_name=self.protocol_name,
                assignments=self._sync_assignments,
            ),
        )

    def _send_leave(self, now_s: float) -> m.LeaveGroupRequest | None:
        if self._owned:
            self._end(now_s, "revoked", set(self._owned), self.on_revoke)
        self._held_since = self._alive_until = None
        dynamic = self.instance_id is None
        if not self.member_id or not (dynamic or self._force_leave):
            self._state = "stopped"  # the coordinator knows no id of ours, or keeps our place
            return None
        return self._send(
            now_s,
            "leave",
            m.LeaveGroupRequest(
                group_id=self.group_id,
                members=[m.MemberIdentity(self.member_id, self.instance_id, LEAVE_REASON)],
            ),
        )

    # ------------------------------------------------------------------- replies

    def _finish(self) -> SentRequest | None:
        """Take the request in flight; None when its reply no longer matters."""
        sent = self._in_flight
        if sent is None:
            raise RuntimeError(f"member {self.member_id!r}: a reply with no request in flight")
        self._in_flight = None
        if sent.kind == "leave":
            self._state = "stopped"  # whatever the coordinator said, this member is done
            return None
        return None if sent.stale else sent

    def _joined(self, now_s: float, sent: SentRequest, resp: m.JoinGroupResponse) -> None:
        if resp.generation_id != self._joined_generation:
            # The join phase just ended (held replies are read as soon as they are sent): it
            # restarted our session and gave us the rebalance timeout to sync. A repeat of a
            # generation's reply (ours was lost) restarts neither clock: keep the first one.
            self._alive_until = now_s + self._session_bound_s()
            self._joined_generation = resp.generation_id
        self.member_id, self.generation = resp.member_id or self.member_id, resp.generation_id
        self.protocol_name, self._reason, self._retries = resp.protocol_name, None, 0
        if self._state == "leaving":
            return  # adopt the ids (the LeaveGroup names them) and nothing more
        self._leader = bool(resp.leader) and resp.leader == self.member_id
        self._sync_assignments = []
        if self._leader:
            try:
                self._leader_metadata, self._sync_assignments = lead(
                    resp, self.topics, self._counts()
                )
            except (KeyError, ConsumerProtocolError):
                self._fail(sent.at_s, Errors.INCONSISTENT_GROUP_PROTOCOL)
                return
        self._state, self._due = "syncing", now_s


    def _synced(self, now_s: float, sent: SentRequest, resp: m.SyncGroupResponse) -> None:
        try:
            assigned = {
                (t, p)
                for t, ps in decode_assignment(resp.assignment).assigned_partitions
                for p in ps
            }
        except ConsumerProtocolError:
            self._retry(now_s, rejoin=True)  # Kafka fails the rebalance; try a fresh one
            return
        self._alive_until = sent.at_s + self._session_bound_s()  # its arrival restarted it
        self._retries = 0
        if self._state == "leaving":
            return  # everything goes at the leave; take nothing new
        if now_s >= self._alive_until:
            self._lose(self._alive_until)  # read too late to trust: start over
            return
        revoked, added = self._owned - assigned, assigned - self._owned
        if revoked:
            self._end(now_s, "revoked", revoked, self.on_revoke)
        if added:
            self._owned |= added
            self._record(now_s, "assigned", added)
            if self.on_assign is not None:
                self.on_assign(sorted(added))
        if revoked and self.rebalance_protocol == COOPERATIVE:
            self._state, self._due = "unjoined", now_s  # hand them over in a second rebalance
            return
        self._state = "stable"
        self._due = now_s if self._rejoin_requested else now_s + self.heartbeat_interval_ms / 1000

    def _heartbeat_ok(self, now_s: float, sent: SentRequest) -> None:
        self._alive_until = sent.at_s + self._session_bound_s()
        self._retries = 0
        if self._state == "stable":
            interval_s = self.heartbeat_interval_ms / 1000
            self._due = now_s if self._rejoin_requested else now_s + interval_s

    def _on_error(self, now_s: float, sent: SentRequest, code: int, resp: object) -> None:
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
        self._due = now_s + backoff_s(self._retries)
        self._retries = next_retries(self._retries)

