"""KIP-1263's assignment interval for consumer groups, as Kafka 4.4 applies it.

Kafka's ``GroupMetadataManager.maybeUpdateTargetAssignment`` computes a target only when
``canComputeNextTargetAssignment(lastTimestamp, interval, now)``: no target computed yet
(timestamp 0), an interval of 0, or the interval since the last computation is over. A bump
within it leaves the target and the assignment epoch as they are, and the first heartbeat of
the group after it computes the target once for every bump in between. The time of the last
computation is in the target epoch record, so it survives a reload. The clock here is the
shard's (``tick``); it starts at 10 s, because a timestamp of 0 means "never computed".
"""

from __future__ import annotations

import itertools

import msgpack
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import messages as m
from protocol.codec import FORMAT_VERSION, VALUE_VERSION, decode_record, encode_record
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.consumer.records import (
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import Member, TracedShard, image

START_MS = 10_000
INTERVAL_MS = 1_000
CONFIG = CoordinatorConfig(group_consumer_assignment_interval_ms=INTERVAL_MS)


def shard_at(now_ms: int = START_MS, config: CoordinatorConfig = CONFIG) -> TracedShard:
    return TracedShard(config=config, metadata=image(foo=4), now_ms=now_ms)


def target_epochs(records: list[Record]) -> list[ConsumerGroupTargetAssignmentMetadataValue]:
    """The target epoch records among ``records``: one per target computation."""
    return [r.value for r in records
            if isinstance(r.key, ConsumerGroupTargetAssignmentMetadataKey)]


def held(member: Member) -> int:
    return sum(len(ps) for ps in member.owned.values())


def test_the_first_join_is_assigned_at_once_and_the_time_is_kept_in_the_target_epoch_record():
    shard = shard_at()
    a = Member(shard, "A")
    a.join()
    assert held(a) == 4 and a.epoch == 1
    assert target_epochs(shard.journal) == [
        ConsumerGroupTargetAssignmentMetadataValue(1, START_MS)]
    assert shard.groups["g"].assignment_timestamp == START_MS


def test_a_join_inside_the_interval_gets_the_current_targets_epoch_and_nothing():
    shard = shard_at()
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    shard.tick(START_MS + 500)
    b.join()
    group = shard.groups["g"]
    assert (group.group_epoch, group.assignment_epoch) == (2, 1)
    assert b.epoch == 1 and held(b) == 0  # Kafka: the new member joins at the target's epoch
    shard.tick(START_MS + INTERVAL_MS - 1)
    a.heartbeat()
    assert a.epoch == 1 and held(a) == 4  # A reconciles toward the target it already has
    assert group.assignment_epoch == 1


def test_the_first_heartbeat_after_the_interval_computes_the_target_once_for_every_bump():
    shard = shard_at()
    a, b, c = Member(shard, "A"), Member(shard, "B"), Member(shard, "C")
    a.join()
    shard.tick(START_MS + 200)
    b.join()
    shard.tick(START_MS + 400)
    c.join()
    assert len(target_epochs(shard.journal)) == 1
    shard.tick(START_MS + INTERVAL_MS)
    a.heartbeat()  # any member's heartbeat once the interval is over
    computed = target_epochs(shard.journal)
    assert computed[1:] == [ConsumerGroupTargetAssignmentMetadataValue(3, START_MS + INTERVAL_MS)]
    group = shard.groups["g"]
    assert group.assignment_epoch == group.group_epoch == 3
    assert sorted(len(group.target_of(mid)["foo-id"]) for mid in "ABC") == [1, 1, 2]
    for _ in range(4):
        for member in (a, b, c):
            member.heartbeat()
    assert sorted(held(member) for member in (a, b, c)) == [1, 1, 2]
    assert group.state == "stable"


def test_a_bump_after_a_computation_waits_for_the_interval_from_that_computation():
    shard = shard_at()
    a, b, c = Member(shard, "A"), Member(shard, "B"), Member(shard, "C")
    a.join()
    shard.tick(START_MS + 5_000)  # long after: B's join computes at once
    b.join()
    assert shard.groups["g"].assignment_epoch == 2
    shard.tick(START_MS + 5_000 + INTERVAL_MS - 1)
    c.join()
    assert shard.groups["g"].assignment_epoch == 2
    shard.tick(START_MS + 5_000 + INTERVAL_MS)
    b.heartbeat()
    assert shard.groups["g"].assignment_epoch == 3


def test_with_interval_zero_every_bump_is_computed_in_its_own_turn():
    shard = shard_at(config=CoordinatorConfig(group_consumer_assignment_interval_ms=0))
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    shard.tick(START_MS + 1)
    b.join()
    group = shard.groups["g"]
    assert group.assignment_epoch == group.group_epoch == 2
    assert b.epoch == 2


def test_the_group_config_overrides_the_brokers_interval():
    shard = shard_at(config=CoordinatorConfig(group_consumer_assignment_interval_ms=0))
    shard.set_group_config("g", GroupConfig(consumer_assignment_interval_ms=5_000))
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    shard.tick(START_MS + 4_999)
    b.join()
    assert shard.groups["g"].assignment_epoch == 1
    shard.set_group_config("g", GroupConfig(consumer_assignment_interval_ms=0))
    a.heartbeat()
    assert shard.groups["g"].assignment_epoch == 2


def test_a_group_config_of_zero_turns_the_brokers_interval_off():
    shard = shard_at()
    shard.set_group_config("g", GroupConfig(consumer_assignment_interval_ms=0))
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    shard.tick(START_MS + 1)
    b.join()
    assert shard.groups["g"].assignment_epoch == 2


def test_the_last_member_leaving_installs_an_empty_target_with_time_0_so_a_join_is_assigned():
    shard = shard_at()
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    shard.tick(START_MS + 100)
    a.leave()
    assert target_epochs(shard.journal)[-1] == ConsumerGroupTargetAssignmentMetadataValue(2, 0)
    shard.tick(START_MS + 200)
    b.join()  # within A's interval, but the group was empty: Kafka's fence wrote timestamp 0
    assert held(b) == 4 and b.epoch == 3


def test_a_member_leaving_inside_the_interval_leaves_its_partitions_for_a_later_heartbeat():
    shard = shard_at()
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    shard.tick(START_MS + 2_000)
    b.join()
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    assert held(a) == held(b) == 2
    shard.tick(START_MS + 2_500)
    b.leave()
    group = shard.groups["g"]
    assert (group.group_epoch, group.assignment_epoch) == (3, 2)
    a.heartbeat()
    assert held(a) == 2
    shard.tick(START_MS + 2_000 + INTERVAL_MS)
    a.heartbeat()
    a.heartbeat()
    assert held(a) == 4 and group.assignment_epoch == 3


def test_the_last_assignment_time_survives_a_reload():
    shard = shard_at()
    Member(shard, "A").join()
    reloaded = TracedShard(config=CONFIG, metadata=image(foo=4), now_ms=START_MS + 300)
    reloaded.load([decode_record(encode_record(r)) for r in shard.journal])
    assert reloaded.groups["g"].assignment_timestamp == START_MS
    Member(reloaded, "B").join()
    assert reloaded.groups["g"].assignment_epoch == 1  # still inside A's interval


def test_a_target_epoch_record_written_before_the_timestamp_loads_as_never_computed():
    key = ConsumerGroupTargetAssignmentMetadataKey("g")
    new = encode_record(Record(key, ConsumerGroupTargetAssignmentMetadataValue(7, 123)))
    key_part = msgpack.Unpacker(raw=False)
    key_part.feed(new[1:])
    key_fields = next(key_part)
    old = bytes([FORMAT_VERSION]) + msgpack.packb(key_fields) + msgpack.packb(
        msgpack.packb([VALUE_VERSION, 7]))
    assert decode_record(old).value == ConsumerGroupTargetAssignmentMetadataValue(7, 0)


# ------------------------------------------------------------------------ the property

EVENTS = st.lists(
    st.tuples(st.integers(0, 700), st.sampled_from(["join", "heartbeat", "leave"]),
              st.integers(0, 3)),
    min_size=1, max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(EVENTS, st.sampled_from([0, 300, 1_000]))
def test_targets_are_computed_at_most_once_per_interval_and_never_left_behind(events, interval):
    """Whatever the joins, heartbeats and leaves: two computations of a group with members
    are an interval apart at least; and after any heartbeat the target is current unless the
    interval since the last computation is not over yet."""
    config = CoordinatorConfig(group_consumer_assignment_interval_ms=interval)
    shard = GroupCoordinatorShard(config=config, metadata=image(foo=4), now_ms=START_MS)
    members = [Member(shard, f"M{i}") for i in range(4)]
    now, computed = START_MS, []
    for gap, what, who in events:
        now += gap
        shard.tick(now)
        member = members[who]
        if what == "join" or (what == "heartbeat" and member.epoch == 0):
            res = shard.handle(member.join_request())
        elif what == "heartbeat":
            res = shard.handle(member.heartbeat_request())
        elif member.epoch > 0:
            res = shard.handle(m.ConsumerGroupHeartbeatRequest(
                group_id="g", member_id=member.member_id, member_epoch=-1))
        else:
            continue
        member.accept(res.response)
        if what == "leave":
            member.epoch, member.owned = 0, {}
        # A group left empty gets its target with no time (0): the next one is not held back.
        computed += [v.assignment_timestamp or None for v in target_epochs(res.records)]
        group = shard.groups.get("g")
        if group is None or not group.members or what == "leave":
            continue
        assert group.assignment_epoch <= group.group_epoch
        if group.assignment_epoch < group.group_epoch:
            assert interval and now < group.assignment_timestamp + interval
    for earlier, later in itertools.pairwise(computed):
        if earlier is not None and later is not None:
            assert later - earlier >= interval
