"""One reconciliation step of a streams member, as Kafka 4.4's ``CurrentAssignmentBuilder``
takes it: role changes of the member's own tasks in place (a standby or warm-up promoted to
active without being revoked, an active demoted to a standby granted with its revocation,
standby and warm-up converted into each other), release checks per process, a revocation the
heartbeat already shows done, and the previous epoch each step records.

Pure: a hand-made group (members, what they hold, their processes) and ``reconcile``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.streams.group import StreamsGroup
from protocol.streams.member import StreamsGroupMember, Tasks
from protocol.streams.member import StreamsMemberState as S
from protocol.streams.reconcile import reconcile
from protocol.streams.records import StreamsGroupMemberMetadataValue

T0, T1 = ("1", 0), ("1", 1)
NONE = Tasks()


def tasks(active=(), standby=(), warmup=()) -> Tasks:
    return Tasks(frozenset(active), frozenset(standby), frozenset(warmup))


def member(mid: str, process: str, held: Tasks = NONE, pending: Tasks = NONE,
           epoch: int = 5, previous: int = 4, state: S = S.STABLE) -> StreamsGroupMember:
    m = StreamsGroupMember(mid).with_metadata(StreamsGroupMemberMetadataValue(process_id=process))
    m = m.moved_tasks(state, held, pending, previous, previous - 1)
    return m.moved_tasks(state, held, pending, epoch, previous)


def group(*members: StreamsGroupMember) -> StreamsGroup:
    g = StreamsGroup("app")
    g.members = {m.member_id: m for m in members}
    return g


def step(g: StreamsGroup, mid: str, target: Tasks, owned: Tasks | None = None,
         epoch: int = 6) -> StreamsGroupMember:
    m = g.members[mid]
    return reconcile(g, m, epoch, target, m.tasks if owned is None else owned)


def test_a_standby_whose_active_task_is_free_is_promoted_in_one_step_without_a_revocation():
    # Kafka 4.4: a promotion to active is never routed through the revocation (the client
    # recycles the standby's store); the previous owner left, so it is granted at once.
    g = group(member("b", "pb", tasks(active={T1}, standby={T0})))
    after = step(g, "b", tasks(active={T0, T1}))
    assert after.current.state == S.STABLE and after.member_epoch == 6
    assert after.tasks == tasks(active={T0, T1})
    assert not after.pending


def test_a_promoted_standby_is_kept_until_the_previous_owner_releases_the_active_task():
    a = member("a", "pa", pending=tasks(active={T0}), state=S.UNREVOKED_TASKS)
    g = group(a, member("b", "pb", tasks(active={T1}, standby={T0})))
    waiting = step(g, "b", tasks(active={T0, T1}))
    assert waiting.current.state == S.UNRELEASED_TASKS and waiting.member_epoch == 6
    assert waiting.tasks == tasks(active={T1}, standby={T0})  # still a standby, not revoked
    del g.members["a"]  # released (here: gone)
    g.members["b"] = waiting
    granted = step(g, "b", tasks(active={T0, T1}))
    assert granted.current.state == S.STABLE
    assert granted.tasks == tasks(active={T0, T1})  # the standby became the active task


def test_a_promotion_waits_while_the_member_still_has_tasks_to_revoke():
    g = group(member("b", "pb", tasks(active={T1}, standby={T0})))
    after = step(g, "b", tasks(active={T0}))
    assert after.current.state == S.UNREVOKED_TASKS and after.member_epoch == 5
    assert after.pending == tasks(active={T1})  # the standby is not pending revocation
    assert after.tasks == tasks(standby={T0})
    g.members["b"] = after
    done = step(g, "b", tasks(active={T0}), owned=tasks(standby={T0}))
    assert done.current.state == S.STABLE and done.member_epoch == 6
    assert done.tasks == tasks(active={T0})


def test_an_active_task_demoted_to_a_standby_is_granted_as_one_with_its_revocation():
    # The standby is assigned while the active task waits for the client's release, so the
    # client turns the active task into the standby in place.
    g = group(member("a", "pa", tasks(active={T0, T1})))
    after = step(g, "a", tasks(active={T1}, standby={T0}))
    assert after.current.state == S.UNREVOKED_TASKS
    assert after.tasks == tasks(active={T1}, standby={T0})
    assert after.pending == tasks(active={T0})
    g.members["a"] = after
    done = step(g, "a", tasks(active={T1}, standby={T0}), owned=tasks(active={T1}, standby={T0}))
    assert done.current.state == S.STABLE and done.tasks == tasks(active={T1}, standby={T0})


def test_a_standby_and_a_warmup_turn_into_each_other_in_one_step_without_a_revocation():
    g = group(member("a", "pa", tasks(standby={T0}, warmup={T1})))
    after = step(g, "a", tasks(standby={T1}, warmup={T0}))
    assert after.current.state == S.STABLE and not after.pending
    assert after.tasks == tasks(standby={T1}, warmup={T0})


def test_a_process_mate_running_the_task_active_holds_back_its_standby():
    g = group(member("a1", "p", tasks(active={T0})), member("a2", "p"))
    after = step(g, "a2", tasks(standby={T0}))
    assert after.current.state == S.UNRELEASED_TASKS and after.tasks == Tasks()


def test_a_process_mate_holding_the_standby_holds_back_the_active_task():
    # Released by every other process (nobody runs it active), but a member of the same
    # process still holds its standby: one process never runs a task twice.
    g = group(member("a1", "p", tasks(standby={T0})), member("a2", "p"))
    after = step(g, "a2", tasks(active={T0}))
    assert after.current.state == S.UNRELEASED_TASKS and after.tasks == Tasks()


def test_a_standby_on_another_process_does_not_hold_back_a_standby():
    g = group(member("b", "pb", tasks(standby={T0})), member("a", "pa"))
    after = step(g, "a", tasks(standby={T0}))
    assert after.current.state == S.STABLE and after.tasks == tasks(standby={T0})


def test_a_revocation_the_heartbeat_already_shows_done_is_not_waited_for():
    g = group(member("a", "pa", tasks(active={T0, T1})))
    after = step(g, "a", tasks(active={T1}), owned=tasks(active={T1}))
    assert after.current.state == S.STABLE and after.member_epoch == 6
    assert after.tasks == tasks(active={T1}) and not after.pending


def test_without_a_report_of_owned_tasks_the_revocation_is_waited_for():
    g = group(member("a", "pa", tasks(active={T0, T1})))
    m = g.members["a"]
    after = reconcile(g, m, 6, tasks(active={T1}), None)
    assert after.current.state == S.UNREVOKED_TASKS and after.member_epoch == 5


def test_each_step_records_the_members_former_epoch_as_its_previous_epoch():
    # Kafka's Builder.updateMemberEpoch: also when the epoch stays (a revocation, a member
    # still waiting for an unreleased task).
    g = group(member("a", "pa", tasks(active={T0, T1}), epoch=5, previous=3))
    after = step(g, "a", tasks(active={T1}), owned=tasks(active={T0, T1}))
    assert (after.member_epoch, after.previous_member_epoch) == (5, 5)


# ------------------------------------------------------------------------- properties

TASKS = [("0", p) for p in range(3)] + [("1", p) for p in range(3)]
PROCESSES = ["p", "q", "r"]


@st.composite
def groups(draw):
    """A consistent group: each task active on at most one member (assigned or pending), and a
    process holds a task in at most one role."""
    mids = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=4,
                         unique=True))
    procs = {mid: draw(st.sampled_from(PROCESSES)) for mid in mids}
    held = {mid: {"active": set(), "standby": set(), "warmup": set(), "pa": set()} for mid in mids}
    for task in TASKS:
        used: set[str] = set()
        active_done = False
        for mid in draw(st.permutations(mids)):
            role = draw(st.sampled_from(["none", "active", "pa", "standby", "warmup"]))
            if role == "none" or procs[mid] in used:
                continue
            if role in ("active", "pa"):
                if active_done:
                    continue
                active_done = True
            used.add(procs[mid])
            held[mid][role].add(task)
    members = []
    for mid in mids:
        h = held[mid]
        state = S.UNREVOKED_TASKS if h["pa"] else S.STABLE
        members.append(member(mid, procs[mid], tasks(h["active"], h["standby"], h["warmup"]),
                              tasks(active=h["pa"]), state=state))
    g = group(*members)
    target_of = {}
    for mid in mids:
        t = [draw(st.sets(st.sampled_from(TASKS), max_size=3)) for _ in range(3)]
        target_of[mid] = tasks(t[0], t[1] - t[0], t[2] - t[0] - t[1])
    owned = {mid: draw(st.sampled_from([None, "held", "nothing"])) for mid in mids}
    return g, target_of, owned


@settings(max_examples=300, deadline=None)
@given(groups())
def test_a_step_never_puts_a_task_active_twice_nor_twice_on_one_process(drawn):
    g, target_of, owned = drawn
    for mid in sorted(g.members):
        m = g.members[mid]
        report = {None: None, "held": m.tasks, "nothing": Tasks()}[owned[mid]]
        after = reconcile(g, m, 6, target_of[mid], report)
        # Only what the target names, or what the member already had, is held afterwards.
        assert (after.tasks - (m.tasks | m.pending)).contained_in(target_of[mid])
        g.members[mid] = after
        active_on: dict = {}
        roles_on: dict = {}
        for other in g.members.values():
            for t in other.tasks.active | other.pending.active:
                assert active_on.setdefault(t, other.member_id) == other.member_id
            for role in ("active", "standby", "warmup"):
                for t in getattr(other.tasks, role):
                    key = (other.process_id, t)
                    assert key not in roles_on, f"{t} held twice on {other.process_id}"
                    roles_on[key] = role
