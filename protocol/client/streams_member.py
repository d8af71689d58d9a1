"""The client half of a streams group member (KIP-1071), pure: what Kafka Streams' heartbeat
request manager does with its tasks, without processing anything.

It joins with its topology at epoch 0, then heartbeats at the interval the coordinator gives,
always reporting every task it owns (active, standby, warm-up). A reply that carries tasks is
the member's new assignment: what it no longer names is given up at once (revoked before the
next heartbeat acknowledges it), what is new is taken; a reply that changed what it owns is
acknowledged by a heartbeat sent at once. Fenced (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, or
GROUP_ID_NOT_FOUND once joined) it gives up everything and rejoins at epoch 0; retriable
errors and lost replies back off and retry with what it owns unchanged.

Its own fencing deadline (invariant 8): the coordinator removes a member whose session ran
out, counted from a heartbeat it received, which was *sent* no earlier than the last reply's
request; so the member gives up every task at ``sent + session timeout`` of its last answered
heartbeat unless a newer one was answered, reply or not (a reply read after that deadline is
not trusted: it starts over). Its rebalance timeout is far above its session timeout, so the
coordinator's revocation deadline never comes first: every answered heartbeat reports the
revocation done (it revokes on reading the reply), and unanswered ones run into the session
deadline.

``timeline`` records each change of what it owns as a snapshot (time, member epoch, active,
standby and warm-up tasks, why); ``events_recorded`` counts them all (the timeline is bounded).
It never sends, sleeps or reads a clock: the host passes ``now_s`` (a clock shared by every
member of a run, for timelines to compare) into every call.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any

from protocol.errors import COORDINATOR_UNAVAILABLE, Errors
from protocol.retry import backoff_s, next_retries
from protocol.streams import messages as sm
from protocol.streams.member import JOIN_EPOCH, LEAVE_EPOCH, Tasks
from protocol.streams.records import Subtopology, TopicInfo

FENCED = frozenset({Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID})
RETRIABLE = COORDINATOR_UNAVAILABLE | {Errors.UNKNOWN_SERVER_ERROR,
                                       Errors.UNRELEASED_INSTANCE_ID}
FIRST_INTERVAL_S = 0.1  # before the coordinator said its heartbeat interval
REBALANCE_OVER_SESSION = 10  # the rebalance timeout, in session timeouts (module docstring)
MIN_REBALANCE_TIMEOUT_MS = 30_000


def word_count_topology(app: str, source: str, epoch: int = 1) -> sm.StreamsTopology:
    """A word count's shape: subtopology 0 reads ``source`` and writes a repartition topic,
    subtopology 1 reads it into a store with a changelog (stateful: its tasks get standbys).
    Both have as many tasks as ``source`` has partitions."""
    repartition = f"{app}-words-repartition"
    return sm.StreamsTopology(epoch, (
        Subtopology("0", (source,), repartition_sink_topics=(repartition,)),
        Subtopology("1", (), state_changelog_topics=(TopicInfo(f"{app}-counts-changelog"),),
                    repartition_source_topics=(TopicInfo(repartition),)),
    ))


def _pairs(tasks: list[sm.TaskIds] | None) -> frozenset:
    return frozenset((t.subtopology_id, p) for t in tasks or [] for p in t.partitions)


def _wire(tasks: frozenset) -> list[sm.TaskIds]:
    by: dict[str, list[int]] = {}
    for sub, p in tasks:
        by.setdefault(sub, []).append(p)
    return sm.task_ids(by)


class StreamsMemberClient:
    """One member of one streams group: what to send when, and which tasks it owns meanwhile.

    Guarantees: at most one heartbeat in flight; a task is owned only between the reply that
    granted it and the moment it was revoked, lost or could have been fenced away (recorded
    in ``timeline`` in that order, before the next heartbeat goes); member epochs never go
    down except to 0 when it rejoins.
    """

    def __init__(self, group_id: str, member_id: str, topology: sm.StreamsTopology,
                 process_id: str, *, session_timeout_ms: int, instance_id: str | None = None,
                 timeline_max_events: int = 10_000) -> None:
        if session_timeout_ms <= 0 or timeline_max_events <= 0:
            raise ValueError("the session timeout and the timeline bound must be positive")
        self.group_id, self.member_id, self.instance_id = group_id, member_id, instance_id
        self.topology, self.process_id = topology, process_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = max(MIN_REBALANCE_TIMEOUT_MS,
                                        REBALANCE_OVER_SESSION * session_timeout_ms)
        self.epoch = JOIN_EPOCH
        self.owned = Tasks()
        self.interval_s = FIRST_INTERVAL_S
        self.status: list[sm.StreamsStatus] = []
        self.error: int | None = None
        self.done = False
        self.timeline: deque[dict[str, Any]] = deque(maxlen=timeline_max_events)
        self.events_recorded = 0
        self._endpoint_epoch = 0
        self._due = -math.inf
        self._sent_at: float | None = None  # the heartbeat in flight was sent then
        self._alive_until: float | None = None  # no session fence before this
        self._retries = 0
        self._leaving = False
        self._leave_sent = False  # the heartbeat in flight is the leave

    # ------------------------------------------------------------------ what the host sees

    @property
    def state(self) -> str:
        if self.error is not None:
            return "failed"
        if self.done:
            return "stopped"
        if self._leaving:
            return "leaving"
        return "joining" if self.epoch <= 0 else "member"

    def next_due(self) -> float:
        """When ``poll`` next has something to do (send, or give tasks up at the deadline)."""
        if self.done or self._sent_at is not None:
            return self._deadline()
        return min(self._due, self._deadline())

    # ------------------------------------------------------------------ the loop

    def poll(self, now_s: float) -> sm.StreamsGroupHeartbeatRequest | None:
        """The heartbeat to send now, if one is due (then it is in flight)."""
        self._check_deadline(now_s)
        if self.done or self._sent_at is not None or now_s < self._due:
            return None
        self._sent_at = now_s
        self._leave_sent = self._leaving
        if self._leaving:
            return sm.StreamsGroupHeartbeatRequest(self.group_id, self.member_id, LEAVE_EPOCH,
                                                   self._endpoint_epoch,
                                                   instance_id=self.instance_id)
        req = sm.StreamsGroupHeartbeatRequest(
            self.group_id, self.member_id, self.epoch, self._endpoint_epoch,
            instance_id=self.instance_id, process_id=self.process_id,
            active_tasks=_wire(self.owned.active), standby_tasks=_wire(self.owned.standby),
            warmup_tasks=_wire(self.owned.warmup))
        if self.epoch == JOIN_EPOCH:
            req.topology = self.topology
            req.rebalance_timeout_ms = self.rebalance_timeout_ms
        return req

    def on_response(self, now_s: float, resp: sm.StreamsGroupHeartbeatResponse
                    ) -> dict[str, sm.CreatableTopic]:
        """Read the reply to the heartbeat in flight; the internal topics it asks the caller
        to create (the gateway's part, off the wire)."""
        sent = self._finish()
        if self._leaving:
            # Any answer to the leave ends it; one to a heartbeat sent before ``leave`` says
            # nothing of it, and the leave goes now (taken for the leave's answer, it left the
            # member in its group for a session timeout).
            if self._leave_sent:
                self.done = True
            else:
                self._due = now_s
            return {}
        code = resp.error_code
        if code == Errors.NONE:
            self._on_success(now_s, sent, resp)
            return dict(resp.topics_to_create)
        self._check_deadline(now_s)
        if code in FENCED or (code == Errors.GROUP_ID_NOT_FOUND and self.epoch > 0):
            self._lose(now_s, f"fenced: {Errors(code).name}")
        elif code in RETRIABLE:
            self._retry(now_s)
        else:
            self._lose(now_s, f"failed: {Errors(code).name}")
            self.error = code
            self.done = True
        return {}

    def on_failure(self, now_s: float) -> None:
        """No reply (a dead or restarting coordinator): keep what it owns and retry."""
        self._finish()
        if self._leaving:
            if self._leave_sent:
                self.done = True  # the session runs out on its own
            else:
                self._due = now_s  # what failed was out before the leave: send the leave
            return
        self._check_deadline(now_s)
        self._retry(now_s)

    def leave(self, now_s: float) -> None:
        """Stop processing (every task given up now), then send the leave heartbeat."""
        if self.done or self._leaving:
            return
        self._take(now_s, Tasks(), self.epoch, "leaving")
        self._leaving = True
        self._due = now_s
        if self.epoch == JOIN_EPOCH and self._sent_at is None:
            self.done = True  # never joined: nothing to leave

    # ------------------------------------------------------------------ internals

    def _finish(self) -> float:
        sent = self._sent_at
        assert sent is not None, "a reply with no heartbeat in flight"
        self._sent_at = None
        return sent

    def _deadline(self) -> float:
        if self.epoch <= 0 or self._alive_until is None or self.done:
            return math.inf
        return self._alive_until

    def _check_deadline(self, now_s: float) -> None:
        deadline = self._deadline()
        if now_s >= deadline:
            self._lose(deadline, "session deadline passed without an answered heartbeat")

    def _on_success(self, now_s: float, sent_at: float,
                    resp: sm.StreamsGroupHeartbeatResponse) -> None:
        deadline = self._deadline()
        if now_s >= deadline:
            self._lose(deadline, "reply read after the session deadline")
            return
        alive_until = sent_at + self.session_timeout_ms / 1000
        if now_s >= alive_until:  # a join answered a session late: it may be fenced already
            self._lose(now_s, "reply read after the session deadline")
            return
        self._alive_until = alive_until
        assert resp.member_epoch >= self.epoch, "member epochs never go down"
        if resp.heartbeat_interval_ms > 0:
            self.interval_s = resp.heartbeat_interval_ms / 1000
        self._endpoint_epoch = resp.endpoint_information_epoch
        self.status = list(resp.status or [])
        self._retries = 0
        self.member_id = resp.member_id or self.member_id
        changed = resp.member_epoch != self.epoch
        if resp.active_tasks is not None:
            target = Tasks(_pairs(resp.active_tasks), _pairs(resp.standby_tasks),
                           _pairs(resp.warmup_tasks))
            changed = changed or target != self.owned
            # Revoked tasks go (and new ones come) before anything is sent again.
            self._take(now_s, target, resp.member_epoch, "assigned")
        elif changed:
            self._take(now_s, self.owned, resp.member_epoch, "epoch")
        # A change is acknowledged at once; otherwise the next heartbeat is at the interval.
        self._due = now_s if changed else now_s + self.interval_s

    def _retry(self, now_s: float) -> None:
        self._due = now_s + backoff_s(self._retries)
        self._retries = next_retries(self._retries)

    def _lose(self, at_s: float, why: str) -> None:
        """Give up every task (at ``at_s``) and rejoin at epoch 0."""
        self._take(at_s, Tasks(), JOIN_EPOCH, why)
        self._alive_until = None
        self._due = -math.inf

    def _take(self, at_s: float, tasks: Tasks, epoch: int, why: str) -> None:
        self.owned, self.epoch = tasks, epoch
        self.timeline.append({
            "t": at_s, "member_id": self.member_id, "process_id": self.process_id,
            "epoch": epoch, "why": why,
            "active": sorted(tasks.active), "standby": sorted(tasks.standby),
            "warmup": sorted(tasks.warmup)})
        self.events_recorded += 1
