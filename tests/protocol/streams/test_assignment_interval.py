"""KIP-1263's assignment interval for streams groups, as Kafka 4.4 applies it.

Kafka's ``maybeUpdateStreamsTargetAssignment`` (read with ``javap -c -p`` in the 4.4
group-coordinator jar): after the initial delay's check, a bumped group's target is computed
only when ``canComputeNextTargetAssignment(lastTimestamp, interval, now)`` (none computed yet,
an interval of 0, or the interval since the last computation is over). Otherwise the heartbeat
reconciles toward the current target at the assignment epoch and its reply carries
ASSIGNMENT_DELAYED "Assignment delayed due to the configured assignment interval."; the first
heartbeat after the interval computes the target once for every bump in between. The time is
in the target epoch record, so it survives a replay. The initial rebalance delay is off here
(it has its own tests); the clock starts at 10 s, because a time of 0 means "never computed".
"""

from __future__ import annotations

import itertools

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.codec import FORMAT_VERSION, VALUE_VERSION, decode_record, encode_record
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard
from protocol.streams.records import (
    StreamsGroupTargetAssignmentMetadataKey,
    StreamsGroupTargetAssignmentMetadataValue,
)
from protocol.streams.topology import Status
from tests.protocol.streams.driver import StreamsMember
from tests.protocol.streams.test_heartbeat import GID, LoggingShard, image, statuses

START_MS = 10_000
INTERVAL_MS = 1_000
DELAYED = "Assignment delayed due to the configured assignment interval."  # Kafka 4.4's words
CONFIG = CoordinatorConfig(group_streams_initial_rebalance_delay_ms=0)  # the interval: 1 s


def shard_at(config: CoordinatorConfig = CONFIG, now_ms: int = START_MS) -> LoggingShard:
    return LoggingShard(config=config, metadata=image(input=4), now_ms=now_ms)


def target_epochs(records) -> list[StreamsGroupTargetAssignmentMetadataValue]:
    """The target epoch records among ``records``: one per target computation."""
    return [r.value for r in records if type(r.key) is StreamsGroupTargetAssignmentMetadataKey]


def tasks(member: StreamsMember) -> int:
    return sum(len(ps) for ps in member.active.values())


def delayed(resp) -> str | None:
    return statuses(resp).get(Status.ASSIGNMENT_DELAYED)


def test_the_first_join_is_assigned_at_once_and_its_time_is_kept_in_the_target_epoch_record():
    s = shard_at()
    a = StreamsMember(s, "a")
    assert delayed(a.join()) is None
    assert tasks(a) == 4
    group = s.groups[GID]
    assert target_epochs(s.log) == [
        StreamsGroupTargetAssignmentMetadataValue(group.group_epoch, START_MS)]
    assert group.assignment_timestamp == START_MS


def test_two_joins_within_the_interval_are_computed_once_after_it():
    s = shard_at()
    a, b, c = (StreamsMember(s, x) for x in "abc")
    a.join()
    group = s.groups[GID]
    first = group.assignment_epoch
    s.tick(START_MS + 200)
    b.join()
    s.tick(START_MS + 400)
    c.join()
    assert (group.group_epoch, group.assignment_epoch) == (first + 2, first)
    assert len(target_epochs(s.log)) == 1
    s.tick(START_MS + INTERVAL_MS)
    start = len(s.log)
    a.heartbeat()
    assert target_epochs(s.log[start:]) == [
        StreamsGroupTargetAssignmentMetadataValue(first + 2, START_MS + INTERVAL_MS)]
    for _ in range(3):
        for member in (a, b, c):
            member.heartbeat()
    assert len(target_epochs(s.log)) == 2
    assert sorted(p for x in (a, b, c) for p in x.active.get("0", [])) == [0, 1, 2, 3]
    assert group.state == "stable"


def test_a_member_joining_within_the_interval_is_told_assignment_delayed_and_gets_nothing():
    s = shard_at()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    a.join()
    s.tick(START_MS + 500)
    resp = b.join()
    group = s.groups[GID]
    assert delayed(resp) == DELAYED
    assert (resp.member_epoch, tasks(b)) == (group.assignment_epoch, 0)
    held_back = a.heartbeat()  # the members already there keep their tasks, and are told too
    assert delayed(held_back) == DELAYED and tasks(a) == 4


def test_the_first_heartbeat_after_the_interval_computes_the_target_and_is_not_delayed():
    s = shard_at()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    a.join()
    s.tick(START_MS + 500)
    b.join()
    s.tick(START_MS + INTERVAL_MS - 1)
    assert delayed(b.heartbeat()) == DELAYED
    s.tick(START_MS + INTERVAL_MS)
    resp = b.heartbeat()
    group = s.groups[GID]
    assert delayed(resp) is None
    assert group.assignment_epoch == group.group_epoch == resp.member_epoch
    assert group.assignment_timestamp == START_MS + INTERVAL_MS
    assert group.target["b"].active_tasks  # b's tasks wait for a to revoke them


def test_a_bump_right_after_a_computation_waits_a_whole_interval_from_it():
    s = shard_at()
    a, b, c = (StreamsMember(s, x) for x in "abc")
    a.join()
    s.tick(START_MS + 5_000)
    b.join()  # long after a's: computed at once
    assert s.groups[GID].assignment_timestamp == START_MS + 5_000
    s.tick(START_MS + 5_000 + INTERVAL_MS - 1)
    assert delayed(c.join()) == DELAYED


def test_with_interval_zero_every_bump_is_computed_in_its_own_turn():
    s = shard_at(CoordinatorConfig(group_streams_initial_rebalance_delay_ms=0,
                                   group_streams_assignment_interval_ms=0))
    a, b, c = (StreamsMember(s, x) for x in "abc")
    a.join()
    for member, at in ((b, START_MS + 1), (c, START_MS + 2)):
        s.tick(at)
        assert delayed(member.join()) is None
        group = s.groups[GID]
        assert group.assignment_epoch == group.group_epoch
    assert len(target_epochs(s.log)) == 3


def test_the_group_config_overrides_the_brokers_interval():
    s = shard_at(CoordinatorConfig(group_streams_initial_rebalance_delay_ms=0,
                                   group_streams_assignment_interval_ms=0))
    s.set_group_config(GID, GroupConfig(streams_assignment_interval_ms=5_000))
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    a.join()
    s.tick(START_MS + 4_999)
    assert delayed(b.join()) == DELAYED
    s.set_group_config(GID, GroupConfig(streams_assignment_interval_ms=0))
    assert delayed(a.heartbeat()) is None
    group = s.groups[GID]
    assert group.assignment_epoch == group.group_epoch


def test_a_leave_waits_for_a_heartbeat_after_the_interval_and_the_last_leave_writes_time_0():
    s = shard_at()
    a, b, c = (StreamsMember(s, x) for x in "abc")
    a.join()
    s.tick(START_MS + 5_000)
    b.join()
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    group = s.groups[GID]
    epoch = group.assignment_epoch
    s.tick(START_MS + 5_500)
    b.leave()
    assert (group.group_epoch, group.assignment_epoch) == (epoch + 1, epoch)
    assert delayed(a.heartbeat()) == DELAYED and tasks(a) == 2
    s.tick(START_MS + 5_000 + INTERVAL_MS)
    a.heartbeat()
    a.heartbeat()
    assert tasks(a) == 4 and group.assignment_epoch == epoch + 1
    s.tick(START_MS + 6_100)
    start = len(s.log)
    a.leave()
    assert target_epochs(s.log[start:]) == [
        StreamsGroupTargetAssignmentMetadataValue(epoch + 2, 0)]
    s.tick(START_MS + 6_200)  # within the last interval, but the group was left empty
    assert delayed(c.join()) is None and tasks(c) == 4


def test_a_replay_of_the_log_keeps_the_time_and_holds_the_next_target_back_alike():
    s = shard_at()
    StreamsMember(s, "a").join()
    fresh = GroupCoordinatorShard(config=s.config, metadata=s.image, now_ms=START_MS + 300)
    for r in s.log:
        fresh.replay(decode_record(encode_record(r)))
    assert fresh.groups[GID].assignment_timestamp == START_MS
    assert fresh.groups == s.groups
    resp = StreamsMember(fresh, "b").join()
    assert delayed(resp) == DELAYED  # still inside a's interval
    assert fresh.groups[GID].assignment_epoch == s.groups[GID].assignment_epoch


def test_a_target_epoch_record_written_before_the_time_loads_as_never_computed():
    key = StreamsGroupTargetAssignmentMetadataKey(GID)
    new = encode_record(Record(key, StreamsGroupTargetAssignmentMetadataValue(7, 123)))
    key_part = msgpack.Unpacker(raw=False)
    key_part.feed(new[1:])
    key_fields = next(key_part)
    old = bytes([FORMAT_VERSION]) + msgpack.packb(key_fields) + msgpack.packb(
        msgpack.packb([VALUE_VERSION, 7]))
    assert decode_record(old).value == StreamsGroupTargetAssignmentMetadataValue(7, 0)


# ------------------------------------------------------------------------ the property

EVENTS = st.lists(
    st.tuples(st.integers(0, 700), st.sampled_from(["join", "heartbeat", "leave"]),
              st.integers(0, 2)),
    min_size=1, max_size=30,
)


@settings(max_examples=40, deadline=None)
@given(EVENTS, st.sampled_from([0, 300, 1_000]))
def test_targets_are_computed_at_most_once_per_interval_and_a_held_back_one_is_told(
        events, interval):
    """Whatever the joins, heartbeats and leaves: two computations for a group with members
    are an interval apart at least; after a heartbeat the target is current, or the interval
    holds it back and the reply says so (ASSIGNMENT_DELAYED), never otherwise."""
    config = CoordinatorConfig(group_streams_initial_rebalance_delay_ms=0,
                               group_streams_assignment_interval_ms=interval)
    s = shard_at(config)
    members = [StreamsMember(s, f"m{i}") for i in range(3)]
    now, computed = START_MS, []
    for gap, what, who in events:
        now += gap
        s.tick(now)
        member = members[who]
        start = len(s.log)
        if what == "leave":
            if member.epoch <= 0:
                continue
            member.leave()
            member.epoch, member.active, member.standby, member.warmup = 0, {}, {}, {}
        else:
            resp = member.join() if what == "join" or member.epoch <= 0 else member.heartbeat()
            group = s.groups[GID]
            assert group.assignment_epoch <= group.group_epoch
            held_back = group.assignment_epoch < group.group_epoch
            assert delayed(resp) == (DELAYED if held_back else None)
            if held_back:
                assert interval and now < group.assignment_timestamp + interval
        # A group left empty gets its target with no time (0): the next one is not held back.
        computed += [v.assignment_timestamp or None for v in target_epochs(s.log[start:])]
    for earlier, later in itertools.pairwise(computed):
        if earlier is not None and later is not None:
            assert later - earlier >= interval
