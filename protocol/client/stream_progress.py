"""A member's progress through its partitions' records, committed as it goes.

Without an upstream Cohort has no log of records to consume, so a consumer "processes" a
synthetic stream: offset n of a partition is simply the n-th record, at ``records_per_s``
(``advance``). In front of an upstream the host reads the partitions' real records from the
positions this object gives (``positions``), hands them to the user's function, and reports
how far that got (``processed``, or ``reset`` when the log no longer holds the position). What
is real either way is the bookkeeping Kafka consumers do around it, and what this object
decides (sans-I/O, like the clients it sits beside):

* a partition that is assigned is processed only once its committed offset is fetched, from
  there on (the new owner resumes where the last one committed);
* progress is committed every ``commit_interval_s``, with the member's epoch (or generation);
* a partition being revoked gets a last commit, which the caller sends *before* the heartbeat
  that acknowledges the revocation, so the next owner starts exactly where this one stopped;
  a lost partition gets none (the next owner re-processes from the last commit: at least
  once, never a gap).

Processed ranges and acknowledged commits are reported as events, so a run can check that no
committed offset goes back and that no partition's processed ranges leave a gap.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from protocol import messages as m
from protocol.errors import Errors

TopicPartition = tuple[str, int]


@dataclass
class _Partition:
    position: int | None = None  # next offset to process; None until the fetch answers
    logged: int = 0  # processing up to here is already in an event
    committed: int = -1  # last commit the coordinator acknowledged
    fetching: bool = False


@dataclass
class StreamProgress:
    """One member's progress through its partitions' synthetic streams, and its commits.

    It exists so that runs exercise what offsets are for (a new owner resumes where the last
    one committed) and can check it: invariant 5 (committed offsets never go back) and the
    stream's own promise, at least once and never a gap. Guarantees: a partition is processed
    only once its committed offset is fetched, from there on; a revoked partition's last
    commit is among the ``requests`` the caller sends before its acknowledging heartbeat; a
    lost one gets none; ``events`` holds every processed range and acknowledged commit, in
    order (all of them: it is not bounded, so a long-lived host must take them away).
    """

    group_id: str
    records_per_s: float = 50.0
    commit_interval_s: float = 0.5
    partitions: dict[TopicPartition, _Partition] = field(default_factory=dict)
    # Final commits owed for revoked partitions: sent before the acknowledging heartbeat.
    final: dict[TopicPartition, int] = field(default_factory=dict)
    events: list[dict] = field(default_factory=list)
    _last_commit_at: float = 0.0
    _last_advance_at: float | None = None
    _carry: float = 0.0

    # ------------------------------------------------------------------ ownership

    def assigned(self, parts: Iterable[TopicPartition]) -> None:
        for tp in parts:
            self.partitions.setdefault(tuple(tp), _Partition())

    def revoked(self, parts: Iterable[TopicPartition], now_s: float) -> None:
        """Stop processing; owe a last commit of where processing got to."""
        for tp in parts:
            p = self.partitions.pop(tuple(tp), None)
            if p is not None and p.position is not None:
                self._log(tuple(tp), p, now_s)
                if p.position > p.committed:
                    self.final[tuple(tp)] = p.position

    def lost(self, parts: Iterable[TopicPartition], now_s: float) -> None:
        """Stop processing, commit nothing: the member may no longer be in the group."""
        for tp in parts:
            p = self.partitions.pop(tuple(tp), None)
            if p is not None and p.position is not None:
                self._log(tuple(tp), p, now_s)
            self.final.pop(tuple(tp), None)

    # ------------------------------------------------------------------ processing

    def positions(self) -> dict[TopicPartition, int]:
        """Where each owned partition's processing stands (those whose committed offset is
        fetched): a host of real records reads from here."""
        return {tp: p.position for tp, p in self.partitions.items() if p.position is not None}

    def processed(self, tp: TopicPartition, next_offset: int, now_s: float,
                  records: int = 0) -> None:
        """Real records of ``tp`` below ``next_offset`` were handed to the user's function and
        it returned (``records`` of them: fewer than the offsets when some were transaction
        markers or compacted away). Recorded at once, with the real offsets."""
        p = self.partitions.get(tuple(tp))
        if p is None or p.position is None or next_offset <= p.position:
            return  # revoked or lost meanwhile, or nothing new: the next owner reads it
        self._log(tuple(tp), p, now_s)
        self.events.append({"t": now_s, "event": "processed", "partitions": [tuple(tp)],
                            "from": p.position, "to": next_offset, "records": records})
        p.position = p.logged = next_offset

    def reset(self, tp: TopicPartition, offset: int, now_s: float) -> None:
        """The log no longer holds ``tp``'s position (retention deleted it): go on from
        ``offset``, the log's start, as a Kafka consumer with ``auto.offset.reset=earliest``."""
        p = self.partitions.get(tuple(tp))
        if p is None or p.position is None or offset == p.position:
            return
        self.events.append({"t": now_s, "event": "reset", "partitions": [tuple(tp)],
                            "from": p.position, "to": offset})
        p.position = p.logged = offset

    def advance(self, now_s: float) -> None:
        """Process what the rate allows since the last call, on every fetched partition
        (the synthetic stream only)."""
        if self._last_advance_at is None:
            self._last_advance_at = now_s
            return
        self._carry += max(0.0, now_s - self._last_advance_at) * self.records_per_s
        self._last_advance_at = now_s
        step = int(self._carry)
        if step <= 0:
            return
        self._carry -= step
        for p in self.partitions.values():
            if p.position is not None:
                p.position += step

    # ------------------------------------------------------------------ requests

    def requests(
        self, member_id: str, epoch: int, now_s: float, force_commit: bool = False
    ) -> list[object]:
        """What to send now, before this member's heartbeat: a fetch for newly assigned
        partitions, and a commit when one is due (or owed for revoked partitions)."""
        out: list[object] = []
        to_fetch = [
            tp for tp, p in self.partitions.items() if p.position is None and not p.fetching
        ]
        if to_fetch and epoch > 0:
            for tp in to_fetch:
                self.partitions[tp].fetching = True
            out.append(
                m.OffsetFetchRequest(
                    group_id=self.group_id,
                    member_id=member_id,
                    member_epoch=epoch,
                    topics=_by_topic_fetch(to_fetch),
                )
            )
        due = force_commit or now_s - self._last_commit_at >= self.commit_interval_s
        offsets = dict(self.final)
        if due:
            for tp, p in self.partitions.items():
                if p.position is not None and p.position > p.committed:
                    offsets[tp] = p.position
                    self._log(tp, p, now_s)
        if offsets and epoch > 0:
            self._last_commit_at = now_s
            out.append(
                m.OffsetCommitRequest(
                    group_id=self.group_id,
                    generation_id_or_member_epoch=epoch,
                    member_id=member_id,
                    topics=_by_topic_commit(offsets),
                )
            )
        return out

    def on_reply(self, request: object, reply: object, now_s: float) -> None:
        if isinstance(request, m.OffsetFetchRequest):
            self._on_fetch(request, reply)
        elif isinstance(request, m.OffsetCommitRequest):
            self._on_commit(request, reply, now_s)

    def on_failure(self, request: object) -> None:
        """The call carrying ``request`` failed: fetch again next time (final commits stay
        owed until acknowledged or the partitions are lost)."""
        if isinstance(request, m.OffsetFetchRequest):
            for t in request.topics or []:
                for p in t.partition_indexes:
                    part = self.partitions.get((t.name, p))
                    if part is not None:
                        part.fetching = False

    def _on_fetch(self, request: m.OffsetFetchRequest, reply: object) -> None:
        answered: dict[TopicPartition, int] = {}
        if getattr(reply, "error_code", Errors.NONE) == Errors.NONE:
            for t in getattr(reply, "topics", []):
                for p in t.partitions:
                    if p.error_code == Errors.NONE:
                        answered[(t.name, p.partition_index)] = p.committed_offset
        for t in request.topics or []:
            for idx in t.partition_indexes:
                part = self.partitions.get((t.name, idx))
                if part is None or part.position is not None:
                    continue
                part.fetching = False
                if (t.name, idx) in answered:
                    start = max(answered[(t.name, idx)], 0)
                    part.position = part.logged = start
                    part.committed = answered[(t.name, idx)]

    def _on_commit(self, request: m.OffsetCommitRequest, reply: object, now_s: float) -> None:
        acked: list[tuple[TopicPartition, int]] = []
        errors = {}
        for t in getattr(reply, "topics", []):
            for p in t.partitions:
                errors[(t.name, p.partition_index)] = p.error_code
        for t in request.topics:
            for p in t.partitions:
                tp = (t.name, p.partition_index)
                if errors.get(tp) == Errors.NONE:
                    acked.append((tp, p.committed_offset))
                if self.final.get(tp) == p.committed_offset:
                    del self.final[tp]  # acknowledged, or refused for good: not owed any more
                part = self.partitions.get(tp)
                if part is not None and errors.get(tp) == Errors.NONE:
                    part.committed = max(part.committed, p.committed_offset)
        for tp, offset in acked:
            self.events.append(
                {"t": now_s, "event": "committed", "partitions": [tp], "offset": offset}
            )

    def _log(self, tp: TopicPartition, p: _Partition, now_s: float) -> None:
        if p.position is not None and p.position > p.logged:
            self.events.append(
                {
                    "t": now_s,
                    "event": "processed",
                    "partitions": [tp],
                    "from": p.logged,
                    "to": p.position,
                }
            )
            p.logged = p.position


def _by_topic_fetch(tps: list[TopicPartition]) -> list[m.OffsetFetchRequestTopic]:
    topics: dict[str, list[int]] = {}
    for t, p in sorted(tps):
        topics.setdefault(t, []).append(p)
    return [m.OffsetFetchRequestTopic(t, ps) for t, ps in topics.items()]


def _by_topic_commit(offsets: dict[TopicPartition, int]) -> list[m.OffsetCommitRequestTopic]:
    topics: dict[str, list[m.OffsetCommitRequestPartition]] = {}
    for (t, p), offset in sorted(offsets.items()):
        topics.setdefault(t, []).append(m.OffsetCommitRequestPartition(p, offset))
    return [m.OffsetCommitRequestTopic(t, ps) for t, ps in topics.items()]
