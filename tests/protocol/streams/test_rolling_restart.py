"""A rolling restart of a streams group, pure, as Kafka 4.4 runs it: a leaver's active tasks
go to their standbys on the survivors' next heartbeats with no revocation round
(``CurrentAssignmentBuilder``'s in-place promotion), and the member that comes back on the same
process is assigned from what the others hold, not from their targets (``TargetAssignmentBuilder``
hands the assignor ``assignedTasks``), so a task a survivor was meant to take but had not taken
moves nowhere but back."""

from __future__ import annotations

from protocol.config import GroupConfig
from protocol.streams.member import StreamsMemberState as S
from tests.protocol.streams.driver import StreamsMember, topology
from tests.protocol.streams.test_heartbeat import GID, ready, shard


def test_a_standby_takes_over_a_leavers_active_task_on_its_next_heartbeat():
    s = shard(input=3, **{"app-store-changelog": 3})
    s.set_group_config(GID, GroupConfig(streams_num_standby_replicas=1))
    t = topology(stateful=True)
    a, b, c = (StreamsMember(s, x, topology=t) for x in "abc")
    ready(s, a, b, c)
    leaver_tasks = set(a.active["0"])
    heir = next(m for m in (b, c) if leaver_tasks & set(m.standby.get("0", [])))
    promoted = leaver_tasks & set(heir.standby["0"])
    a.leave()
    heir.heartbeat()  # computes the target without a, and reconciles the heir toward it
    held = s.groups[GID].members[heir.member_id]
    target = set(s.groups[GID].target[heir.member_id].active_tasks["0"])
    assert promoted & target, "the assignor gives a's task to its standby"
    assert promoted & target <= set(heir.active["0"])  # one heartbeat, no revocation first
    assert held.current.state == S.STABLE and not held.pending


def test_a_task_a_survivor_has_not_taken_yet_goes_back_to_the_restarted_process():
    s = shard(input=6)
    a, b, c = (StreamsMember(s, x) for x in "abc")
    ready(s, a, b, c)
    c_before = set(c.active["0"])
    a.leave()
    b.heartbeat()  # the target without a: a's tasks go to b and c; b takes its share
    group = s.groups[GID]
    c_target = set(group.target["c"].active_tasks["0"])
    assert c_target > c_before  # c is meant to take one of a's tasks, and has not yet
    back = StreamsMember(s, "a2", process_id=a.process_id)
    back.join()  # the target with a2, from what b and c hold now
    assert set(group.target["c"].active_tasks["0"]) == c_before  # nothing moves for c
    for _ in range(3):
        for m in (back, b, c):
            m.heartbeat()
    assert set(c.active["0"]) == c_before
    assert group.state == "stable"
    owned = sorted(p for m in (back, b, c) for p in m.active["0"])
    assert owned == list(range(6))
