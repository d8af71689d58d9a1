"""The client half of a classic Kafka Connect worker (JoinGroup/SyncGroup, protocol type
"connect"), as a pure object.

``ClassicConnectWorkerClient`` is Kafka Connect's ``WorkerCoordinator`` without the network: it
decides which JoinGroup, SyncGroup, Heartbeat or LeaveGroup to send and when, leads the group
when elected (``protocol/client/classic_connect_leader.py``), and says what each SyncGroup
assignment means for the connectors and tasks it runs. It exists so that Cohort can run the
workers an online migration starts from (and returns to): a classic Connect group rolled onto
the new ``connect`` group type and back.

``connect_protocol`` is Kafka's ``connect.protocol``: ``eager`` offers ``default`` (V0);
``compatible`` offers ``compatible`` (V1) then ``default``; ``sessioned`` (Kafka's default)
offers ``sessioned`` (V2), ``compatible``, ``default``. The group runs the one all workers
offer, so one eager worker makes the whole group eager:

* eager: a worker stops everything before each JoinGroup and runs exactly what its SyncGroup
  assignment lists;
* incremental (V1/V2): a worker keeps running through the rebalance and reports what it runs
  in its JoinGroup metadata; the SyncGroup assignment is a delta. It stops what is
  ``revoked`` and then rejoins at once (so the work can move in the next round), starts what
  is assigned, and rejoins after ``delay`` ms when the leader scheduled a rebalance.

The states (``unjoined`` -> ``joining`` -> ``syncing`` -> ``stable``; ``leaving`` ->
``stopped``; ``failed``) and the ownership rule are those of the classic consumer client
(``protocol/client/classic.py``): work is given up at the earliest moment the coordinator
could have removed the worker (the session or rebalance timeout from the send of the last
heartbeat or SyncGroup that succeeded; while a JoinGroup is held, rebalance + session timeout
from its send). Classic Connect refuses static membership, and so does this client: it never
sends a group instance id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from assignors.connect import IncrementalCooperativeAssignor
from protocol import messages as m
from protocol.classic.connect_protocol import (
    OFFERED,
    PROTOCOL_TYPE,
    VERSION_OF,
    ConnectAssignment,
    ConnectProtocolError,
    Work,
    WorkerState,
    decode_assignment,
    join_protocols,
)
from protocol.client.classic_connect_leader import ConnectLeader
from protocol.client.connect_ownership import WorkCallback, WorkOwnership
from protocol.client.timeline import DEFAULT_MAX_EVENTS
from protocol.errors import COORDINATOR_UNAVAILABLE, Errors
from protocol.retry import backoff_s, next_retries

NO_GENERATION = -1
TERMINAL = frozenset({"failed", "stopped"})
RETRIABLE = COORDINATOR_UNAVAILABLE | {Errors.UNKNOWN_SERVER_ERROR}
LEAVE_REASON = "the worker is shutting down"
# What the worker has read of the config: (config offset, {connector: task count}).
ConfigSource = Callable[[], tuple[int, Mapping[str, int]]]


@dataclass
class _Sent:
    kind: str  # "join" | "sync" | "heartbeat" | "leave"
    at_s: float
    stale: bool = False


class ClassicConnectWorkerClient:
    """One worker of one classic Connect group: what to send when, what it runs meanwhile.

    Guarantees: at most one request in flight; work runs only between the SyncGroup that
    granted it and the moment it was revoked, lost, or the coordinator could have removed the
    worker (invariant 1); an incremental worker never starts work another worker of its
    generation reported running (the leader hands it out only once released); every change is
    on the bounded ``timeline``.
    """

    def __init__(
        self,
        group_id: str,
        worker_id: str,
        *,
        config: ConfigSource,
        connect_protocol: str = "sessioned",
        url: str | None = None,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 60_000,
        heartbeat_interval_ms: int = 3_000,
        assignor: IncrementalCooperativeAssignor | None = None,
        on_assigned: WorkCallback | None = None,
        on_revoked: WorkCallback | None = None,
        on_lost: WorkCallback | None = None,
        timeline_max_events: int = DEFAULT_MAX_EVENTS,
        wall_offset_s: float = 0.0,
    ) -> None:
        if connect_protocol not in OFFERED:
            raise ValueError(f"connect_protocol must be one of {sorted(OFFERED)}")
        if min(session_timeout_ms, rebalance_timeout_ms, heartbeat_interval_ms) <= 0:
            raise ValueError("timeouts and the heartbeat interval must be positive")
        self.group_id, self.worker_id = group_id, worker_id
        self.url = url or f"http://{worker_id}:8083/"
        self.connect_protocol, self.config = connect_protocol, config
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.wall_offset_s = wall_offset_s
        self.leader = ConnectLeader(assignor or IncrementalCooperativeAssignor())
        self.member_id = ""
        self.generation = NO_GENERATION
        self.protocol_name: str | None = None
        self.leader_id = ""
        self.error: int | None = None
        self.rebalances = 0  # SyncGroups completed
        self._work = WorkOwnership(on_assigned, on_revoked, on_lost, timeline_max_events)
        self._state = "unjoined"
        self._in_flight: _Sent | None = None
        self._due = -math.inf
        self._retries = 0
        self._alive_until: float | None = None
        self._held_since: float | None = None
        self._sync_assignments: list[m.SyncGroupRequestAssignment] = []
        self._config_offset = -1
        self._config_stale = False  # the connectors changed since the leader last read them
        self._rejoin_at: float | None = None  # a scheduled rebalance (the leader's delay)

    # ------------------------------------------------------------------ what the caller sees

    @property
    def state(self) -> str:
        return self._state

    @property
    def assignment(self) -> dict[str, list]:
        return self._work.as_dict()

    @property
    def owned(self) -> Work:
        return self._work.owned

    @property
    def timeline(self) -> list[dict]:
        return self._work.timeline.events

    @property
    def events_recorded(self) -> int:
        return self._work.timeline.recorded

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.leader_id == self.member_id

    @property
    def eager(self) -> bool:
        return VERSION_OF.get(self.protocol_name or "", 0) == 0

    @property
    def ownership_deadline(self) -> float | None:
        if not self._work.owned:
            return None
        if self._held_since is not None:
            return self._held_since + (self.rebalance_timeout_ms + self.session_timeout_ms) / 1000
        return self._alive_until

    def next_due(self) -> float | None:
        if self._state in TERMINAL:
            return None
        deadline = self.ownership_deadline
        if self._in_flight is not None:
            return deadline
        due = self._due
        if self._rejoin_at is not None and self._state == "stable":
            due = min(due, self._rejoin_at)
        return due if deadline is None else min(due, deadline)

    def config_changed(self) -> None:
        """The connectors changed: the leader rejoins so the group rebalances (Kafka's
        herder requests a rejoin when connectors are added, removed or reconfigured). A
        change the leader may not have assigned with yet (it is between its JoinGroup reply
        and its SyncGroup's) makes it rejoin once that round is done."""
        if self._state in TERMINAL:
            return
        self._config_stale = True
        if self.is_leader and self._state == "stable":
            self._rejoin_at = -math.inf

    # -------------------------------------------------------------------------- the loop

    def poll(self, now_s: float) -> object | None:
        self._check_deadline(now_s)
        if self._in_flight is not None or self._state in TERMINAL:
            return None
        if self._state == "leaving":
            return self._send_leave(now_s)
        if self._state == "stable" and self._rejoin_at is not None and now_s >= self._rejoin_at:
            self._state, self._due = "unjoined", min(self._due, now_s)
        if now_s < self._due:
            return None
        if self._state == "unjoined":
            return self._send_join(now_s)
        if self._state == "syncing":
            return self._send("sync", now_s, m.SyncGroupRequest(
                group_id=self.group_id, generation_id=self.generation, member_id=self.member_id,
                protocol_type=PROTOCOL_TYPE, protocol_name=self.protocol_name,
                assignments=self._sync_assignments,
            ))
        return self._send("heartbeat", now_s, m.HeartbeatRequest(
            group_id=self.group_id, generation_id=self.generation, member_id=self.member_id,
        ))

    def leave(self) -> None:
        if self._state in TERMINAL:
            return
        self._state, self._due = "leaving", -math.inf

    def on_response(self, now_s: float, response: object) -> None:
        sent = self._finish()
        if sent is None:
            return
        code = getattr(response, "error_code", Errors.UNKNOWN_SERVER_ERROR)
        if self._check_deadline(now_s) and code == Errors.NONE:
            return  # read too late to trust: everything was given up, start over
        if sent.kind == "join":
            self._held_since = None
        if code != Errors.NONE:
            self._on_error(now_s, sent, code, response)
        elif sent.kind == "join":
            self._joined(now_s, response)
        elif sent.kind == "sync":
            self._synced(now_s, sent, response)
        else:
            self._alive_until = sent.at_s + self._session_bound_s()
            self._retries = 0
            if self._state == "stable":
                self._due = now_s + self.heartbeat_interval_ms / 1000

    def on_failure(self, now_s: float) -> None:
        sent = self._finish()
        if sent is None:
            return
        self._held_since = None
        self._check_deadline(now_s)
        self._retry(now_s, rejoin=sent.kind != "heartbeat")

    # ------------------------------------------------------------------- sending

    def _send(self, kind: str, now_s: float, request: object) -> object:
        self._in_flight = _Sent(kind, now_s)
        return request

    def _send_join(self, now_s: float) -> m.JoinGroupRequest:
        if self.eager or self.connect_protocol == "eager":
            self._end(now_s, "revoked", self._work.owned)  # eager: stop all before joining
        self._config_offset, _ = self.config()
        allocation = ConnectAssignment(
            version=1, leader=self.leader_id, leader_url=self.url,
            config_offset=self._config_offset, assigned=self._work.owned,
        )
        state = WorkerState(self.url, self._config_offset, allocation)
        self._state, self._held_since, self._rejoin_at = "joining", now_s, None
        return self._send("join", now_s, m.JoinGroupRequest(
            group_id=self.group_id,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            member_id=self.member_id,
            protocol_type=PROTOCOL_TYPE,
            protocols=[m.JoinGroupRequestProtocol(n, b)
                       for n, b in join_protocols(self.connect_protocol, state)],
        ))

    def _send_leave(self, now_s: float) -> m.LeaveGroupRequest | None:
        self._end(now_s, "revoked", self._work.owned)
        self._held_since = self._alive_until = None
        if not self.member_id:
            self._state = "stopped"
            return None
        return self._send("leave", now_s, m.LeaveGroupRequest(
            group_id=self.group_id, members=[m.MemberIdentity(self.member_id, None, LEAVE_REASON)]
        ))

    # ------------------------------------------------------------------- replies

    def _finish(self) -> _Sent | None:
        sent = self._in_flight
        if sent is None:
            raise RuntimeError(f"worker {self.worker_id}: a reply with no request in flight")
        self._in_flight = None
        if sent.kind == "leave":
            self._state = "stopped"
            return None
        return None if sent.stale else sent

    def _joined(self, now_s: float, resp: m.JoinGroupResponse) -> None:
        self._alive_until = now_s + self._session_bound_s()  # the join phase restarted it
        self.member_id = resp.member_id or self.member_id
        self.generation, self.protocol_name = resp.generation_id, resp.protocol_name
        self.leader_id, self._retries = resp.leader, 0
        if self._state == "leaving":
            return
        if self.eager:
            # The group runs eager: a worker that joined incrementally (the group has just
            # changed protocol) stops everything now, as eager workers did before joining.
            self._end(now_s, "revoked", self._work.owned)
        self._sync_assignments = []
        if self.is_leader:
            self._config_stale = False  # read now: this round assigns the current connectors
            _, connectors = self.config()
            now_ms = round((now_s + self.wall_offset_s) * 1000)
            led = self.leader.lead(resp, self.url, self._config_offset, connectors, now_ms)
            self._sync_assignments = led.assignments
        else:
            self.leader.forget()
        self._state, self._due = "syncing", now_s

    def _synced(self, now_s: float, sent: _Sent, resp: m.SyncGroupResponse) -> None:
        try:
            a = decode_assignment(resp.assignment)
        except ConnectProtocolError:
            self._retry(now_s, rejoin=True)
            return
        self._alive_until = sent.at_s + self._session_bound_s()
        self._retries = 0
        self.rebalances += 1
        if self._state == "leaving":
            return
        if a.error != 0:
            self._retry(now_s, rejoin=True)  # CONFIG_MISMATCH: re-read the config, rejoin
            return
        if a.version == 0:
            revoked, added = self._work.owned - a.assigned, a.assigned - self._work.owned
        else:
            revoked, added = a.revoked & self._work.owned, a.assigned - self._work.owned
        self._end(now_s, "revoked", revoked)
        self._work.assign(now_s, added, self.generation, self.member_id)
        self._state = "stable"
        self._due = now_s + self.heartbeat_interval_ms / 1000
        if self._config_stale and self.is_leader:
            self._rejoin_at = now_s  # the connectors changed after this round was computed
        elif revoked and a.version >= 1:
            self._rejoin_at = now_s  # released work moves in the next round
        elif a.delay_ms > 0:
            self._rejoin_at = now_s + a.delay_ms / 1000

    def _on_error(self, now_s: float, sent: _Sent, code: int, resp: object) -> None:
        if self._state == "leaving":
            return
        if code == Errors.MEMBER_ID_REQUIRED and sent.kind == "join":
            self.member_id = getattr(resp, "member_id", "") or self.member_id
            self._state, self._due = "unjoined", now_s
        elif code == Errors.REBALANCE_IN_PROGRESS:
            self._state, self._due = "unjoined", now_s
        elif code in (Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID):
            self._lose(sent.at_s)
            if code == Errors.UNKNOWN_MEMBER_ID:
                self.member_id = ""
        elif code in RETRIABLE:
            self._retry(now_s, rejoin=sent.kind != "heartbeat")
        else:
            self._lose(sent.at_s)
            self._state, self.error = "failed", code

    # ------------------------------------------------------------------- ownership

    def _session_bound_s(self) -> float:
        return min(self.session_timeout_ms, self.rebalance_timeout_ms) / 1000

    def _check_deadline(self, now_s: float) -> bool:
        deadline = self.ownership_deadline
        if deadline is None or now_s < deadline:
            return False
        self._lose(deadline)
        if self._in_flight is not None:
            self._in_flight.stale = True
        return True

    def _lose(self, at_s: float) -> None:
        self._work.end(at_s, "lost", self._work.owned, self.generation, self.member_id)
        self.generation, self._alive_until, self._held_since = NO_GENERATION, None, None
        self.leader.forget()
        if self._state not in TERMINAL and self._state != "leaving":
            self._state, self._due = "unjoined", -math.inf

    def _end(self, at_s: float, event: str, work: Work) -> None:
        self._work.end(at_s, event, work, self.generation, self.member_id)

    def _retry(self, now_s: float, rejoin: bool) -> None:
        if self._state in TERMINAL or self._state == "leaving":
            return
        self._held_since = None
        if rejoin:
            self._state = "unjoined"
        self._due = now_s + backoff_s(self._retries)
        self._retries = next_retries(self._retries)
