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
``stopped``; ``failed``) and the ownership rule are ``ClassicGroupMember``'s
(``protocol/client/classic_member.py``), shared with the classic consumer: work is given up
at the earliest moment the coordinator could have removed the worker (the session or
rebalance timeout from the send of the last heartbeat or SyncGroup that succeeded; while a
JoinGroup is held, rebalance + session timeout from its send). Classic Connect refuses static
membership, and so does this client: it never sends a group instance id. Where the two
classic halves once differed, they follow one rule (``docs/decisions.md``, "One classic client
core"): a repeated JoinGroup reply restarts no clock, and a SyncGroup reply read after the
session it proves is over is not trusted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

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
from protocol.client.classic_member import TERMINAL, ClassicGroupMember
from protocol.client.connect_ownership import WorkCallback, WorkOwnership
from protocol.client.member import Sent
from protocol.client.timeline import DEFAULT_MAX_EVENTS

# What the worker has read of the config: (config offset, {connector: task count}).
ConfigSource = Callable[[], tuple[int, Mapping[str, int]]]


class ClassicConnectWorkerClient(ClassicGroupMember):
    """One worker of one classic Connect group: what to send when, what it runs meanwhile.

    Guarantees (``ClassicGroupMember``'s, and): at most one request in flight; work runs only
    between the SyncGroup that granted it and the moment it was revoked, lost, or the
    coordinator could have removed the worker (invariant 1); an incremental worker never
    starts work another worker of its generation reported running (the leader hands it out
    only once released); every change is on the bounded ``timeline``.
    """

    PROTOCOL_TYPE = PROTOCOL_TYPE
    PROTOCOL_ERROR = ConnectProtocolError
    LEAVE_REASON = "the worker is shutting down"
    leave_waits_for_backoff = False

    def __init__(
        self,
        group_id: str,
        worker_id: str,
        *,
        config: ConfigSource,
        on_assigned: WorkCallback | None = None,
        on_revoked: WorkCallback | None = None,
        on_lost: WorkCallback | None = None,
        connect_protocol: str = "sessioned",
        url: str | None = None,
        session_timeout_ms: int = 10_000,
        rebalance_timeout_ms: int = 60_000,
        heartbeat_interval_ms: int = 3_000,
        assignor: IncrementalCooperativeAssignor | None = None,
        timeline_max_events: int = DEFAULT_MAX_EVENTS,
        wall_offset_s: float = 0.0,
    ) -> None:
        if connect_protocol not in OFFERED:
            raise ValueError(f"connect_protocol must be one of {sorted(OFFERED)}")
        super().__init__(
            group_id,
            lambda n: WorkOwnership(on_assigned, on_revoked, on_lost, n),
            (session_timeout_ms, rebalance_timeout_ms, heartbeat_interval_ms),
            timeline_max_events,
        )
        self.worker_id = worker_id
        self.url = url or f"http://{worker_id}:8083/"
        self.connect_protocol, self.config = connect_protocol, config
        self.wall_offset_s = wall_offset_s
        self.leader = ConnectLeader(assignor or IncrementalCooperativeAssignor())
        self._config_offset = -1
        self._config_stale = False  # the connectors changed since the leader last read them
        self._rejoin_at: float | None = None  # a scheduled rebalance (the leader's delay)

    # ------------------------------------------------------------------ what the caller sees

    @property
    def is_leader(self) -> bool:
        return bool(self.member_id) and self.leader_id == self.member_id

    @property
    def eager(self) -> bool:
        return VERSION_OF.get(self.protocol_name or "", 0) == 0

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

    # ------------------------------------------------------------------ a worker's own

    def _who(self) -> str:
        return f"worker {self.worker_id}"

    def _join_protocols(self, now_s: float) -> list[m.JoinGroupRequestProtocol]:
        if self.eager or self.connect_protocol == "eager":
            self._end_all(now_s)  # eager: stop all before joining
        self._config_offset, _ = self.config()
        allocation = ConnectAssignment(
            version=1, leader=self.leader_id, leader_url=self.url,
            config_offset=self._config_offset, assigned=self._own.owned,
        )
        state = WorkerState(self.url, self._config_offset, allocation)
        self._rejoin_at = None
        offered = join_protocols(self.connect_protocol, state)
        return [m.JoinGroupRequestProtocol(n, b) for n, b in offered]

    def _lead(self, now_s: float, sent: Sent, resp: m.JoinGroupResponse) -> bool:
        if self.eager:
            # The group runs eager: a worker that joined incrementally (the group has just
            # changed protocol) stops everything now, as eager workers did before joining.
            self._end_all(now_s)
        if self.is_leader:
            self._config_stale = False  # read now: this round assigns the current connectors
            _, connectors = self.config()
            now_ms = round((now_s + self.wall_offset_s) * 1000)
            led = self.leader.lead(resp, self.url, self._config_offset, connectors, now_ms)
            self._sync_assignments = led.assignments
        else:
            self.leader.forget()
        return True

    def _decode(self, raw: bytes) -> ConnectAssignment:
        return decode_assignment(raw)

    def _delta(self, a: ConnectAssignment) -> tuple[Work, Work] | None:
        if a.error != 0:
            return None  # CONFIG_MISMATCH: re-read the config, rejoin
        owned = self._own.owned
        if a.version == 0:
            return owned - a.assigned, a.assigned - owned
        return a.revoked & owned, a.assigned - owned

    def _settled(self, now_s: float, revoked: Work, a: ConnectAssignment) -> None:
        if self._config_stale and self.is_leader:
            self._rejoin_at = now_s  # the connectors changed after this round was computed
        elif revoked and a.version >= 1:
            self._rejoin_at = now_s  # released work moves in the next round
        elif a.delay_ms > 0:
            self._rejoin_at = now_s + a.delay_ms / 1000

    def _rejoin_due(self, now_s: float) -> bool:
        return self._rejoin_at is not None and now_s >= self._rejoin_at

    def _extra_due(self) -> float | None:
        return self._rejoin_at if self._state == "stable" else None

    def _forget_leadership(self) -> None:
        self.leader.forget()

    def _end_all(self, now_s: float) -> None:
        self._own.end_all(now_s, "revoked", self.generation, self.member_id)
