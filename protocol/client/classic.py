"""The client half of the classic consumer protocol (JoinGroup/SyncGroup), as a pure object.

``ClassicMemberClient`` is Kafka's ``ConsumerCoordinator``/``AbstractCoordinator`` without the
network: it decides which JoinGroup, SyncGroup, Heartbeat or LeaveGroup request to send and
when, runs the group's assignor when it leads, and says what each reply means for the
partitions the member owns. It never sends, sleeps or reads a clock: the caller passes
``now`` (seconds, monotonic) into every call, sends what ``poll`` returns, and feeds back
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
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from assignors.classic import ClassicSubscription, classic_assignor
from protocol import messages as m
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.classic.group import TOPIC_METADATA_CHANGE
from protocol.client.timeline import DEFAULT_MAX_EVENTS, Timeline
from protocol.errors import COORDINATOR_UNAVAILABLE, Errors
from protocol.retry import backoff_s, next_retries

TopicPartition = tuple[str, int]
Partitions = list[TopicPartition]  # sorted
Callback = Callable[[Partitions], None]
PartitionCounts = Mapping[str, int] | Callable[[], Mapping[str, int]]

EAGER, COOPERATIVE = "eager", "cooperative"
LEAVE_REASON = "the consumer is being closed"  # what Kafka's consumer says on close

STATES = ("unjoined", "joining", "syncing", "stable", "leaving", "fenced", "failed", "stopped")
TERMINAL = frozenset({"fenced", "failed", "stopped"})

# Errors after which the same step may be tried again later (Kafka's retriable ones).
RETRIABLE = COORDINATOR_UNAVAILABLE | {Errors.UNKNOWN_SERVER_ERROR, Errors.UNRELEASED_INSTANCE_ID}
NO_GENERATION = -1


@dataclass
class _Sent:
    """The request in flight: what it was and when it left (deadlines count from there)."""

    kind: str  # "join" | "sync" | "heartbeat" | "leave"
    at: float
    stale: bool = False  # the member gave up its state meanwhile: the reply means nothing now


class ClassicMemberClient:
    """One member of one classic consumer group: what to send when, and what it owns.

    Guarantees: at most one request in flight; no heartbeat while a JoinGroup waits (seed
    003); partitions are used only between the SyncGroup reply that granted them and the
    moment they were revoked, lost, or could have been taken away; ``timeline`` records
    those moments (bounded: the oldest events are dropped first).
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
        self._in_flight: _Sent | None = None
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

    # -------------------------------------------------------------------------- the loop

    def poll(self, now: float) -> object | None:
        """The request to send now, marked in flight, or None (not due, busy, stopped)."""
        self._check_deadline(now)
        if self._in_flight is not None or self._state in TERMINAL or now < self._due:
            return None
        if self._state == "leaving":
            return self._send_leave(now)
        if self._state == "stable" and self._rejoin_requested:
            self._state = "unjoined"
        if self._state == "unjoined":
            return self._send_join(now)
        if self._state == "syncing":
            return self._send_sync(now)
        return self._send(
            now,
            "heartbeat",
            m.HeartbeatRequest(
                group_id=self.group_id,
                generation_id=self.generation,
                member_id=self.member_id,
                group_instance_id=self.instance_id,
            ),
        )

    def on_response(self, now: float, response: object) -> None:
        """The reply to the request in flight, read at ``now``."""
        sent = self._finish()
        if sent is None:
            return
        code = getattr(response, "error_code", Errors.UNKNOWN_SERVER_ERROR)
        if self._check_deadline(now) and code == Errors.NONE:
            return  # read too late to trust: everything was given up, start over
        if sent.kind == "join":
            self._held_since = None  # the coordinator let go of our JoinGroup
        if code != Errors.NONE:
            self._on_error(now, sent, code, response)
        elif sent.kind == "join":
            self._joined(now, sent, response)
        elif sent.kind == "sync":
            self._synced(now, sent, response)
        else:
            self._heartbeat_ok(now, sent)

    def on_failure(self, now: float) -> None:
        """No reply (transport failure, dead coordinator, timeout): retry with backoff."""
        sent = self._finish()
        if sent is None:
            return
        self._held_since = None  # nothing shows the coordinator holds a request of ours
        self._check_deadline(now)
        self._retry(now, rejoin=sent.kind != "heartbeat")

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

    def _send(self, now: float, kind: str, request: object) -> object:
        self._in_flight = _Sent(kind, now)
        return request

    def _send_join(self, now: float) -> m.JoinGroupRequest:
        if self.rebalance_protocol == EAGER and self._owned:
            self._end(now, "revoked", set(self._owned), self.on_revoke)
        cooperative = self.rebalance_protocol == COOPERATIVE
        subscription = Subscription(
            topics=list(self.topics),
            owned_partitions=_grouped(self._owned) if cooperative else [],
            generation_id=self.generation if cooperative else NO_GENERATION,
            rack_id=self.rack_id,
        )
        metadata = encode_subscription(subscription)
        self._rejoin_requested, self._leader, self._leader_metadata = False, False, None
        self._held_since, self._state = now, "joining"
        return self._send(
            now,
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

    def _send_sync(self, now: float) -> m.SyncGroupRequest:
        return self._send(
            now,
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

    def _send_leave(self, now: float) -> m.LeaveGroupRequest | None:
        if self._owned:
            self._end(now, "revoked", set(self._owned), self.on_revoke)
        self._held_since = self._alive_until = None
        dynamic = self.instance_id is None
        if not self.member_id or not (dynamic or self._force_leave):
            self._state = "stopped"  # the coordinator knows no id of ours, or keeps our place
            return None
        return self._send(
            now,
            "leave",
            m.LeaveGroupRequest(
                group_id=self.group_id,
                members=[m.MemberIdentity(self.member_id, self.instance_id, LEAVE_REASON)],
            ),
        )

    # ------------------------------------------------------------------- replies

    def _finish(self) -> _Sent | None:
        """Take the request in flight; None when its reply no longer matters."""
        sent = self._in_flight
        if sent is None:
            raise RuntimeError(f"member {self.member_id!r}: a reply with no request in flight")
        self._in_flight = None
        if sent.kind == "leave":
            self._state = "stopped"  # whatever the coordinator said, this member is done
            return None
        return None if sent.stale else sent

    def _joined(self, now: float, sent: _Sent, resp: m.JoinGroupResponse) -> None:
        if resp.generation_id != self._joined_generation:
            # The join phase just ended (held replies are read as soon as they are sent): it
            # restarted our session and gave us the rebalance timeout to sync. A repeat of a
            # generation's reply (ours was lost) restarts neither clock: keep the first one.
            self._alive_until = now + self._session_bound_s()
            self._joined_generation = resp.generation_id
        self.member_id, self.generation = resp.member_id or self.member_id, resp.generation_id
        self.protocol_name, self._reason, self._retries = resp.protocol_name, None, 0
        if self._state == "leaving":
            return  # adopt the ids (the LeaveGroup names them) and nothing more
        self._leader = bool(resp.leader) and resp.leader == self.member_id
        self._sync_assignments = []
        if self._leader:
            try:
                self._sync_assignments = self._lead(resp)
            except (KeyError, ConsumerProtocolError):
                self._fail(sent.at, Errors.INCONSISTENT_GROUP_PROTOCOL)
                return
        self._state, self._due = "syncing", now

    def _lead(self, resp: m.JoinGroupResponse) -> list[m.SyncGroupRequestAssignment]:
        """Run the group's assignor over every member's subscription (Kafka's
        ``ConsumerCoordinator.onLeaderElected``); with ``skip_assignment`` only watch the
        metadata (a static leader back from a restart, KIP-814)."""
        subscriptions = {mem.member_id: _subscription(mem) for mem in resp.members}
        topics = {t for s in subscriptions.values() for t in s.topics} or set(self.topics)
        counts = self._counts()
        self._leader_metadata = {t: int(counts.get(t, 0)) for t in sorted(topics)}
        if resp.skip_assignment:
            return []
        assignor = classic_assignor(resp.protocol_name or "")
        sizes = {t: n for t, n in self._leader_metadata.items() if n > 0}
        plan = assignor.assign(sizes, subscriptions)
        if assignor.rebalance_protocol == COOPERATIVE:
            _check_cooperative(plan, subscriptions)
        return [
            m.SyncGroupRequestAssignment(
                mid, encode_assignment(Assignment(_grouped(plan.get(mid, []))))
            )
            for mid in subscriptions
        ]

    def _synced(self, now: float, sent: _Sent, resp: m.SyncGroupResponse) -> None:
        try:
            assigned = {
                (t, p)
                for t, ps in decode_assignment(resp.assignment).assigned_partitions
                for p in ps
            }
        except ConsumerProtocolError:
            self._retry(now, rejoin=True)  # Kafka fails the rebalance; try a fresh one
            return
        self._alive_until = sent.at + self._session_bound_s()  # its arrival restarted it
        self._retries = 0
        if self._state == "leaving":
            return  # everything goes at the leave; take nothing new
        if now >= self._alive_until:
            self._lose(self._alive_until)  # read too late to trust: start over
            return
        revoked, added = self._owned - assigned, assigned - self._owned
        if revoked:
            self._end(now, "revoked", revoked, self.on_revoke)
        if added:
            self._owned |= added
            self._record(now, "assigned", added)
            if self.on_assign is not None:
                self.on_assign(sorted(added))
        if revoked and self.rebalance_protocol == COOPERATIVE:
            self._state, self._due = "unjoined", now  # hand them over in a second rebalance
            return
        self._state = "stable"
        self._due = now if self._rejoin_requested else now + self.heartbeat_interval_ms / 1000

    def _heartbeat_ok(self, now: float, sent: _Sent) -> None:
        self._alive_until = sent.at + self._session_bound_s()
        self._retries = 0
        if self._state == "stable":
            self._due = now if self._rejoin_requested else now + self.heartbeat_interval_ms / 1000

    def _on_error(self, now: float, sent: _Sent, code: int, resp: object) -> None:
        """Kafka's AbstractCoordinator: the same codes mean the same for every request."""
        if self._state == "leaving":
            return
        if code == Errors.MEMBER_ID_REQUIRED and sent.kind == "join":
            self.member_id = getattr(resp, "member_id", "") or self.member_id
            self._state, self._due = "unjoined", now  # rejoin at once under that id
        elif code == Errors.REBALANCE_IN_PROGRESS:
            self._state, self._due = "unjoined", now
        elif code == Errors.ILLEGAL_GENERATION:
            self._lose(sent.at)
        elif code == Errors.UNKNOWN_MEMBER_ID:
            self._lose(sent.at)
            self.member_id = ""
        elif code == Errors.FENCED_INSTANCE_ID:
            self._lose(sent.at)
            self._state, self.error = "fenced", code
        elif code in RETRIABLE:
            self._retry(now, rejoin=sent.kind != "heartbeat")
        else:
            self._fail(sent.at, code)

    # ------------------------------------------------------------------- ownership

    def _session_bound_s(self) -> float:
        """After a success: the session ends, or a rebalance we miss removes us, no sooner."""
        return min(self.session_timeout_ms, self.rebalance_timeout_ms) / 1000

    def _check_deadline(self, now: float) -> bool:
        """Give everything up if the coordinator may have removed us by now; True if so."""
        deadline = self.ownership_deadline
        if deadline is None or now < deadline:
            return False
        self._lose(deadline)
        if self._in_flight is not None:
            self._in_flight.stale = True
        return True

    def _lose(self, t: float) -> None:
        """Drop every partition without revoking (Kafka's onPartitionsLost), forget the
        generation (its ownership claims are void) and rejoin at once."""
        if self._owned:
            self._end(t, "lost", set(self._owned), self.on_lost)
        self.generation, self._leader, self._leader_metadata = NO_GENERATION, False, None
        self._alive_until = self._held_since = None
        if self._state not in TERMINAL and self._state != "leaving":
            self._state, self._due = "unjoined", -math.inf

    def _fail(self, t: float, code: int) -> None:
        self._lose(t)
        self._state, self.error = "failed", code

    def _retry(self, now: float, rejoin: bool) -> None:
        """Back off; a failed JoinGroup or SyncGroup restarts with a JoinGroup (Kafka)."""
        if self._state in TERMINAL or self._state == "leaving":
            return
        self._held_since = None
        if rejoin:
            self._state = "unjoined"
        self._due = now + backoff_s(self._retries)
        self._retries = next_retries(self._retries)

    def _end(self, t: float, event: str, parts: set[TopicPartition], cb: Callback | None) -> None:
        """Stop owning ``parts``: the callback runs while they are still listed as owned."""
        self._record(t, event, parts)
        try:
            if cb is not None:
                cb(sorted(parts))
        finally:
            self._owned -= parts

    def _record(self, t: float, event: str, parts: Iterable[TopicPartition]) -> None:
        self._timeline.append(
            {
                "t": t,
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


def _grouped(parts: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    """(topic, p) pairs -> the consumer protocol's [(topic, [partitions])], sorted."""
    out: dict[str, list[int]] = {}
    for t, p in sorted(parts):
        out.setdefault(t, []).append(p)
    return list(out.items())


def _subscription(member: m.JoinGroupResponseMember) -> ClassicSubscription:
    """A member's JoinGroup metadata as the assignor reads it; garbage subscribes to nothing."""
    try:
        s = decode_subscription(member.metadata)
    except ConsumerProtocolError:
        return ClassicSubscription(topics=[], group_instance_id=member.group_instance_id)
    return ClassicSubscription(
        topics=list(s.topics),
        owned_partitions=[(t, p) for t, ps in s.owned_partitions for p in ps],
        generation_id=s.generation_id,
        rack_id=s.rack_id,
        group_instance_id=member.group_instance_id,
    )


def _check_cooperative(
    plan: Mapping[str, list[TopicPartition]], subscriptions: Mapping[str, ClassicSubscription]
) -> None:
    """Kafka's ``validateCooperativeAssignment``: no partition is taken from one member and
    given to another in the same rebalance (it must be revoked first)."""
    revoked: set[TopicPartition] = set()
    added: set[TopicPartition] = set()
    for mid, s in subscriptions.items():
        owned, assigned = set(s.owned_partitions), set(plan.get(mid, []))
        revoked |= owned - assigned
        added |= assigned - owned
    assert not revoked & added, f"cooperative assignment moves {sorted(revoked & added)} at once"
