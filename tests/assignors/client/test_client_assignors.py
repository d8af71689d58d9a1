"""Client-side assignor interfaces, the version-range rule and the server registry."""

from __future__ import annotations

import pytest

from assignors import SERVER_ASSIGNORS, RangeAssignor, UniformAssignor, server_assignor
from assignors.client.interfaces import (
    Assignment,
    AssignorMetadata,
    ConnectAssignor,
    ConnectGroup,
    ConnectGroupMember,
    ConnectMemberAssignment,
    PartitionAssignor,
    PartitionGroup,
    PartitionGroupMember,
    PartitionMemberAssignment,
    TopicMetadata,
    common_version_range,
    select_by_version_range,
)

# -- version ranges ------------------------------------------------------------------------


def test_member_whose_range_covers_all_others_is_selected():
    assert select_by_version_range({"A": (1, 5), "B": (3, 4), "C": (2, 4)}) == "A"


def test_among_covering_members_the_smallest_member_id_is_selected():
    assert select_by_version_range({"Z": (1, 5), "M": (1, 5), "B": (2, 3)}) == "M"


def test_without_a_covering_member_the_widest_range_is_selected():
    assert select_by_version_range({"A": (1, 3), "B": (2, 5), "C": (3, 3)}) == "B"


def test_equally_wide_ranges_go_to_the_smallest_member_id():
    assert select_by_version_range({"B": (1, 3), "A": (2, 4)}) == "A"


def test_ranges_without_a_common_version_select_nobody():
    assert select_by_version_range({"A": (1, 5), "B": (1, 2), "C": (4, 5)}) is None
    assert select_by_version_range({}) is None


def test_a_single_member_is_selected():
    assert select_by_version_range({"A": (0, 0)}) == "A"


def test_common_version_range_is_the_intersection():
    assert common_version_range({"A": (1, 5), "B": (3, 4), "C": (2, 4)}) == (3, 4)
    assert common_version_range({"A": (1, 2), "B": (3, 4)}) is None


# -- interfaces ----------------------------------------------------------------------------


def test_assignor_interfaces_cannot_be_instantiated_without_an_implementation():
    with pytest.raises(TypeError):
        PartitionAssignor()  # type: ignore[abstract]
    with pytest.raises(TypeError):
        ConnectAssignor()  # type: ignore[abstract]


class RoundRobin(PartitionAssignor):
    def __init__(self) -> None:
        self.received: list[PartitionMemberAssignment] = []

    def name(self) -> str:
        return "roundrobin"

    def minimum_version(self) -> int:
        return 0

    def maximum_version(self) -> int:
        return 1

    def metadata(self) -> AssignorMetadata:
        return AssignorMetadata(reason=0, version=1)

    def assign(self, group: PartitionGroup) -> Assignment:
        members = sorted(m.member_id for m in group.members)
        parts = sorted((t.topic_id, p) for t in group.topics for p in range(t.num_partitions))
        return Assignment(
            error=0,
            members=tuple(
                PartitionMemberAssignment(
                    member_id=m,
                    version=1,
                    partitions=frozenset(tp for i, tp in enumerate(parts) if i % len(members) == k),
                )
                for k, m in enumerate(members)
            ),
        )

    def on_assignment(self, assignment) -> None:
        self.received.append(assignment)


def test_a_partition_assignor_assigns_topic_partitions_from_the_group_state():
    group = PartitionGroup(
        members=(
            PartitionGroupMember("b", subscribed_topic_ids=frozenset({"t"})),
            PartitionGroupMember("a", subscribed_topic_ids=frozenset({"t"})),
        ),
        topics=(TopicMetadata("t", 3),),
    )
    result = RoundRobin().assign(group)
    assert {m.member_id: m.partitions for m in result.members} == {
        "a": frozenset({("t", 0), ("t", 2)}),
        "b": frozenset({("t", 1)}),
    }


def test_connect_shapes_carry_connectors_and_tasks():
    worker = ConnectGroupMember(
        "w1", owned_connectors=frozenset({"c"}), owned_tasks=frozenset({("c", 0)})
    )
    group = ConnectGroup(members=(worker,), connectors={"c": 2})
    assignment = ConnectMemberAssignment(
        "w1", connectors=frozenset({"c"}), tasks=frozenset({("c", 0), ("c", 1)})
    )
    assert group.members[0].owned_tasks == {("c", 0)}
    assert len(assignment.tasks) == group.connectors["c"]


# -- server registry -----------------------------------------------------------------------


def test_registry_holds_uniform_and_range():
    assert isinstance(server_assignor("uniform"), UniformAssignor)
    assert isinstance(server_assignor("range"), RangeAssignor)
    assert set(SERVER_ASSIGNORS) == {"uniform", "range"}


def test_unknown_server_assignor_name_raises_key_error():
    with pytest.raises(KeyError):
        server_assignor("sticky")
