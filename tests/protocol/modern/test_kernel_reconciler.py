"""The kernel's reconciler and group replay behave the same whatever a group type's units:
the same story told with a consumer's partitions and a Connect worker's tasks."""

from __future__ import annotations

import pytest

from protocol import partitions as pm
from protocol.connect import units as u
from protocol.connect.group import ConnectGroup
from protocol.connect.member import ConnectWorkerMember
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.member import ConsumerGroupMember
from protocol.modern.member import STABLE, UNRELEASED, UNREVOKED
from protocol.modern.reconciler import reconcile
from protocol.records import Record

# Per type: the member class, and three distinct units of its kind.
TYPES = {
    "consumer": (ConsumerGroupMember, [("t", 0), ("t", 1), ("t", 2)]),
    "connect": (ConnectWorkerMember, [("c", u.CONNECTOR), ("c", 0), ("c", 1)]),
}


def holding(kind: str, member_id: str, units, epoch: int = 1):
    cls, _ = TYPES[kind]
    return cls(member_id).moved_units(STABLE, frozenset(units), frozenset(), epoch, 0)


@pytest.mark.parametrize("kind", TYPES)
def test_a_member_gives_units_up_before_it_moves_to_the_new_epoch(kind):
    _, (x, y, z) = TYPES[kind]
    member = holding(kind, "A", {x, y})
    step = reconcile(member, 2, {x, z}, {x, y}, lambda unit: None)
    assert step.current.state == UNREVOKED and step.member_epoch == 1
    assert step.assigned_units == {x} and step.pending_units == {y}
    # Still reporting y: nothing moves. Reporting it gone: the new epoch, and z.
    assert reconcile(step, 2, {x, z}, {x, y}, lambda unit: None) is step
    done = reconcile(step, 2, {x, z}, {x}, lambda unit: None)
    assert done.current.state == STABLE and done.member_epoch == 2
    assert done.previous_member_epoch == 1
    assert done.assigned_units == {x, z} and done.pending_units == set()


@pytest.mark.parametrize("kind", TYPES)
def test_a_member_waits_for_a_unit_another_member_still_holds(kind):
    _, (x, y, _) = TYPES[kind]
    member = holding(kind, "A", {x})
    step = reconcile(member, 2, {x, y}, {x}, lambda unit: "B" if unit == y else None)
    assert step.current.state == UNRELEASED and step.member_epoch == 2
    assert step.assigned_units == {x}
    released = reconcile(step, 2, {x, y}, {x}, lambda unit: None)
    assert released.current.state == STABLE and released.assigned_units == {x, y}


@pytest.mark.parametrize("kind", TYPES)
def test_a_heartbeat_that_does_not_say_what_it_holds_never_acknowledges_a_revocation(kind):
    _, (x, y, _) = TYPES[kind]
    step = reconcile(holding(kind, "A", {x, y}), 2, {x}, {x, y}, lambda unit: None)
    assert reconcile(step, 2, {x}, None, lambda unit: None) is step


@pytest.mark.parametrize("group_cls", [ConsumerGroup, ConnectGroup])
def test_replay_keeps_one_owner_per_unit_and_tombstones_delete_every_record(group_cls):
    kind = group_cls.group_type
    _, (x, y, _) = TYPES[kind]
    group = group_cls("g")
    kinds = group.RECORDS
    for mid, units in (("A", {x}), ("B", {y})):
        member = holding(kind, mid, units)
        group.replay(_record(kinds.member, mid, member.metadata))
        group.replay(_record(kinds.current, mid, member.current))
    assert group.owners == {x: "A", y: "B"}
    for record in group.tombstones()[:-1]:  # the last (the group's own) drops the group
        group.replay(record)
    assert group.members == {} and group.owners == {} and group.target == {}
    assert type(group.tombstones()[-1].key) is kinds.group


def _record(key_type, member_id, value):
    return Record(key_type("g", member_id), value)


def test_a_consumer_members_units_are_its_partition_maps():
    member = holding("consumer", "A", {("t", 1), ("t", 0)})
    assert member.assigned_partitions == pm.normalize({"t": [0, 1]})
