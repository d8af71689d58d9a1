"""A Hypothesis state machine over a share group: members join, heartbeat, leave, fetch with
piggybacked acknowledgements, acknowledge (ACCEPT / RELEASE / REJECT / GAP, valid or not),
close their sessions, let locks and sessions expire, while the stream grows.

After every step the share-partitions keep Kafka's promises (invariant 7):

- a record acknowledged (its acknowledgement answered without error) is never delivered again;
- a record acquired by one member is not given to another while its lock holds;
- every delivery's count is the model's count + 1, never past ``share.delivery.count.limit``;
- every offset below a start offset was delivered and acknowledged, rejected or archived at
  the limit (none is skipped);
- a refused acknowledgement changes nothing.

And the log rebuilds the shard: the records, through the codec, into a fresh shard give equal
groups (share-partitions, locks and members included) and the same describes, whole or with
a compacted prefix.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from protocol import messages as m
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from protocol.share.messages import ACK_ACCEPT, ACK_GAP, ACK_REJECT, ACK_RELEASE
from protocol.share.partition_state import RecordState
from protocol.share.sessions import ShareLockExpiry
from tests.protocol.share.helpers import GROUP, new_shard, tid
from tests.protocol.test_replay import compacted, loaded, through_the_codec

LIMIT = 3
LOCK_MS = 15_000
MEMBERS = ("m0", "m1", "m2")
PARTITIONS = (0, 1)
T = tid("orders")
CONFIG = CoordinatorConfig(group_share_partition_max_record_locks=100)

members = st.sampled_from(MEMBERS)
partitions = st.sampled_from(PARTITIONS)
ack_types = st.sampled_from([ACK_ACCEPT, ACK_RELEASE, ACK_REJECT, ACK_GAP])


class ShareGroupEvents(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.shard = new_shard(CONFIG, initialized=False, share_delivery_count_limit=LIMIT,
                               share_record_lock_duration_ms=LOCK_MS)
        self.epochs: dict[str, int] = {}  # members in the group, by the model
        self.end = 0
        self.journal: list = []
        self.deliveries: dict[tuple[int, int], int] = {}  # (partition, offset) -> count
        self.done: set[tuple[int, int]] = set()  # acknowledged ACCEPT / REJECT / GAP

    # --- helpers ------------------------------------------------------------------------

    def _handle(self, req):
        result = self.shard.handle(req)
        self.journal.extend(result.records)
        return result

    def _partition(self, p: int):
        group = self.shard.groups.get(GROUP)
        return group.partitions.get((T, p)) if group is not None else None

    def _held(self, member: str, p: int) -> list[int]:
        sp = self._partition(p)
        return sp.acquired_by(member) if sp is not None else []

    def _check_acquired(self, member: str, p: int, before, acquired, acked: bool) -> None:
        for a in acquired:
            for offset in range(a.first_offset, a.last_offset + 1):
                key = (p, offset)
                assert key not in self.done, f"{key} was acknowledged, delivered again"
                old = before.records.get(offset) if before is not None else None
                # Only an available record is acquired, or one this member released in the
                # same request's acknowledgements: never one another member holds.
                assert old is None or old.state == RecordState.AVAILABLE or (
                    acked and old.member_id == member), f"{key} given to {member} while {old}"
                self.deliveries[key] = self.deliveries.get(key, 0) + 1
                assert a.delivery_count == self.deliveries[key] <= LIMIT

    def _acks(self, member: str, p: int, data, valid: bool) -> list[m.AcknowledgementBatch]:
        held = self._held(member, p)
        if valid and held:
            chosen = sorted(data.draw(st.sets(st.sampled_from(held), min_size=1)))
            return [m.AcknowledgementBatch(o, o, [data.draw(ack_types)]) for o in chosen]
        first = data.draw(st.integers(0, self.end + 2))
        last = data.draw(st.integers(first - 1, first + 3))
        return [m.AcknowledgementBatch(first, last, [data.draw(ack_types)])]

    def _note_acked(self, p: int, batches, error: int) -> None:
        if error != Errors.NONE:
            return
        for b in batches:
            for i, offset in enumerate(range(b.first_offset, b.last_offset + 1)):
                kind = b.acknowledge_types[0 if len(b.acknowledge_types) == 1 else i]
                if kind != ACK_RELEASE:
                    self.done.add((p, offset))

    # --- rules --------------------------------------------------------------------------

    @rule(member=members)
    def join(self, member: str) -> None:
        resp = self._handle(m.ShareGroupHeartbeatRequest(
            GROUP, member, 0, subscribed_topic_names=["orders"])).response
        assert resp.error_code == 0
        self.epochs[member] = resp.member_epoch

    @rule(member=members)
    def heartbeat(self, member: str) -> None:
        if member not in self.epochs:
            return
        resp = self._handle(m.ShareGroupHeartbeatRequest(GROUP, member,
                                                         self.epochs[member])).response
        if resp.error_code in (Errors.UNKNOWN_MEMBER_ID, Errors.GROUP_ID_NOT_FOUND):
            del self.epochs[member]  # its session ended (the group with it, maybe)
            return
        assert resp.error_code == 0, resp
        assert resp.member_epoch >= self.epochs[member]
        self.epochs[member] = resp.member_epoch

    @rule(member=members)
    def leave(self, member: str) -> None:
        resp = self._handle(m.ShareGroupHeartbeatRequest(GROUP, member, -1)).response
        assert resp.error_code in (0, Errors.UNKNOWN_MEMBER_ID, Errors.GROUP_ID_NOT_FOUND)
        self.epochs.pop(member, None)
        assert all(not self._held(member, p) for p in PARTITIONS)

    @rule(n=st.integers(1, 20))
    def produce(self, n: int) -> None:
        self.end += n

    @rule(member=members, p=partitions, max_records=st.integers(0, 12), data=st.data(),
          with_acks=st.booleans(), valid=st.booleans())
    def fetch(self, member, p, max_records, data, with_acks, valid) -> None:
        acks = self._acks(member, p, data, valid) if with_acks else []
        before = self._partition(p)
        before = before.copy() if before is not None else None
        req = m.ShareFetchRequest(GROUP, member, [m.ShareFetchTopic(T, [m.ShareFetchPartition(
            p, acks, log_end_offset=self.end)])], max_records=max_records)
        result = self._handle(req)
        resp = result.response
        if member not in self.shard.groups.get(GROUP, _NoGroup).members:
            assert resp.error_code in (Errors.UNKNOWN_MEMBER_ID, Errors.GROUP_ID_NOT_FOUND)
            assert result.records == []
            return
        part = resp.topics[0].partitions[0]
        self._note_acked(p, acks, part.acknowledge_error_code)
        if part.acknowledge_error_code != 0 and before is not None:
            # refused acknowledgements released nothing the member held
            assert set(before.acquired_by(member)) <= set(self._held(member, p))
        acked = bool(acks) and part.acknowledge_error_code == 0
        self._check_acquired(member, p, before, part.acquired, acked)
        assert sum(a.last_offset - a.first_offset + 1 for a in part.acquired) <= max_records

    @rule(member=members, p=partitions, data=st.data(), valid=st.booleans(),
          close=st.booleans())
    def acknowledge(self, member, p, data, valid, close) -> None:
        batches = self._acks(member, p, data, valid)
        before = self._partition(p)
        before = before.copy() if before is not None else None
        req = m.ShareAcknowledgeRequest(GROUP, member, [m.ShareAcknowledgeTopic(
            T, [m.ShareAcknowledgePartition(p, batches)])], close_session=close)
        resp = self._handle(req).response
        if resp.error_code != 0:
            return
        error = resp.topics[0].partitions[0].error_code
        self._note_acked(p, batches, error)
        if error != 0 and not close:
            assert self._partition(p) == before, "a refused acknowledgement changed state"
        if close:
            assert all(not self._held(member, q) for q in PARTITIONS)

    @rule()
    def delete_group(self) -> None:
        """DeleteGroups: refused while members remain; else the group and its
        share-partitions go (their tombstones are in the log), and a member starts over."""
        result = self._handle(m.DeleteGroupsRequest([GROUP]))
        error = result.response.results[0].error_code
        if error == 0:
            assert GROUP not in self.shard.groups
            self.deliveries.clear()
            self.done.clear()
        else:
            assert result.records == []

    @rule(ms=st.integers(1, 50_000))
    def time_passes(self, ms: int) -> None:
        result = self.shard.tick(self.shard.now_ms + ms)
        self.journal.extend(result.records)

    @precondition(lambda self: self.journal)
    @rule()
    def expire_everything(self) -> None:
        """Jump to the next deadline (a lock or a session), as the runtime's timer would."""
        deadline = self.shard.next_deadline_ms()
        if deadline is not None:
            self.journal.extend(self.shard.tick(deadline).records)

    # --- invariants ----------------------------------------------------------------------

    @invariant()
    def nothing_below_a_start_offset_was_skipped(self) -> None:
        for p in PARTITIONS:
            sp = self._partition(p)
            if sp is None:
                continue
            for offset in range(sp.start_offset):
                key = (p, offset)
                assert key in self.deliveries, f"{key} skipped"
                assert key in self.done or self.deliveries[key] >= LIMIT, f"{key} lost"
            for rec in sp.records.values():
                assert rec.delivery_count <= LIMIT
                if rec.state == RecordState.ACQUIRED:
                    assert rec.member_id in self.shard.groups[GROUP].members
            assert sp.next_offset - sp.start_offset <= CONFIG.group_share_partition_max_record_locks

    def teardown(self) -> None:
        records = through_the_codec(self.journal)
        for log in (records, compacted(records[: len(records) // 2]) + records[len(records) // 2:]):
            replayed = loaded(self.shard, log)
            assert sorted(replayed.groups) == sorted(self.shard.groups)
            for gid, group in self.shard.groups.items():
                assert replayed.groups[gid] == group
            describe = m.ShareGroupDescribeRequest([GROUP])
            assert replayed.handle(describe).response == self.shard.handle(describe).response
            for p in PARTITIONS:  # the locks' timers are re-armed from the records
                key = ShareLockExpiry(GROUP, T, p)
                assert replayed.timers.deadline(key) == self.shard.timers.deadline(key)


class _NoGroup:
    members: dict = {}


ShareGroupEvents.TestCase.settings = settings(
    max_examples=100, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestShareGroupEvents = ShareGroupEvents.TestCase
