"""Hypothesis drives a streams group with random joins, heartbeats (some reporting stale owned
tasks), leaves, static leaves, session expiries and topic growth; after every step invariant 8
holds (no task active on two members, no standby beside its own active copy), member epochs
never exceed the group epoch, and replaying the log rebuilds the same groups; while the
initial rebalance delay runs every member waits at the assignment epoch with no tasks; once
it settles, every task is active on exactly one member."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from protocol.config import CoordinatorConfig, GroupConfig
from protocol.shard import GroupCoordinatorShard
from protocol.streams import messages as sm
from protocol.streams.sessions import StreamsInitialDelay
from tests.protocol.streams.driver import StreamsMember, topology
from tests.protocol.streams.test_heartbeat import GID, LoggingShard, image

IDS = ["a", "b", "c", "d"]


class StreamsGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.shard = LoggingShard(config=CoordinatorConfig(),
                                  metadata=image(input=4, **{"app-store-changelog": 4}))
        self.shard.set_group_config(GID, GroupConfig(streams_num_standby_replicas=1))
        self.members = {mid: StreamsMember(self.shard, mid, topology=topology(stateful=True),
                                           instance_id=f"i-{mid}" if mid in "ab" else None)
                        for mid in IDS}
        self.joined: set[str] = set()

    @rule(mid=st.sampled_from(IDS))
    def join(self, mid):
        if self.members[mid].join().error_code == 0:
            self.joined.add(mid)

    @rule(mid=st.sampled_from(IDS), stale=st.booleans())
    def heartbeat(self, mid, stale):
        if mid not in self.joined:
            return
        mm = self.members[mid]
        group = self.shard.groups.get(GID)
        held = group.members.get(mid) if group is not None else None
        if stale and held is not None:  # still holding what it is asked to revoke: it waits
            owned = held.tasks | held.pending
            a, st_, w = owned.maps()
            mm.heartbeat(active_tasks=sm.task_ids(a), standby_tasks=sm.task_ids(st_),
                         warmup_tasks=sm.task_ids(w))
        else:
            resp = mm.heartbeat()
            if resp.error_code != 0:
                self.joined.discard(mid)

    @rule(mid=st.sampled_from(IDS), static=st.booleans())
    def leave(self, mid, static):
        if mid in self.joined:
            mm = self.members[mid]
            mm.leave(-2 if static and mm.instance_id else -1)
            self.joined.discard(mid)

    @rule(ms=st.integers(0, 50_000))
    def tick(self, ms):
        self.shard.tick(self.shard.now_ms + ms)
        group = self.shard.groups.get(GID)
        self.joined &= set(group.members) if group is not None else set()

    @rule(more=st.sampled_from([1, 2]))
    def grow(self, more):
        """Topics only grow (Kafka never shrinks one); the changelog is grown with its input."""
        parts = self.shard.image.topic_by_name("input").num_partitions + more
        self.shard.update_metadata(image(input=parts, **{"app-store-changelog": parts}))

    @rule()
    def settle(self):
        """Once nothing changes, a few rounds of heartbeats give every task to one member."""
        if not self.joined:
            return
        self.shard.tick(self.shard.now_ms + 3_000)  # past any initial delay
        for _ in range(6):
            for mid in sorted(self.joined):
                self.members[mid].heartbeat()
        group = self.shard.groups[GID]
        if set(group.members) != self.joined or not group.configured.ready:
            return  # a static member away, or the topology not ready: nothing to check
        tasks = {("0", p) for p in range(group.configured.tasks["0"])}
        held = [t for mm in group.members.values() for t in mm.tasks.active]
        assert sorted(held) == sorted(tasks), (held, tasks)
        assert group.state == "stable"

    @invariant()
    def no_task_active_twice_and_no_standby_beside_its_active(self):
        group = self.shard.groups.get(GID)
        if group is None:
            return
        seen: dict = {}
        for mid, mm in group.members.items():
            held = mm.tasks.active | mm.pending.active
            for t in held:
                assert t not in seen, f"{t} active on {seen[t]} and {mid}"
                seen[t] = mid
            assert not (mm.tasks.active & (mm.tasks.standby | mm.tasks.warmup)), mid
            assert mm.member_epoch <= group.group_epoch

    @invariant()
    def while_the_initial_delay_runs_members_wait_at_the_assignment_epoch_with_nothing(self):
        group = self.shard.groups.get(GID)
        if group is None or StreamsInitialDelay(GID) not in self.shard.timers:
            return
        for mid, mm in group.members.items():
            assert not mm.tasks.all() and not mm.pending.all(), mid
            assert mm.member_epoch <= max(1, group.assignment_epoch), mid
        assert not group.members or group.group_epoch > group.assignment_epoch

    @invariant()
    def the_log_rebuilds_the_same_groups(self):
        fresh = GroupCoordinatorShard(config=self.shard.config, metadata=self.shard.image,
                                      now_ms=self.shard.now_ms)
        for r in self.shard.log:
            fresh.replay(r)
        assert fresh.groups == self.shard.groups


StreamsGroupMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=40,
                                                 deadline=None)
test_streams_group_state_machine = StreamsGroupMachine.TestCase
