"""The sticky streams task assignor against the scenarios of Kafka's StickyTaskAssignorTest:
same inputs, and the same outcomes wherever Kafka's test asserts one."""

from __future__ import annotations

import pytest

from assignors.streams import (
    ASSIGNORS,
    GroupSpec,
    StickyTaskAssignor,
    TaskAssignorError,
    TaskId,
)
from tests.assignors.streams.streams_checks import (
    S,
    Topology,
    actives,
    all_tasks,
    assign,
    check_assignment,
    member,
    n_active,
    n_standby,
    parts,
    standbys,
    tasks_of,
    topology,
)

S0, S1, S2, S3 = (f"{S}{i}" for i in range(4))


def test_the_assignor_is_registered_as_sticky() -> None:
    assert StickyTaskAssignor.name == "sticky"
    assert isinstance(ASSIGNORS["sticky"], StickyTaskAssignor)
    assert list(ASSIGNORS) == ["sticky"]


def test_one_active_task_per_process_when_tasks_equal_processes() -> None:
    members = {f"member{i}": member(f"process{i}") for i in (1, 2, 3)}
    topo = topology(3, False)
    result = assign(members, topo)
    check_assignment(members, topo, result)
    assert [n_active(result, m) for m in members] == [1, 1, 1]


@pytest.mark.parametrize("stateful,num_standby", [(False, None), (True, 1)])
def test_two_subtopologies_spread_one_task_per_member_over_three_processes(
    stateful: bool, num_standby: int | None
) -> None:
    members = {f"member{p}_{m}": member(f"process{p}") for p in (1, 2, 3) for m in (1, 2)}
    topo = topology(3, stateful, f"{S}1", f"{S}2")
    result = assign(members, topo, num_standby)
    check_assignment(members, topo, result, num_standby or 0)
    assert all(n_active(result, m) == 1 for m in members)
    assert actives(result) == all_tasks(topo)


def test_active_tasks_do_not_migrate_to_another_process() -> None:
    members = {"member1": member("process1", [0]), "member2": member("process2", [1])}
    result = assign(members, topology(3, False))
    assert 0 in parts(result, "member1") and 1 in parts(result, "member2")
    assert len(parts(result, "member1")) + len(parts(result, "member2")) == 3

    # Flipped: member3 (on process1) owns 2 now; member1 is gone.
    members = {"member2": member("process2", [1]), "member3": member("process1", [2])}
    result = assign(members, topology(3, False))
    assert 1 in parts(result, "member2") and 2 in parts(result, "member3")
    assert len(parts(result, "member2")) + len(parts(result, "member3")) == 3


def test_a_new_process_takes_one_task_without_reshuffling_the_rest() -> None:
    members = {"member1": member("process1", [0, 2]), "member2": member("process2", [1]),
               "member3": member("process3")}
    result = assign(members, topology(3, False))
    assert parts(result, "member1") & {0, 2}
    assert 1 in parts(result, "member2")
    assert parts(result, "member3") & {0, 2}
    assert sum(len(parts(result, m)) for m in members) == 3


def test_tasks_follow_capacity_one_per_member() -> None:
    members = {"member1": member("process1"), "member2_1": member("process2"),
               "member2_2": member("process2")}
    result = assign(members, topology(3, False))
    assert [n_active(result, m) for m in members] == [1, 1, 1]


def test_unequal_subtopology_sizes_split_four_and_three() -> None:
    current = {f"{S}1": {0, 1, 2, 3, 4, 5}, f"{S}2": {0}}
    members = {"member1": member("process1", current), "member2": member("process2")}
    topo = Topology({f"{S}1": (6, False), f"{S}2": (1, False)})
    result = assign(members, topo)
    check_assignment(members, topo, result)
    assert n_active(result, "member1") == 4
    assert n_active(result, "member2") == 3


def test_stickiness_holds_when_there_are_more_members_than_tasks() -> None:
    members = {"member1": member("process1", [0]), "member2": member("process2", [2]),
               "member3": member("process3", [1]), "member4": member("process4"),
               "member5": member("process5")}
    result = assign(members, topology(3, False))
    got = {m: parts(result, m) for m in members}
    assert got == {"member1": {0}, "member2": {2}, "member3": {1},
                   "member4": set(), "member5": set()}

    members = {"member1": member("process1"), "member2": member("process2", [0]),
               "member3": member("process3"), "member4": member("process4", [2]),
               "member5": member("process5", [1])}
    result = assign(members, topology(3, False))
    got = {m: parts(result, m) for m in members}
    assert got == {"member1": set(), "member2": {0}, "member3": set(),
                   "member4": {2}, "member5": {1}}


def test_actives_go_to_the_members_holding_them_as_standby() -> None:
    members = {"member1": member("process1", standby=[2]),
               "member2": member("process2", standby=[1]),
               "member3": member("process3", standby=[0])}
    result = assign(members, topology(3, False))
    assert {m: parts(result, m) for m in members} == {
        "member1": {2}, "member2": {1}, "member3": {0}}


def test_previous_standbys_become_actives_and_the_standbys_swap() -> None:
    members = {"member1": member("process1", standby=[0]),
               "member2": member("process2", standby=[1])}
    result = assign(members, topology(2, True), 1)
    assert (parts(result, "member1"), parts(result, "member1", "standby")) == ({0}, {1})
    assert (parts(result, "member2"), parts(result, "member2", "standby")) == ({1}, {0})


def test_a_previous_standby_holder_with_spare_capacity_takes_the_task() -> None:
    members = {"member1": member("process1", [0], [1]),
               "member2_1": member("process2", [2], [1]),
               "member2_2": member("process2")}
    result = assign(members, topology(3, False))
    assert {m: parts(result, m) for m in members} == {
        "member1": {0}, "member2_1": {2}, "member2_2": {1}}


def test_standbys_never_sit_with_their_active_task() -> None:
    members = {f"member{i}": member(f"process{i}", [i - 1]) for i in (1, 2, 3, 4)}
    topo = topology(4, True)
    result = assign(members, topo, 1)
    check_assignment(members, topo, result, 1)
    for i in (1, 2, 3, 4):
        got = parts(result, f"member{i}", "standby")
        assert i - 1 not in got and len(got) <= 2
    assert sum(1 for m in members if parts(result, m, "standby")) >= 3
    assert standbys(result) == all_tasks(topo)


def test_two_standby_replicas_land_on_the_two_other_processes() -> None:
    members = {f"member{i}": member(f"process{i}", [i - 1]) for i in (1, 2, 3)}
    result = assign(members, topology(3, True), 2)
    assert parts(result, "member1", "standby") == {1, 2}
    assert parts(result, "member2", "standby") == {0, 2}
    assert parts(result, "member3", "standby") == {0, 1}


def test_no_standby_when_the_only_process_holds_the_active() -> None:
    result = assign({"member1": member("process1")}, topology(1, True), 1)
    assert result.members["member1"].standby_tasks == {}
    assert parts(result, "member1") == {0}


def test_standbys_also_skip_the_other_members_of_the_active_process() -> None:
    members = {"member1_1": member("process1"), "member1_2": member("process1")}
    topo = topology(2, True)
    result = assign(members, topo, 1)
    check_assignment(members, topo, result, 1)
    assert standbys(result) == set()


def test_every_task_gets_an_active_and_a_standby() -> None:
    members = {f"member{i}": member(f"process{i}") for i in (1, 2, 3)}
    topo = topology(3, True)
    result = assign(members, topo, 1)
    check_assignment(members, topo, result, 1)
    assert actives(result) == standbys(result) == all_tasks(topo)


def test_each_process_gets_a_task_before_any_gets_two() -> None:
    members = {"member1_1": member("process1"), "member1_2": member("process1"),
               "member1_3": member("process1"), "member2": member("process2"),
               "member3": member("process3")}
    result = assign(members, topology(3, False))
    assert n_active(result, "member1_1", "member1_2", "member1_3") == 1
    assert n_active(result, "member2") == n_active(result, "member3") == 1


def test_more_members_than_tasks_gives_each_task_to_one_member() -> None:
    members = {f"member{i}": member(f"process{i}") for i in range(1, 7)}
    topo = topology(3, False)
    result = assign(members, topo)
    check_assignment(members, topo, result)
    assert actives(result) == all_tasks(topo)


def test_actives_and_standbys_balance_to_one_task_per_member() -> None:
    members = {f"member{i}": member(f"process{i}") for i in range(1, 7)}
    result = assign(members, topology(3, True), 1)
    assert all(n_active(result, m) + n_standby(result, m) == 1 for m in members)


def test_a_process_with_two_members_gets_twice_the_tasks() -> None:
    members = {"member1": member("process1"), "member2_1": member("process2"),
               "member2_2": member("process2")}
    result = assign(members, topology(3, False, S0, S1, S2, S3))
    assert n_active(result, "member2_1", "member2_2") == 8
    assert n_active(result, "member1") == 4


def _all_ids(result, member_id):
    a = result.members[member_id]
    return sorted(t.partition for t in tasks_of(a.active_tasks)) + sorted(
        t.partition for t in tasks_of(a.standby_tasks))


@pytest.mark.parametrize("current", [
    {},
    {"member1": ([1, 2], None), "member2": ([3], None), "member3": ([0], None)},
    {"member1": ([1, 2], [3, 0]), "member2": ([3, 0], [1, 2])},
])
def test_no_two_hosts_get_the_same_assignment(current) -> None:
    members = {f"member{i}": member(f"process{i}", *current.get(f"member{i}", (None, None)))
               for i in (1, 2, 3, 4)}
    topo = topology(4, True)
    result = assign(members, topo, 1)
    check_assignment(members, topo, result, 1)
    seen = [_all_ids(result, m) for m in members]
    assert len({tuple(s) for s in seen}) == 4


def test_one_overloaded_owner_sheds_to_give_everyone_one() -> None:
    members = {"member1": member("process1"), "member2": member("process2"),
               "member3": member("process3", [0, 1, 2, 3]), "member4": member("process4")}
    result = assign(members, topology(4, False))
    assert [n_active(result, m) for m in members] == [1, 1, 1, 1]


def test_an_overloaded_owner_keeps_two_when_capacity_is_less_than_tasks() -> None:
    members = {"member1": member("process1"), "member2": member("process2"),
               "member3": member("process3", [0, 1, 2, 3])}
    result = assign(members, topology(4, False))
    assert [n_active(result, m) for m in members] == [1, 1, 2]


def test_tasks_rebalance_toward_the_process_with_more_members() -> None:
    members = {"member2": member("process2", [0, 3, 2]), "member3_1": member("process3"),
               "member3_2": member("process3")}
    result = assign(members, topology(3, False))
    assert n_active(result, "member2") == 1
    assert n_active(result, "member3_1", "member3_2") == 2


def test_a_new_member_takes_one_task_from_one_overloaded_owner_only() -> None:
    members = {"member1": member("process1", [0, 2]), "member2": member("process2", [1, 3]),
               "member3": member("process3")}
    result = assign(members, topology(4, False))
    assert n_active(result, "member3") == 1
    taken = parts(result, "member3")
    if taken & {0, 2}:
        assert parts(result, "member2") == {1, 3}
    else:
        assert parts(result, "member1") == {0, 2}


def test_new_tasks_do_not_move_existing_ones() -> None:
    members = {"member1": member("process1", [0, 1]), "member2": member("process2", [2, 3])}
    result = assign(members, topology(6, False))
    assert {0, 1} <= parts(result, "member1")
    assert {2, 3} <= parts(result, "member2")


def test_new_tasks_go_to_the_new_member() -> None:
    members = {"member1": member("process1", [2, 1]), "member2": member("process2", [0, 3]),
               "member3": member("process3")}
    result = assign(members, topology(6, False))
    assert {1, 2} <= parts(result, "member1")
    assert {0, 3} <= parts(result, "member2")
    assert {4, 5} <= parts(result, "member3")


def _three_subtopologies():
    return topology(4, False, S0, S1, S2)


def test_tasks_nobody_held_active_go_to_the_new_client() -> None:
    members = {
        "member1": member("process1", {S0: [1], S1: [2, 3]},
                          {S0: [0], S1: [1], S2: [0, 1, 3]}),
        "member2": member("process2", {S0: [0], S1: [1], S2: [2]},
                          {S0: [1, 2, 3], S1: [0, 2, 3], S2: [0, 1, 3]}),
        "member3": member("process3", {S2: [0, 1, 3]}, {S0: [2], S1: [2]}),
        "newMember": member("process4", None,
                            {S0: [0, 1, 2, 3], S1: [0, 1, 2, 3], S2: [0, 1, 2, 3]}),
    }
    result = assign(members, _three_subtopologies())
    got = {m: {s: set(ps) for s, ps in result.members[m].active_tasks.items()} for m in members}
    assert got == {
        "member1": {S0: {1}, S1: {2, 3}},
        "member2": {S0: {0}, S1: {1}, S2: {2}},
        "member3": {S2: {0, 1, 3}},
        "newMember": {S0: {2, 3}, S1: {0}},
    }


def test_tasks_nobody_held_active_go_to_the_bounced_clients_that_held_them_as_standby() -> None:
    members = {
        "member1": member("process1", {S0: [1], S1: [2, 3]},
                          {S0: [0], S1: [1], S2: [0, 1, 3]}),
        "member2": member("process2", {S0: [0], S1: [1], S2: [2]},
                          {S0: [1, 2, 3], S1: [0, 2, 3], S2: [0, 1, 3]}),
        "bounce_member1": member("bounce1", None, {S2: [0, 1, 3]}),
        "bounce_member2": member("bounce2", None, {S0: [2, 3], S1: [0]}),
    }
    result = assign(members, _three_subtopologies())
    got = {m: {s: set(ps) for s, ps in result.members[m].active_tasks.items()} for m in members}
    assert got == {
        "member1": {S0: {1}, S1: {2, 3}},
        "member2": {S0: {0}, S1: {1}, S2: {2}},
        "bounce_member1": {S2: {0, 1, 3}},
        "bounce_member2": {S0: {2, 3}, S1: {0}},
    }


def test_a_new_client_takes_one_of_two_tasks() -> None:
    members = {"member1": member("process1", [1, 2]), "member2": member("process2")}
    result = assign(members, topology(2, False))
    assert n_active(result, "member1") == 1


def test_a_new_client_does_not_flip_tasks_between_existing_clients() -> None:
    members = {"member1": member("process1", [0, 1, 2]), "member2": member("process2", [3, 4, 5]),
               "newMember": member("process3")}
    result = assign(members, topology(6, False))
    assert not parts(result, "member1") & {3, 4, 5} and n_active(result, "member1") == 2
    assert not parts(result, "member2") & {0, 1, 2} and n_active(result, "member2") == 2
    assert n_active(result, "newMember") == 2


def test_a_new_client_does_not_flip_tasks_between_existing_and_bounced_clients() -> None:
    members = {"member1": member("process1", [0, 1, 2, 6]),
               "member2": member("process2", None, [3, 4, 5]),
               "newMember": member("newProcess")}
    result = assign(members, topology(7, False))
    assert not parts(result, "member1") & {3, 4, 5} and n_active(result, "member1") == 3
    assert not parts(result, "member2") & {0, 1, 2} and n_active(result, "member2") == 2
    assert n_active(result, "newMember") == 2


# -- Kafka 4.x additions: reported offsets, warm-ups, configs ----------------------------


def test_a_restarted_member_gets_back_the_task_whose_state_it_reports() -> None:
    # member2 restarted under a new member id: it owns nothing, but reports state of task 1.
    members = {"member1": member("process1", [0, 1]),
               "member2": member("process2", offsets={TaskId(S, 1): 500})}
    result = assign(members, topology(2, True))
    assert parts(result, "member1") == {0}
    assert parts(result, "member2") == {1}


def test_the_most_caught_up_standby_becomes_active() -> None:
    task = TaskId(S, 0)
    members = {"member1": member("process1", standby=[0], offsets={task: 10}),
               "member2": member("process2", standby=[0], offsets={task: 90}),
               "member3": member("process3", standby=[0], offsets={task: 50})}
    result = assign(members, topology(1, True))
    assert parts(result, "member2") == {0}


def test_a_standby_holder_ranks_ahead_of_a_member_known_only_by_offsets() -> None:
    task = TaskId(S, 0)
    members = {"member1": member("process1", offsets={task: 1_000}),
               "member2": member("process2", standby=[0], offsets={task: 5})}
    result = assign(members, topology(1, True))
    assert parts(result, "member2") == {0}


def test_a_warm_up_holder_ranks_with_the_standbys() -> None:
    task = TaskId(S, 0)
    members = {"member1": member("process1", offsets={task: 1_000}),
               "member2": member("process2", warmup=[0], offsets={task: 5})}
    result = assign(members, topology(1, True))
    assert parts(result, "member2") == {0}


def test_standbys_prefer_the_previous_active_then_previous_standbys() -> None:
    # Task 0 moves from member1 (now over quota) to member3; member1 keeps its state as standby.
    members = {"member1": member("process1", [0, 1]), "member2": member("process2", [2]),
               "member3": member("process3", standby=[2])}
    topo = topology(3, True)
    result = assign(members, topo, 1)
    check_assignment(members, topo, result, 1)
    moved = parts(result, "member3")
    assert len(moved) == 1 and moved <= {0, 1}
    assert moved <= parts(result, "member1", "standby")
    assert 2 in parts(result, "member3", "standby")


def test_stateless_subtopologies_get_no_standbys() -> None:
    members = {f"member{i}": member(f"process{i}") for i in (1, 2, 3)}
    topo = Topology({S0: (3, True), S1: (3, False)})
    result = assign(members, topo, 1)
    check_assignment(members, topo, result, 1)
    assert {t.subtopology_id for t in standbys(result)} == {S0}
    assert len(standbys(result)) == 3


def test_a_subtopology_without_partitions_has_no_tasks() -> None:
    members = {"member1": member("process1"), "member2": member("process2")}
    topo = Topology({S0: (0, True)})
    result = assign(members, topo, 1)
    assert all(a.active_tasks == a.standby_tasks == {} for a in result.members.values())


def test_an_empty_group_gets_an_empty_assignment() -> None:
    assert assign({}, topology(3, True), 1).members == {}


def test_tasks_owned_in_a_vanished_subtopology_are_dropped() -> None:
    members = {"member1": member("process1", {"gone": [0, 1], S: [0]})}
    topo = topology(2, False)
    result = assign(members, topo)
    check_assignment(members, topo, result)
    assert set(result.members["member1"].active_tasks) == {S}


@pytest.mark.parametrize("bad", ["one", "-1", "1.5", ""])
def test_a_malformed_standby_count_is_refused(bad: str) -> None:
    spec = GroupSpec({"member1": member("process1")}, {"num.standby.replicas": bad})
    with pytest.raises(TaskAssignorError):
        StickyTaskAssignor().assign(spec, topology(1, True))


def test_zero_standby_replicas_means_none() -> None:
    members = {"member1": member("process1"), "member2": member("process2")}
    result = assign(members, topology(2, True), 0)
    assert standbys(result) == set()


def test_the_same_input_gives_the_same_output() -> None:
    members = {f"m{i}": member(f"p{i % 3}", [i]) for i in range(7)}
    topo = topology(10, True, S0, S1)
    first = assign(members, topo, 1)
    reordered = dict(reversed(list(members.items())))
    assert assign(reordered, topo, 1) == first


def test_equally_loaded_processes_win_tasks_in_the_order_kafkas_priority_queue_polls_them():
    # Kafka's step 3 polls a PriorityQueue of its processes by load, filled from a HashMap of
    # process ids, so a tie goes neither to the smaller id nor to the first member: here
    # process-c wins task 1 and process-b task 2, as the Kafka 4.4 jar assigns them (and as a
    # conformance conversation saw a 4.4 broker do).
    members = {"a": member("process-a", [0, 1]), "b": member("process-b"),
               "d": member("process-c")}
    result = assign(members, topology(3, False))
    assert {m: parts(result, m) for m in members} == {"a": {0}, "b": {2}, "d": {1}}
