"""The client half of a share group member (KIP-932), pure: what a share consumer sends when.

Two request streams, one in flight each, as Kafka's share consumer keeps them:

* ShareGroupHeartbeat at the interval the coordinator gives: join at epoch 0 with a
  client-generated member id, keep the epoch the replies give, leave at -1. The assignment is
  the partitions the member may fetch; members share partitions, so there is nothing to revoke
  before acknowledging (unlike KIP-848): a partition no longer assigned is simply not fetched.
  Fenced (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, or GROUP_ID_NOT_FOUND once joined): rejoin at
  epoch 0; the coordinator has released whatever the member held, so it forgets it too.
* ShareFetch of the assigned partitions, carrying the acknowledgements of what it processed
  (piggybacked, as the real client does in explicit mode); each reply's acquired ranges are the
  records to process. The last fetch on leaving closes the session (``close_session``): its
  acknowledgements apply and anything still held is released.

The host (a Ray actor, ``actors/clients/share_consumer.py``) passes ``now_s`` in, sends what
``poll_*`` returns, feeds replies back, processes the acquired records and calls
``acknowledge``. The timeline records every acquisition and every acknowledgement the
coordinator confirmed (bounded). Nothing here sleeps, sends or reads a clock.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass

from protocol import messages as m
from protocol.errors import COORDINATOR_UNAVAILABLE, Errors
from protocol.share.messages import ACK_ACCEPT

JOIN_EPOCH, LEAVE_EPOCH = 0, -1
FENCED = frozenset({Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID})
RETRY_S = 0.2
TIMELINE_MAX_EVENTS = 100_000


@dataclass(frozen=True)
class Acquired:
    topic_id: str
    partition: int
    first_offset: int
    last_offset: int
    delivery_count: int


class ShareMemberClient:
    """One member of one share group (see the module docstring for its guarantees)."""

    def __init__(self, group_id: str, member_id: str, topics: list[str],
                 max_records: int = 500, timeline_max_events: int = TIMELINE_MAX_EVENTS) -> None:
        self.group_id = group_id
        self.member_id = member_id
        self.topics = list(topics)
        self.max_records = max_records
        self.epoch = JOIN_EPOCH
        self.assignment: list[tuple[str, int]] = []
        self.interval_s = 0.0
        self.state = "joining"  # joining, stable, leaving, stopped
        self.timeline: deque[dict] = deque(maxlen=timeline_max_events)
        self.events_recorded = 0  # every event ever recorded (the timeline keeps the newest)
        self._next_heartbeat_s = 0.0
        self._heartbeat_in_flight = False
        self._leave_in_flight = False  # the heartbeat in flight is the leave (epoch -1)
        self._fetch_in_flight = False
        self._retry_fetch_at_s = 0.0
        self._subscription_sent = False
        # Acknowledgements not yet sent, and those sent with the fetch now in flight.
        self._pending: dict[tuple[str, int], list[m.AcknowledgementBatch]] = {}
        self._sent: dict[tuple[str, int], list[m.AcknowledgementBatch]] = {}

    # ------------------------------------------------------------------- heartbeats

    def poll_heartbeat(self, now_s: float) -> m.ShareGroupHeartbeatRequest | None:
        if self._heartbeat_in_flight or self.state == "stopped" or now_s < self._next_heartbeat_s:
            return None
        if self.state == "leaving" and (self._fetch_in_flight or self._pending):
            return None  # the session closes (acknowledgements apply) before the member leaves
        self._heartbeat_in_flight = True
        self._leave_in_flight = self.state == "leaving"
        full = self.epoch == JOIN_EPOCH or not self._subscription_sent
        return m.ShareGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id,
            member_epoch=LEAVE_EPOCH if self.state == "leaving" else self.epoch,
            subscribed_topic_names=list(self.topics) if full else None)

    def on_heartbeat(self, now_s: float, resp: m.ShareGroupHeartbeatResponse) -> None:
        self._heartbeat_in_flight = False
        if self.state == "leaving":
            self._on_leave_reply(now_s, resp)
            return
        if resp.error_code in FENCED or (resp.error_code == Errors.GROUP_ID_NOT_FOUND
                                         and self.epoch > JOIN_EPOCH):
            # A joined member whose group is gone (deleted while it was away: Kafka's answer
            # to a heartbeat with an epoch) starts over, as a fenced one does.
            self._fenced(now_s)
            return
        if resp.error_code != Errors.NONE:
            self._next_heartbeat_s = now_s + (RETRY_S if resp.error_code in
                                              COORDINATOR_UNAVAILABLE else max(self.interval_s,
                                                                               RETRY_S))
            return
        assert resp.member_epoch >= self.epoch, "a member epoch never goes down"
        self.epoch = resp.member_epoch
        self._subscription_sent = True
        self.interval_s = resp.heartbeat_interval_ms / 1000
        self._next_heartbeat_s = now_s + self.interval_s
        if self.state == "joining":
            self.state = "stable"
        if resp.assignment is not None:
            new = sorted((tp.topic_id, p) for tp in resp.assignment.topic_partitions
                         for p in tp.partitions)
            if new != self.assignment:
                self.assignment = new
                self._event(now_s, "assigned", partitions=new, epoch=self.epoch)

    def _on_leave_reply(self, now_s: float, resp: m.ShareGroupHeartbeatResponse) -> None:
        """A reply while leaving. One to a heartbeat sent before ``leave`` says nothing of
        the leave, which goes next (taking it for the leave's reply left the member in its
        group for a whole session timeout: a driver's exit landed while a heartbeat was in
        flight, as it does under load). A coordinator that could not take the leave yet is
        asked again; the actor bounds how long (its leave timeout)."""
        was_leave, self._leave_in_flight = self._leave_in_flight, False
        if not was_leave:
            self._next_heartbeat_s = now_s
            return
        if resp.error_code in COORDINATOR_UNAVAILABLE:
            self._next_heartbeat_s = now_s + RETRY_S
            return
        self.state = "stopped"
        self._event(now_s, "left", epoch=LEAVE_EPOCH)

    def on_heartbeat_failure(self, now_s: float) -> None:
        """The heartbeat in flight got no reply: asked again after ``RETRY_S`` (a leave too,
        within the actor's leave timeout)."""
        self._heartbeat_in_flight = self._leave_in_flight = False
        self._next_heartbeat_s = now_s + RETRY_S

    def _fenced(self, now_s: float) -> None:
        self._event(now_s, "fenced", epoch=self.epoch)
        self.epoch = JOIN_EPOCH
        self.state = "joining"
        self.assignment = []
        self._pending.clear()  # the coordinator released what the member held
        self._next_heartbeat_s = now_s

    # ------------------------------------------------------------------------ fetch

    def poll_fetch(self, now_s: float, log_end_offset: int = 0,
                   bounds: Mapping[tuple[str, int], tuple[int, int]] | None = None
                   ) -> m.ShareFetchRequest | None:
        """The next ShareFetch, or None. ``log_end_offset``: the synthetic stream's end now,
        the same for every partition; or ``bounds``: each partition's (log start, log end)
        as read from an upstream, where a partition without bounds is not fetched (its
        acknowledgements still go)."""
        if self._fetch_in_flight or now_s < self._retry_fetch_at_s or self.state == "stopped":
            return None
        closing = self.state == "leaving"
        if closing and not self._pending:
            return None
        wanted = [] if closing or self.state != "stable" else [
            tp for tp in self.assignment if bounds is None or tp in bounds]
        if not closing and not wanted and not self._pending:
            return None
        partitions = list(dict.fromkeys(wanted + list(self._pending)))
        by_topic: dict[str, list[m.ShareFetchPartition]] = {}
        for tid, p in partitions:
            start, end = (0, log_end_offset) if bounds is None else bounds.get((tid, p), (0, 0))
            by_topic.setdefault(tid, []).append(m.ShareFetchPartition(
                p, list(self._pending.get((tid, p), [])), fetch=(tid, p) in wanted,
                log_end_offset=end, log_start_offset=start))
        self._sent, self._pending = self._pending, {}
        for (tid, p), batches in self._sent.items():  # sent: they may apply, reply or not
            self._event(now_s, "acknowledging", topic_id=tid, partition=p, ranges=[
                (b.first_offset, b.last_offset, b.acknowledge_types[0]) for b in batches])
        self._fetch_in_flight = True
        return m.ShareFetchRequest(
            group_id=self.group_id, member_id=self.member_id,
            topics=[m.ShareFetchTopic(t, ps) for t, ps in by_topic.items()],
            max_records=self.max_records, close_session=closing)

    def on_fetch(self, now_s: float, resp: m.ShareFetchResponse) -> list[Acquired]:
        """The records acquired by this reply (to process, then ``acknowledge``)."""
        self._fetch_in_flight = False
        sent, self._sent = self._sent, {}
        if resp.error_code != Errors.NONE:
            if resp.error_code in FENCED:
                self._fenced(now_s)
            else:  # the acknowledgements' fate is unknown: the locks will expire if lost
                self._retry_fetch_at_s = now_s + RETRY_S
            return []
        acquired = []
        for t in resp.topics:
            for p in t.partitions:
                batches = sent.pop((t.topic_id, p.partition), [])
                if batches and p.acknowledge_error_code == Errors.NONE:
                    self._event(now_s, "acknowledged", topic_id=t.topic_id,
                                partition=p.partition, ranges=[
                                    (b.first_offset, b.last_offset, b.acknowledge_types[0])
                                    for b in batches])
                if p.error_code != Errors.NONE:
                    continue
                for a in p.acquired:
                    acquired.append(Acquired(t.topic_id, p.partition, a.first_offset,
                                             a.last_offset, a.delivery_count))
                    self._event(now_s, "acquired", topic_id=t.topic_id, partition=p.partition,
                                first_offset=a.first_offset, last_offset=a.last_offset,
                                delivery_count=a.delivery_count)
        return acquired

    def on_fetch_failure(self, now_s: float) -> None:
        self._fetch_in_flight = False
        self._sent = {}
        self._retry_fetch_at_s = now_s + RETRY_S

    def acknowledge(self, records: Acquired, ack_type: int = ACK_ACCEPT) -> None:
        """Acknowledge a processed range; sent with the next fetch."""
        self._pending.setdefault((records.topic_id, records.partition), []).append(
            m.AcknowledgementBatch(records.first_offset, records.last_offset, [ack_type]))

    # ------------------------------------------------------------------------ leave

    def leave(self, now_s: float) -> None:
        """Close the share session (acknowledgements pending go with it), then leave."""
        if self.state in ("stopped", "leaving"):
            return
        if self.epoch == JOIN_EPOCH and self.state == "joining":
            self.state = "stopped"
            return
        self.state = "leaving"
        self._next_heartbeat_s = now_s

    @property
    def done(self) -> bool:
        return self.state == "stopped"

    def _event(self, now_s: float, event: str, **fields) -> None:
        self.timeline.append({"t": now_s, "event": event, "member_id": self.member_id,
                              **fields})
        self.events_recorded += 1
