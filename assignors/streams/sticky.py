"""The ``sticky`` task assignor of streams groups: Kafka 4.4's ``StickyTaskAssignor``, in Python.

What it guarantees, and how (the steps are Kafka's, so a Cohort coordinator and a Kafka
broker move the same tasks for the same group):

* **Every task is active exactly once** when the group has members: each subtopology has one
  task per partition up to its ``max_number_of_partitions``.
* **Balanced by quota.** A member may keep or take actives only up to
  ``ceil(remaining actives / members still under quota)``; the quota is recomputed whenever a
  member fills it, so rounding up never starves the last members. Tasks nobody can keep go to
  the least-loaded *process* (tasks per member), and inside it to its least-loaded member.
* **Sticky.** Actives stay with their previous owner while it is under quota, sorted by
  (partition, subtopology) so range-like layouts survive; then go to a previous standby (or
  warm-up) holder, or to a member that reported offsets for the task's state (a restarted
  member whose fresh member id owns nothing), the most caught-up first.
* **Standbys** (``num.standby.replicas``, stateful subtopologies only) never land on a process
  that already holds the task, active or standby. The previous active owner gets a standby
  first (its state is the freshest), then previous standby holders, within the total
  (active + standby) quota; the rest go to the least-loaded processes that lack the task. When
  no such process is left the replica is dropped, as Kafka does (it logs a warning).
* **Ties as Kafka breaks them.** Kafka iterates hash maps and polls priority queues; here
  members and processes are taken in the order a Java ``HashMap`` iterates their ids, and the
  least-loaded process (or member) is polled from a model of Java's ``PriorityQueue``
  (``assignors.java_order``), so equally loaded processes win tasks as they do in Kafka. Members
  whose ids share a hash bucket are taken in id order (Kafka: in the order its group's own
  table yields them).

One difference from Kafka 4.4, taken from Kafka's trunk (the notes' reading): a member's
current warm-up tasks rank with its standbys (4.4 ranks them only through reported offsets).
Kafka 4.4 throws when there are tasks and no members; an empty group gets an empty assignment
here, since there is nobody to give an error to. Rack-aware standby placement
(``rack.aware.assignment.tags``) is not in 4.4's assignor, and not here.
"""

from __future__ import annotations

from collections.abc import Iterable

from assignors.java_order import JavaPriorityQueue, hash_map_order
from assignors.streams.process import ProcessState
from assignors.streams.spec import (
    AssignmentMemberSpec,
    GroupAssignment,
    GroupSpec,
    MemberAssignment,
    TaskAssignorError,
    TaskId,
    TopologyDescriber,
    compact,
    num_standby_replicas,
)

NAME = "sticky"


def _per_member(tasks: int, members: int) -> int:
    """``ceil(tasks / members)``; 0 with no members."""
    return -(-tasks // members) if members > 0 else 0


class _Quota:
    """A per-member cap that tightens as members fill it: Kafka's ``maybeUpdate*PerMember``.

    When a member reaches the cap, it and its tasks leave the pool and the cap is recomputed
    for the rest, so ``ceil`` rounding is paid once, not by every member.
    """

    __slots__ = ("open_members", "per_member", "remaining_tasks")

    def __init__(self, tasks: int, members: int) -> None:
        self.remaining_tasks = tasks
        self.open_members = members
        self.per_member = _per_member(tasks, members)

    def allows(self, count: int) -> bool:
        return count < self.per_member

    def note(self, count: int) -> None:
        if count == self.per_member:
            self.open_members -= 1
            self.remaining_tasks -= count
            self.per_member = _per_member(self.remaining_tasks, self.open_members)


class _Run:
    """The state of one ``assign`` call."""

    def __init__(self, group_spec: GroupSpec, topology: TopologyDescriber) -> None:
        self.num_standby = num_standby_replicas(group_spec.assignment_configs)
        self.actives: list[TaskId] = []
        self.stateful: list[TaskId] = []
        for sub in sorted(topology.subtopologies()):
            n = topology.max_number_of_partitions(sub)
            tasks = [TaskId(sub, p) for p in range(n)]
            self.actives.extend(tasks)
            if topology.is_stateful(sub):
                self.stateful.extend(tasks)
        n_members = len(group_spec.members)
        self.active_quota = _Quota(len(self.actives), n_members)
        self.total_quota = _Quota(
            len(self.actives) + len(self.stateful) * self.num_standby, n_members)

        self.processes: dict[str, ProcessState] = {}
        self.process_of: dict[str, str] = {}
        self.prev_active: dict[TaskId, str] = {}
        ranked: dict[TaskId, list[tuple[int, int, str]]] = {}
        # Kafka's GroupSpec holds the members in a ``new HashMap<>()``.
        member_order = hash_map_order(sorted(group_spec.members))
        for member_id in member_order:
            spec = group_spec.members[member_id]
            pid = spec.process_id
            self.process_of[member_id] = pid
            self.processes.setdefault(pid, ProcessState(pid)).add_member(member_id)
            for sub, parts in spec.active_tasks.items():
                for p in parts:
                    self.prev_active[TaskId(sub, p)] = member_id  # Kafka: the last one put
            _collect_candidates(ranked, spec, member_id)
        # Previous standby/warm-up holders before members known only by their offsets; the
        # most caught-up first; ties in member order (the sort is stable).
        self.prev_standby: dict[TaskId, list[str]] = {
            task: [mid for _, _, mid in sorted(cands, key=lambda c: (c[0], c[1]))]
            for task, cands in ranked.items()
        }
        # ``processIdToState``: a ``new HashMap<>(members)``, one ``computeIfAbsent`` per member.
        self.process_order = hash_map_order(
            (self.process_of[mid] for mid in member_order), len(group_spec.members),
            compute_if_absent=True)

    # -- helpers -------------------------------------------------------------------------

    def count(self, member_id: str) -> int:
        return self.processes[self.process_of[member_id]].task_counts[member_id]

    def least_loaded_prev(self, members: list[str] | None, standby_of: TaskId | None) -> str | None:
        """Kafka's ``findPrevMemberWithLeastLoad``: the best-ranked candidate, displaced only by
        one whose process *and* member are both strictly less loaded. With ``standby_of``,
        candidates whose process already holds that task are skipped."""
        best: str | None = None
        best_process_load = best_member_load = 0.0
        for mid in members or ():
            process = self.processes[self.process_of[mid]]
            if standby_of is not None and process.has_task(standby_of):
                continue
            process_load = process.load
            member_load = process.task_counts[mid]
            lighter = process_load < best_process_load and member_load < best_member_load
            if best is None or lighter:
                best, best_process_load, best_member_load = mid, process_load, member_load
        return best

    def give(self, member_id: str, task: TaskId, active: bool) -> None:
        count = self.processes[self.process_of[member_id]].add_task(member_id, task, active)
        self.after_add(count, active)

    def after_add(self, count: int, active: bool) -> None:
        if active:
            self.active_quota.note(count)
        self.total_quota.note(count)

    def process_queue(self) -> JavaPriorityQueue[ProcessState]:
        """Kafka's ``PriorityQueue`` of the processes by load, filled in its map's order."""
        return JavaPriorityQueue(lambda p: p.load,
                                 (self.processes[pid] for pid in self.process_order))

    # -- actives -------------------------------------------------------------------------

    def assign_active(self) -> None:
        # Range-like current layouts pair equal partitions, so walk partition-major.
        pending = sorted(self.actives, key=lambda t: (t.partition, t.subtopology_id))

        left: list[TaskId] = []
        for task in pending:  # 1. previous owner, within quota
            owner = self.prev_active.get(task)
            if owner is not None and self.active_quota.allows(self.count(owner)):
                self.give(owner, task, True)
            else:
                left.append(task)

        pending, left = left, []
        for task in pending:  # 2. previous standby/warm-up holders, ranked
            holder = self.least_loaded_prev(self.prev_standby.get(task), None)
            if holder is not None and self.active_quota.allows(self.count(holder)):
                self.give(holder, task, True)
            else:
                left.append(task)

        # 3. the rest, subtopology-major, to the least-loaded process's least-loaded member
        left.sort()
        queue = self.process_queue()
        for task in left:
            process = queue.poll()
            if process is None:
                raise TaskAssignorError(f"No process available to assign active task {task}.")
            self.after_add(process.add_task_to_least_loaded_member(task, True), True)
            queue.add(process)

    # -- standbys ------------------------------------------------------------------------

    def assign_standby(self) -> None:
        to_least_loaded: list[tuple[TaskId, int]] = []
        for task in sorted(self.stateful, key=lambda t: (t.partition, t.subtopology_id),
                           reverse=True):
            for i in range(self.num_standby):
                owner = self.prev_active.get(task)
                if owner is not None:
                    process = self.processes[self.process_of[owner]]
                    if not process.has_task(task) and self.total_quota.allows(self.count(owner)):
                        self.give(owner, task, False)
                        continue
                holder = self.least_loaded_prev(self.prev_standby.get(task), task)
                if holder is not None and self.total_quota.allows(self.count(holder)):
                    self.give(holder, task, False)
                    continue
                to_least_loaded.append((task, self.num_standby - i))
                break

        to_least_loaded.sort(reverse=True)
        queue = self.process_queue()
        for task, remaining in to_least_loaded:
            for _ in range(remaining):
                if not self.standby_to_least_loaded(queue, task):
                    break  # no process lacks the task: Kafka drops the replica (and warns)

    def standby_to_least_loaded(self, queue: JavaPriorityQueue[ProcessState],
                                task: TaskId) -> bool:
        """The least-loaded process without ``task`` takes it; False when every process has it.
        Kafka's recursive ``assignStandbyToMemberWithLeastLoad``: the processes polled are added
        back last polled first."""
        polled: list[ProcessState] = []
        placed = False
        while True:
            process = queue.poll()
            if process is None:
                break
            polled.append(process)
            if not process.has_task(task):
                self.after_add(process.add_task_to_least_loaded_member(task, False), False)
                placed = True
                break
        for process in reversed(polled):
            queue.add(process)
        return placed

    # -- result --------------------------------------------------------------------------

    def result(self, member_ids: Iterable[str]) -> GroupAssignment:
        members: dict[str, MemberAssignment] = {}
        for mid in sorted(member_ids):
            process = self.processes[self.process_of[mid]]
            members[mid] = MemberAssignment(
                active_tasks=compact(process.active.get(mid, [])),
                standby_tasks=compact(process.standby.get(mid, [])),
                warmup_tasks={},
            )
        return GroupAssignment(members)


def _collect_candidates(
    ranked: dict[TaskId, list[tuple[int, int, str]]], spec: AssignmentMemberSpec, member_id: str
) -> None:
    """Adds ``member_id`` as a standby-strength candidate of every task it holds as standby or
    warm-up (rank 0), or only reported offsets for (rank 1: state on disk from before a
    restart). Within a rank, larger offset sums (more caught up) first; a held task with no
    reported offset counts as 0, the most lagging."""
    held: set[TaskId] = set()
    for sets in (spec.standby_tasks, spec.warmup_tasks):
        for sub, parts in sets.items():
            for p in parts:
                task = TaskId(sub, p)
                if task in held:
                    continue
                held.add(task)
                offset = spec.task_offsets.get(task, 0)
                ranked.setdefault(task, []).append((0, -offset, member_id))
    for task, offset in spec.task_offsets.items():
        if task not in held:
            ranked.setdefault(task, []).append((1, -offset, member_id))


def check_invariants(assignment: GroupAssignment, process_of: dict[str, str]) -> None:
    """DESIGN.md invariant 8: no task active on two members; no process (so no member) holds a
    standby of a task it holds active, nor two standbys of one task."""
    active_at: dict[TaskId, str] = {}
    for mid, a in assignment.members.items():
        for sub, parts in a.active_tasks.items():
            for p in parts:
                task = TaskId(sub, p)
                assert task not in active_at, f"{task} active on {active_at.get(task)} and {mid}"
                active_at[task] = mid
    held: set[tuple[str, TaskId]] = {(process_of[m], t) for t, m in active_at.items()}
    for mid, a in assignment.members.items():
        for sub, parts in a.standby_tasks.items():
            for p in parts:
                key = (process_of[mid], TaskId(sub, p))
                assert key not in held, f"{key[1]} twice on process {key[0]} (standby on {mid})"
                held.add(key)


class StickyTaskAssignor:
    """Kafka's ``sticky`` streams task assignor. Stateless: one instance serves every group."""

    name = NAME

    def assign(self, group_spec: GroupSpec, topology: TopologyDescriber) -> GroupAssignment:
        run = _Run(group_spec, topology)
        if not group_spec.members:
            return GroupAssignment({})
        run.assign_active()
        if run.num_standby > 0:
            run.assign_standby()
        result = run.result(group_spec.members)
        check_invariants(result, run.process_of)
        return result

    def __repr__(self) -> str:
        return f"StickyTaskAssignor(name={self.name!r})"
