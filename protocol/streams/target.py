"""Step 2 of a streams group's turn: its epoch bump and its target (``modern.epochs``).

The group record a bump writes carries what the bump was computed at: the topics' metadata
hash, the topology epoch found ready (-1: none) and the assignment configs
(``num.standby.replicas``). The target is the sticky task assignor's (``assignors.streams``)
over the configured topology, each member's current assignment (the tasks it holds now, not
those pending revocation nor its previous target: Kafka 4.4's ``TargetAssignmentBuilder`` hands
the assignor ``member.assignedTasks()``, so a task whose new owner has not taken it yet counts as
nobody's, and a restarted process's state on disk can win it back) and its reported task
offsets, with the assignment configs the group record holds (those of the last bump: Kafka's
timer computes with ``lastAssignmentConfigs``, its heartbeat with the current ones, which a
change has just bumped into the record); every member's target is empty while the topology is
not ready.

While the initial rebalance delay of a group that was empty runs (its timer is scheduled),
no target is computed and nothing of one is written, as in Kafka 4.4's
``maybeUpdateStreamsTargetAssignment``: the group epoch moves on, the assignment epoch stays,
and the delay's timer computes the target at the group epoch then
(``StreamsGroupRules.on_timer``).

KIP-1263's assignment interval (Kafka 4.4's ``maybeUpdateStreamsTargetAssignment`` after the
initial delay's check, ``canComputeNextTargetAssignment``): a target is computed at most once
per ``streams.assignment.interval.ms`` (over ``group.streams.assignment.interval.ms``), whose
last time the target epoch record keeps (``assignment_timestamp``). A bump within it leaves the
target and the assignment epoch as they are (``EpochTurn.may_compute``): each heartbeat then
reconciles toward the current target, is told ASSIGNMENT_DELAYED, and the first heartbeat
after the interval computes the target (no timer, as Kafka and the consumer groups' rule).
"""

from __future__ import annotations

from typing import Any

from assignors.streams import AssignmentMemberSpec, GroupSpec, StickyTaskAssignor, TaskId
from protocol.modern.epochs import EpochTurn, Targets
from protocol.streams.group import GROUP_TYPE, StreamsGroup
from protocol.streams.records import (
    StreamsGroupMetadataValue,
    StreamsGroupTargetAssignmentMemberValue,
)
from protocol.streams.sessions import setting
from protocol.streams.topology import metadata_hash


class StreamsEpochs(EpochTurn):
    """The streams groups a turn changed, and what settling them writes."""

    group_type = GROUP_TYPE
    rules: Any  # the StreamsGroupRules: the configured topology and the assignment configs

    def group_value(self, group: StreamsGroup, epoch: int) -> StreamsGroupMetadataValue:
        configured = self.rules.configured(group)
        validated = configured.topology_epoch if configured is not None and configured.ready \
            else -1
        return StreamsGroupMetadataValue(
            epoch, metadata_hash(group.topology, self.ctx.image), validated,
            self.rules.assignment_configs(group.group_id))

    def client_side(self, group: StreamsGroup) -> bool:
        return False

    def interval_ms(self, group_id: str) -> int:
        """KIP-1263's ``streams.assignment.interval.ms`` (Kafka 4.4's
        ``streamsGroupAssignmentIntervalMs``: the group config over the broker's)."""
        return setting(self.ctx, group_id, "assignment_interval_ms")

    def held_back(self, group: StreamsGroup) -> bool:
        """Whether the interval holds back the target of ``group``, whose epoch is ahead of
        its assignment epoch (Kafka answers a heartbeat then ASSIGNMENT_DELAYED)."""
        return group.group_epoch > group.assignment_epoch and not self.may_compute(group)

    def compute(self, group: StreamsGroup) -> None:
        """Install a target at the group epoch, unless the initial rebalance delay runs and
        the group has members. A group its last member left gets its (empty) target at the
        leave's epoch even then: Kafka's fence of a last member writes the target epoch."""
        if not group.members or not self.rules.delaying(group.group_id):
            super().compute(group)

    def compute_targets(self, group: StreamsGroup) -> Targets:
        empty = StreamsGroupTargetAssignmentMemberValue()
        configured = self.rules.configured(group)
        if configured is None or not configured.ready or not group.members:
            return {mid: empty for mid in sorted(group.members)}
        specs = {}
        for mid, mm in sorted(group.members.items()):
            held = mm.current  # what it holds now, not what its target says (module docstring)
            offsets = group.task_offsets.get(mid, ([], []))
            specs[mid] = AssignmentMemberSpec(
                instance_id=mm.instance_id, rack_id=mm.rack_id,
                active_tasks=_sets(held.active_tasks), standby_tasks=_sets(held.standby_tasks),
                warmup_tasks=_sets(held.warmup_tasks), process_id=mm.process_id,
                client_tags={kv.key: kv.value for kv in mm.metadata.client_tags},
                task_offsets={TaskId(o.subtopology_id, o.partition): o.offset
                              for o in offsets[0]},
                task_end_offsets={TaskId(o.subtopology_id, o.partition): o.offset
                                  for o in offsets[1]})
        configs = {kv.key: kv.value for kv in group.last_assignment_configs}
        result = StickyTaskAssignor().assign(GroupSpec(specs, configs), configured)
        out = {}
        for mid in specs:
            a = result.members.get(mid)
            out[mid] = empty if a is None else StreamsGroupTargetAssignmentMemberValue(
                _maps(a.active_tasks), _maps(a.standby_tasks), _maps(a.warmup_tasks))
        return out


def _sets(tasks: dict) -> dict[str, frozenset[int]]:
    return {s: frozenset(ps) for s, ps in tasks.items()}


def _maps(tasks) -> dict[str, tuple[int, ...]]:
    return {s: tuple(sorted(ps)) for s, ps in sorted(tasks.items()) if ps}
