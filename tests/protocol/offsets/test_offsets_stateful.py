"""Random runs of commits, deletes, group deletions, time and restarts against a dict model.

Simple consumers (groups without a group object) commit valid and invalid offsets, with and
without an explicit retention; admins delete offsets and groups; time jumps, also exactly onto
the expiry check; the shard restarts from its log. After every step the shard must hold
exactly the model's offsets, answer an OffsetFetch with them, and equal a fresh shard that
replayed every record it wrote (through the codec).
"""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from protocol import messages as m
from protocol.codec import decode_record, encode_record
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from protocol.offsets.rules import EXPIRE_TIMER
from protocol.records import OffsetCommitValue
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import TracedShard, image
from tests.protocol.offsets.test_offsets import (
    CHECK_MS,
    commit_request,
    committed,
    delete_groups,
    delete_offsets,
    group_errors,
    partition_errors,
)

# Two expiry checks long, so an offset committed when the check was armed expires exactly on one.
CONFIG = CoordinatorConfig(offsets_retention_minutes=20, offset_metadata_max_bytes=8)
RETENTION_MS = 20 * 60_000
TOPICS = {"foo": 3, "bar": 2}
GROUPS = ("g1", "g2", "g3")

Key = tuple[str, str, int]  # group, topic, partition

entries = st.lists(
    st.tuples(
        st.sampled_from(["foo", "bar", "nope"]),
        st.integers(-1, 3),
        st.integers(-1, 1_000),
        st.one_of(st.none(), st.text(max_size=6)),
    ),
    min_size=1,
    max_size=4,
    unique_by=lambda e: (e[0], e[1]),
)


def through_the_codec(records):
    return [decode_record(encode_record(r)) for r in records]


class OffsetsModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 0
        self.shard = TracedShard(config=CONFIG, metadata=image(**TOPICS))
        self.model: dict[Key, OffsetCommitValue] = {}
        self.check_at: int | None = None  # when the expiry check fires next

    # ---------------------------------------------------------------- rules

    @rule(
        group=st.sampled_from(GROUPS),
        parts=entries,
        retention_ms=st.sampled_from([-1, 0, 1_000, 60_000, 2 * CHECK_MS]),
    )
    def commit(self, group, parts, retention_ms):
        req = commit_request({}, group=group, retention_ms=retention_ms)
        req.topics = []
        expected = {}
        for topic, p, offset, metadata in parts:
            req.topics.append(_topic(topic, p, offset, metadata))
            valid = topic in TOPICS and 0 <= p < TOPICS[topic]
            error = Errors.NONE if valid else Errors.UNKNOWN_TOPIC_OR_PARTITION
            if valid and len((metadata or "").encode()) > CONFIG.offset_metadata_max_bytes:
                error = Errors.OFFSET_METADATA_TOO_LARGE
            elif valid and offset < 0:
                error = Errors.INVALID_COMMIT_OFFSET_SIZE
            expected[(topic, p)] = error
            if error == Errors.NONE:
                expire = self.now + retention_ms if retention_ms > 0 else -1
                self.model[(group, topic, p)] = OffsetCommitValue(
                    offset, -1, metadata or "", self.now, expire
                )
                if self.check_at is None:
                    self.check_at = self.now + CHECK_MS
        resp = self.shard.handle(req).response
        assert resp.error_code == Errors.NONE
        assert partition_errors(resp) == expected

    @rule(
        group=st.sampled_from(GROUPS),
        topic=st.sampled_from(["foo", "bar"]),
        partitions=st.lists(st.integers(0, 3), max_size=3, unique=True),
    )
    def delete_offsets(self, group, topic, partitions):
        res = delete_offsets(self.shard, {topic: partitions}, group=group)
        if not self._groups_with_offsets() & {group}:
            assert res.response.error_code == Errors.GROUP_ID_NOT_FOUND
            return
        assert set(partition_errors(res.response).values()) <= {Errors.NONE}
        for p in partitions:
            self.model.pop((group, topic, p), None)
        self._nothing_left_to_watch()

    @rule(group=st.sampled_from(GROUPS))
    def delete_group(self, group):
        res = delete_groups(self.shard, group)
        known = group in self._groups_with_offsets()
        expected = Errors.NONE if known else Errors.GROUP_ID_NOT_FOUND
        assert group_errors(res.response) == {group: expected}
        self.model = {k: v for k, v in self.model.items() if k[0] != group}
        self._nothing_left_to_watch()

    def _nothing_left_to_watch(self) -> None:
        """A turn that leaves no offsets (and these groups have no members) disarms the
        check: a shard with nothing to expire keeps no timer."""
        if not self.model:
            self.check_at = None

    # Whole minutes too, so time often lands exactly on a retention boundary.
    @rule(dt=st.one_of(st.integers(0, 3 * CHECK_MS), st.integers(0, 30).map(lambda k: k * 60_000)))
    def advance(self, dt):
        self._tick(self.now + dt)

    @precondition(lambda self: self.check_at is not None)
    @rule()
    def advance_to_the_expiry_check(self):
        self._tick(max(self.now, self.check_at))

    @rule()
    def restart(self):
        """Load the log into a new shard, as a restarted partition does."""
        journal = through_the_codec(self.shard.journal)
        fresh = TracedShard(config=CONFIG, metadata=image(**TOPICS), now_ms=self.now)
        fresh.load(journal)
        self.shard = fresh
        # Loading arms the check once it replays an offset, and disarms it when a tombstone
        # leaves neither offsets nor groups.
        self.check_at = self.now + CHECK_MS if self.model else None

    def _tick(self, now):
        self.now = now
        self.shard.tick(now)
        if self.check_at is not None and self.check_at <= now:
            self.model = {k: v for k, v in self.model.items() if not _expired(v, now)}
            self.check_at = now + CHECK_MS if self.model else None

    def _groups_with_offsets(self) -> set[str]:
        return {g for g, _, _ in self.model}

    # ---------------------------------------------------------------- invariants

    @invariant()
    def the_shard_holds_the_models_offsets(self):
        held = {
            (g, t, p): v
            for g, offsets in self.shard.offsets.offsets.items()
            for (t, p), v in offsets.items()
        }
        assert held == self.model
        assert all(self.shard.offsets.offsets.values()), "no group is kept without offsets"

    @invariant()
    def fetch_answers_the_models_offsets(self):
        for g in GROUPS:
            want = {(t, p): v.offset for (gg, t, p), v in self.model.items() if gg == g}
            assert committed(self.shard, g) == want

    @invariant()
    def replaying_the_log_rebuilds_the_offsets(self):
        fresh = GroupCoordinatorShard(config=CONFIG, metadata=self.shard.image, now_ms=self.now)
        for r in through_the_codec(self.shard.journal):
            fresh.replay(r)
        assert fresh.offsets.offsets == self.shard.offsets.offsets

    @invariant()
    def the_expiry_check_is_armed_as_the_model_says(self):
        assert self.shard.timers.deadline(EXPIRE_TIMER) == self.check_at


def _expired(v: OffsetCommitValue, now: int) -> bool:
    if v.expire_timestamp != -1:
        return now >= v.expire_timestamp
    return now - v.commit_timestamp >= RETENTION_MS


def _topic(topic, p, offset, metadata):
    return m.OffsetCommitRequestTopic(
        topic, [m.OffsetCommitRequestPartition(p, offset, -1, metadata)]
    )


OffsetsModel.TestCase.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
TestOffsetsModel = OffsetsModel.TestCase
