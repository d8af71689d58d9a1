"""Properties of the sticky streams task assignor over generated groups and topologies."""

from __future__ import annotations

from collections import Counter

from hypothesis import assume, example, given
from hypothesis import strategies as st

from assignors.streams import TaskId
from tests.assignors.streams.streams_checks import (
    Topology,
    all_tasks,
    as_current,
    assign,
    check_assignment,
    member,
    n_active,
    tasks_of,
)


@st.composite
def topologies(draw) -> Topology:
    n = draw(st.integers(1, 4))
    return Topology({f"s{i}": (draw(st.integers(0, 12)), draw(st.booleans())) for i in range(n)})


@st.composite
def groups(draw, homogeneous: bool = False):
    """(members, topology, standby replicas); members hold arbitrary (even overlapping or
    stale) current tasks and offsets unless ``homogeneous``, where every process has the same
    number of members and nobody holds anything."""
    topo = draw(topologies())
    n_processes = draw(st.integers(1, 6))
    if homogeneous:
        per = draw(st.integers(1, 3))
        sizes = [per] * n_processes
    else:
        sizes = draw(st.lists(st.integers(1, 3), min_size=n_processes, max_size=n_processes))
    subs = topo.subtopologies()
    some = st.dictionaries(st.sampled_from(subs), st.frozensets(st.integers(0, 13), max_size=5),
                           max_size=2)
    members = {}
    for p, size in enumerate(sizes):
        for m in range(size):
            if homogeneous:
                members[f"m{p}_{m}"] = member(f"p{p}")
                continue
            active, standby, warmup = draw(some), draw(some), draw(some)
            offsets = {t: draw(st.integers(0, 1_000)) for t in tasks_of(draw(some))}
            members[f"m{p}_{m}"] = member(f"p{p}", active, standby, warmup, offsets)
    return members, topo, draw(st.integers(0, 3))


@given(groups())
def test_every_task_is_active_once_and_standbys_keep_invariant_8(group) -> None:
    members, topo, num_standby = group
    check_assignment(members, topo, assign(members, topo, num_standby), num_standby)


@given(groups())
def test_standbys_fill_every_replica_a_free_process_can_take(group) -> None:
    members, topo, num_standby = group
    result = assign(members, topo, num_standby)
    processes = {s.process_id for s in members.values()}
    copies = Counter(t for a in result.members.values() for t in tasks_of(a.standby_tasks))
    for sub in topo.subtopologies():
        if not topo.is_stateful(sub):
            continue
        for p in range(topo.max_number_of_partitions(sub)):
            want = min(num_standby, len(processes) - 1)
            assert copies[TaskId(sub, p)] == want


@given(groups(homogeneous=True))
def test_a_fresh_homogeneous_group_is_balanced_within_one_per_member_and_process(group) -> None:
    # Actives only: standbys go where the task's active is not, so with few processes a
    # member's active+standby total can differ by more (two single-member processes, three
    # tasks of which one stateful with a standby: 3 and 1).
    members, topo, num_standby = group
    result = assign(members, topo, num_standby)
    per_member = [n_active(result, m) for m in members]
    assert max(per_member) - min(per_member) <= 1
    per_process = Counter()
    for m, spec in members.items():
        per_process[spec.process_id] += n_active(result, m)
    loads = [per_process[p] for p in {s.process_id for s in members.values()}]
    assert max(loads) - min(loads) <= 1


def fresh(members):
    """The same members and processes, holding nothing (a group's first assignment)."""
    return {m: member(s.process_id) for m, s in members.items()}


def active_sets(result):
    return {m: a.active_tasks for m, a in result.members.items()}


def _over_total_quota(members, topo, num_standby, result) -> set[str]:
    """Members ``result`` gave more than ``ceil((actives + standbys) / members)`` tasks: Kafka
    places the standbys nobody kept on the least-loaded process, which minds no quota."""
    stateful = sum(topo.max_number_of_partitions(s) for s in topo.subtopologies()
                   if topo.is_stateful(s))
    total = len(all_tasks(topo)) + stateful * num_standby
    quota = -(-total // len(members))
    return {m for m, a in result.members.items()
            if len(tasks_of(a.active_tasks)) + len(tasks_of(a.standby_tasks)) > quota}


@given(groups())
@example(({**{f"m{p}_0": member(f"p{p}") for p in range(4)},
           **{f"m4_{i}": member("p4") for i in range(3)}},
          Topology({"s0": (4, False), "s1": (5, True)}), 1))
def test_rerunning_on_its_own_result_moves_no_active_task(group) -> None:
    members, topo, num_standby = group
    members = fresh(members)
    first = assign(members, topo, num_standby)
    second = assign(as_current(members, first), topo, num_standby)
    assert active_sets(second) == active_sets(first)
    if num_standby <= 1:
        # With two or more replicas, standbys may trade places among their previous holders:
        # Kafka's pick among previous holders keeps the first-ranked one unless another is
        # strictly lighter in both process and member load, and loads shift as replicas land.
        # With one, a member keeps its standbys unless the first run put it over the total
        # quota: the rerun gives previous holders standbys only while under quota (ci55's
        # example: m2_0 got one active and two standbys of 14 tasks among 7 members, and the
        # rerun moved the second standby to the least-loaded process).
        over = _over_total_quota(members, topo, num_standby, first)
        for m, a in first.members.items():
            if m not in over:
                assert tasks_of(second.members[m].standby_tasks) >= tasks_of(a.standby_tasks)


@given(groups())
def test_from_any_current_state_the_active_tasks_settle_within_a_few_rounds(group) -> None:
    # Not at once: a member can keep more than its fair share of sticky tasks while the quota
    # is still loose (Kafka fills quotas in partition order and tightens them as members fill
    # up), and the next round trims it, which can free a tie the round after breaks another
    # way. Kafka 4.4's own assignor (its jar, run on the same states) takes up to three more
    # rounds from arbitrary ones; five are allowed here.
    members, topo, num_standby = group
    before = assign(members, topo, num_standby)
    for _ in range(5):
        after = assign(as_current(members, before), topo, num_standby)
        if active_sets(after) == active_sets(before):
            return
        before = after
    raise AssertionError(f"active tasks still move after five rounds: {active_sets(before)}")


@given(groups(), st.data())
def test_a_member_leaving_moves_only_its_active_tasks(group, data) -> None:
    members, topo, num_standby = group
    members = fresh(members)
    assume(len(members) >= 2)
    first = assign(members, topo, num_standby)
    current = as_current(members, first)
    leaver = data.draw(st.sampled_from(sorted(current)))
    rest = {m: s for m, s in current.items() if m != leaver}
    second = assign(rest, topo, num_standby)
    gained: list[TaskId] = []
    for m in rest:
        before, after = (tasks_of(r.members[m].active_tasks) for r in (first, second))
        assert before <= after, m
        gained.extend(after - before)
    assert sorted(gained) == sorted(tasks_of(first.members[leaver].active_tasks))
