"""The incremental cooperative connect assignor, as Connect users see it."""

from __future__ import annotations

import pytest

from assignors.client.interfaces import (
    ConnectAssignor,
    ConnectGroup,
    ConnectGroupMember,
    ConnectMemberAssignment,
)
from assignors.connect import (
    NAME,
    REASON_NONE,
    REASON_REBALANCE_DUE,
    IncrementalCooperativeAssignor,
)
from assignors.connect.metadata import decode
from assignors.connect.plan import HELD_WORK_PENDING, STORM_GUARD
from tests.assignors.connect.sim import ConnectCluster

DELAY_MS = 10_000


def cluster(connectors: dict[str, int], workers: str = "abc", delay_ms: int = DELAY_MS, **kw):
    c = ConnectCluster(dict(connectors), IncrementalCooperativeAssignor(delay_ms, **kw))
    for w in workers:
        c.join(w, instance_id=f"host-{w}")
    return c


def spread(values) -> int:
    values = list(values)
    return max(values) - min(values)


# -- balance ------------------------------------------------------------------------------


def test_first_assignment_balances_connectors_and_tasks_separately():
    c = cluster({"s1": 4, "s2": 5, "s3": 2, "s4": 0})
    c.round(0)
    assert spread(c.connector_counts().values()) <= 1
    assert spread(c.task_counts().values()) <= 1
    assert sum(c.connector_counts().values()) == 4
    assert set(c.all_tasks()) == c.configured_tasks()


def test_one_connectors_tasks_spread_across_workers():
    # A total-only balance could give one worker all of "big" and the others the rest.
    c = cluster({"big": 9, "t1": 3, "t2": 3, "t3": 3})
    c.round(0)
    for connector in c.connectors:
        assert spread(c.per_connector(connector).values()) <= 1, connector


def test_a_rerun_with_the_same_input_moves_nothing_and_writes_the_same_metadata():
    c = cluster({"s1": 7, "s2": 3})
    first = c.round(0)
    again = c.round(0)
    assert again.moved_units == 0
    assert again.members == first.members


def test_a_new_worker_gets_load_and_only_what_must_move_is_revoked():
    c = cluster({f"s{i}": 6 for i in range(4)}, workers="abc")
    c.round(0)
    before = {m: (w.connectors, w.tasks) for m, w in c.workers.items()}
    c.join("d", instance_id="host-d")
    result = c.round(1_000)
    new = c.workers["d"]
    assert len(new.tasks) == 6 and len(new.connectors) == 1
    # Everything the newcomer got came from the others, and nothing else moved.
    assert result.moved_units == len(new.tasks) + len(new.connectors)
    for m in "abc":
        assert c.workers[m].tasks <= before[m][1]
        assert c.workers[m].connectors <= before[m][0]
    for connector in c.connectors:
        assert spread(c.per_connector(connector).values()) <= 1


def test_a_newcomer_to_a_wide_group_takes_only_its_share():
    # Every connector has fewer tasks than there are workers: each worker runs one task of
    # many connectors, and a newcomer must take its share without reshuffling the rest.
    c = cluster({f"s{i:02d}": 5 for i in range(20)}, workers="abcdefghij")
    c.round(0)
    before = {m: w.tasks | w.connectors for m, w in c.workers.items()}
    c.join("k")
    result = c.round(1_000)
    newcomer = c.workers["k"].tasks | c.workers["k"].connectors
    assert len(c.workers["k"].tasks) == 9 and len(c.workers["k"].connectors) == 1
    assert result.moved_units == len(newcomer)
    for m, units in before.items():
        assert c.workers[m].tasks | c.workers[m].connectors <= units


def test_new_connectors_go_to_the_least_loaded_workers_without_moving_anything():
    c = cluster({"s1": 3}, workers="abc")
    c.round(0)
    c.connectors["s2"] = 3
    result = c.round(1_000)
    assert result.moved_units == 0
    assert c.task_counts() == {"a": 2, "b": 2, "c": 2}


# -- deleted and duplicated work ------------------------------------------------------------


def test_deleted_connectors_and_tasks_leave_the_targets():
    c = cluster({"s1": 5, "gone": 3})
    c.round(0)
    del c.connectors["gone"]
    c.connectors["s1"] = 2
    result = c.round(1_000)
    assert set(c.all_tasks()) == {("s1", 0), ("s1", 1)}
    assert set(c.all_connectors()) == {"s1"}
    assert result.dropped_units == 3 + 1 + 3  # gone's tasks, gone, s1's tasks 2..4


def test_duplicated_work_stays_with_one_worker():
    c = cluster({"s1": 2}, workers="ab")
    c.round(0)
    c.workers["b"].tasks |= c.workers["a"].tasks
    result = c.round(1_000)
    assert result.dropped_units == len(c.workers["a"].tasks)
    assert max(c.all_tasks().values()) == 1
    assert set(c.all_tasks()) == c.configured_tasks()


# -- departed workers -----------------------------------------------------------------------


def test_a_departed_workers_tasks_are_held_until_the_delay_expires():
    c = cluster({"s1": 6, "s2": 3})
    c.round(0)
    gone = c.leave("c")
    lost = gone.tasks | {(name, -1) for name in gone.connectors}
    result = c.round(1_000)
    assert result.next_rebalance_ms == 1_000 + DELAY_MS
    (held,) = result.held
    assert set(held.tasks) | {(name, -1) for name in held.connectors} == lost
    assert not gone.tasks & set(c.all_tasks())
    assert c.round(1_000 + DELAY_MS - 1).held  # not yet
    result = c.round(1_000 + DELAY_MS)
    assert result.held == ()
    assert result.next_rebalance_ms == -1
    assert set(c.all_tasks()) == c.configured_tasks()
    assert spread(c.task_counts().values()) <= 1


def test_delay_zero_reassigns_lost_work_at_once():
    c = cluster({"s1": 6, "s2": 3}, delay_ms=0)
    c.round(0)
    c.leave("c")
    result = c.round(1_000)
    assert result.held == ()
    assert result.next_rebalance_ms == -1
    assert set(c.all_tasks()) == c.configured_tasks()
    assert set(c.all_connectors()) == set(c.connectors)


def test_a_worker_that_comes_back_within_the_delay_gets_its_work_again():
    c = cluster({"s1": 6, "s2": 3})
    c.round(0)
    gone = c.leave("c")
    c.round(1_000)
    c.join("c")  # same member id, dynamic this time
    result = c.round(2_000)
    assert c.workers["c"].tasks == gone.tasks
    assert c.workers["c"].connectors == gone.connectors
    assert result.held == () and result.moved_units == 0


def test_a_bounced_static_worker_reclaims_its_tasks_at_once():
    c = cluster({"s1": 6, "s2": 3})
    c.round(0)
    gone = c.leave("c")
    c.round(1_000)
    c.join("c-restarted", instance_id="host-c")  # new member id, same instance id
    result = c.round(1_500)
    assert c.workers["c-restarted"].tasks == gone.tasks
    assert c.workers["c-restarted"].connectors == gone.connectors
    assert result.held == () and result.reclaimed_units == len(gone.tasks) + len(gone.connectors)


def test_a_static_worker_that_bounced_between_rounds_is_never_held():
    c = cluster({"s1": 6, "s2": 3})
    c.round(0)
    gone = c.leave("c")
    c.join("c-restarted", instance_id="host-c")  # the coordinator saw no round in between
    result = c.round(1_000)
    assert c.workers["c-restarted"].tasks == gone.tasks
    assert result.held == () and result.moved_units == 0


def test_another_static_worker_reusing_a_member_id_does_not_inherit():
    c = cluster({"s1": 6})
    c.round(0)
    c.leave("c")
    c.join("c", instance_id="another-host")
    result = c.round(1_000)
    assert len(result.held) == 1
    assert c.workers["c"].tasks == frozenset()


def test_while_work_is_held_nothing_moves_but_new_work_is_assigned():
    c = cluster({"s1": 6})
    c.round(0)
    c.leave("c")
    c.round(1_000)
    c.join("d")
    c.connectors["s2"] = 2
    result = c.round(2_000)
    assert result.moves_skipped == HELD_WORK_PENDING
    assert result.moved_units == 0
    assert {("s2", 0), ("s2", 1)} <= set(c.all_tasks())
    assert c.workers["d"].connectors == {"s2"}  # the least loaded took the new connector


def test_expired_work_goes_to_the_least_loaded_workers():
    c = cluster({"s1": 6, "s2": 6})
    c.round(0)
    gone = c.leave("c")
    c.round(1_000)
    c.join("d")
    c.round(2_000)
    result = c.round(1_000 + DELAY_MS)
    assert c.workers["d"].tasks == gone.tasks
    assert result.moved_units == 0


def test_each_departure_has_its_own_clock():
    c = cluster({"s1": 8}, workers="abcd")
    c.round(0)
    c.leave("c")
    c.round(1_000)
    c.leave("d")
    result = c.round(5_000)
    assert [h.lost_at_ms for h in result.held] == [1_000, 5_000]
    result = c.round(1_000 + DELAY_MS)
    assert [h.owner.member_id for h in result.held] == ["d"]
    assert result.next_rebalance_ms == 5_000 + DELAY_MS


def test_the_state_survives_a_carrier_leaving():
    c = cluster({"s1": 10}, workers="abcde", state_copies=2)
    c.round(0)
    carriers = [m for m, w in c.workers.items() if decode(w.metadata, w.version).state]
    assert len(carriers) == 2
    c.leave(carriers[0])
    result = c.round(1_000)
    assert len(result.held) == 1  # the departure was recognised from the other copy


def test_losing_every_carrier_at_once_treats_lost_work_as_new():
    c = cluster({"s1": 10}, workers="abcde", state_copies=1)
    c.round(0)
    (carrier,) = [m for m, w in c.workers.items() if decode(w.metadata, w.version).state]
    c.leave(carrier)
    result = c.round(1_000)
    assert result.held == ()  # Kafka after a leader change: nothing to wait for
    assert set(c.all_tasks()) == c.configured_tasks()


def test_every_member_learns_when_to_ask_but_only_carriers_hold_the_state():
    c = cluster({"s1": 20}, workers="abcdefgh", state_copies=3)
    c.round(0)
    c.leave("h")
    c.round(1_000)
    decoded = [decode(w.metadata, w.version) for w in c.workers.values()]
    assert {d.next_rebalance_ms for d in decoded} == {1_000 + DELAY_MS}
    assert sum(d.state is not None for d in decoded) == 3


# -- storms ---------------------------------------------------------------------------------


def test_consecutive_revoking_rounds_back_off_exponentially():
    c = cluster({f"s{i}": 10 for i in range(10)}, workers="ab", delay_ms=300_000)
    c.round(0)
    c.join("c")
    assert c.round(1_000).moved_units > 0  # the first revoking round goes ahead
    c.join("d")
    result = c.round(1_010)
    assert result.moves_skipped == STORM_GUARD and result.moved_units == 0
    assert result.next_rebalance_ms == 1_000 + 40
    assert c.round(1_040).moved_units > 0  # 40 ms later it may revoke again
    c.join("e")
    assert c.round(1_100).next_rebalance_ms == 1_040 + 1_600
    assert c.round(2_640).moved_units > 0
    c.join("f")
    assert c.round(3_000).next_rebalance_ms == 2_640 + 64_000


def test_a_quiet_round_after_the_backoff_ends_the_burst():
    c = cluster({f"s{i}": 10 for i in range(10)}, workers="ab", delay_ms=300_000)
    c.round(0)
    c.join("c")
    c.round(1_000)
    c.round(1_100)  # nothing to move, 100 ms after: the burst is over
    c.join("d")
    assert c.round(1_110).moved_units > 0


def test_delay_zero_turns_the_storm_guard_off():
    c = cluster({f"s{i}": 10 for i in range(10)}, workers="ab", delay_ms=0)
    c.round(0)
    for t, w in enumerate("cdef", start=1):
        c.join(w)
        result = c.round(t)
        assert result.moved_units > 0 and result.moves_skipped is None


def test_free_work_is_assigned_even_while_the_storm_guard_waits():
    c = cluster({f"s{i}": 10 for i in range(4)}, workers="ab", delay_ms=300_000)
    c.round(0)
    c.join("c")
    c.round(1_000)
    c.join("d")
    c.connectors["new"] = 4
    result = c.round(1_010)
    assert result.moves_skipped == STORM_GUARD
    assert {("new", t) for t in range(4)} <= set(c.all_tasks())


# -- the interface and the worker side ------------------------------------------------------


def test_assign_answers_every_member_at_a_version_it_reads():
    assignor = IncrementalCooperativeAssignor()
    assert isinstance(assignor, ConnectAssignor)
    assert (assignor.name(), assignor.minimum_version(), assignor.maximum_version()) == (
        NAME,
        1,
        2,
    )
    group = ConnectGroup(
        members=(
            ConnectGroupMember("old", maximum_version=1),
            ConnectGroupMember("new", maximum_version=2),
            ConnectGroupMember("fresh"),  # never served: reports version 0
        ),
        connectors={"s1": 3},
        now_ms=0,
    )
    result = assignor.assign(group)
    assert result.error == 0
    versions = {m.member_id: m.version for m in result.members}
    assert versions == {"old": 1, "new": 2, "fresh": 1}
    assert all(isinstance(m, ConnectMemberAssignment) for m in result.members)


def test_the_assignor_needs_the_time():
    group = ConnectGroup(members=(ConnectGroupMember("a"),), connectors={"s": 1})
    with pytest.raises(ValueError, match="now_ms"):
        IncrementalCooperativeAssignor().assign(group)


def test_an_empty_group_and_a_group_without_connectors_are_fine():
    assignor = IncrementalCooperativeAssignor()
    assert assignor.assign(ConnectGroup(members=(), connectors={"s": 2}, now_ms=0)).members == ()
    result = assignor.assign(ConnectGroup(members=(ConnectGroupMember("a"),), now_ms=0))
    assert result.members[0].tasks == frozenset()


def test_a_worker_asks_for_a_rebalance_when_its_delay_is_over():
    c = cluster({"s1": 6})
    c.round(0)
    c.leave("c")
    result = c.round(1_000)
    worker = IncrementalCooperativeAssignor(DELAY_MS)
    assert worker.metadata().version == 2 and worker.metadata().metadata == b""
    assert worker.next_rebalance_delay_ms(1_000) is None
    (mine,) = [m for m in result.members if m.member_id == "a"]
    worker.on_assignment(mine)
    assert worker.next_rebalance_delay_ms(4_000) == DELAY_MS - 3_000
    assert worker.metadata(now_ms=4_000).reason == REASON_NONE
    due = worker.metadata(now_ms=1_000 + DELAY_MS)
    assert due.reason == REASON_REBALANCE_DUE
    assert (due.version, due.metadata) == (mine.version, mine.metadata)
    worker.reset()
    assert worker.next_rebalance_delay_ms(1_000 + DELAY_MS) is None


def test_invalid_configuration_is_refused():
    with pytest.raises(ValueError):
        IncrementalCooperativeAssignor(-1)
    with pytest.raises(ValueError):
        IncrementalCooperativeAssignor(minimum_version=2, maximum_version=1)
    with pytest.raises(ValueError):
        IncrementalCooperativeAssignor(maximum_version=3)
    with pytest.raises(ValueError):
        IncrementalCooperativeAssignor(state_copies=0)
