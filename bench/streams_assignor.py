"""Time the sticky streams task assignor: one ``assign`` at 100 members x 1,000 tasks and at
1,000 members x 10,000 tasks.

Run: ``python bench/streams_assignor.py``. The group has two members (stream threads) per
process; the topology has ten subtopologies of equal size, every other one stateful, and
``num.standby.replicas`` is 1. For each size it prints, in milliseconds of this process's CPU
time (``time.process_time``; the machine is shared, so wall time would measure the neighbours):

* ``first``: the group's first assignment, nobody holding anything;
* ``stable``: re-running on that result (what every heartbeat-triggered recomputation of an
  unchanged group costs);
* ``leave``: the reassignment after one member left, and ``moved``, the actives that changed
  owner (a sticky assignor moves exactly the leaver's).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path

# The repository root first: ``bench/assignors.py`` would otherwise shadow the package.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from assignors.streams import AssignmentMemberSpec, GroupAssignment, GroupSpec, StickyTaskAssignor

SUBTOPOLOGIES = 10


@dataclass(frozen=True)
class EvenTopology:
    tasks_per_subtopology: int

    def subtopologies(self) -> list[str]:
        return [str(i) for i in range(SUBTOPOLOGIES)]

    def max_number_of_partitions(self, subtopology_id: str) -> int:
        return self.tasks_per_subtopology

    def is_stateful(self, subtopology_id: str) -> bool:
        return int(subtopology_id) % 2 == 0


def spec(process: str, current=None) -> AssignmentMemberSpec:
    active = dict(current.active_tasks) if current else {}
    standby = dict(current.standby_tasks) if current else {}
    return AssignmentMemberSpec(None, None, active, standby, {}, process)


def timed(members, topology) -> tuple[GroupAssignment, float]:
    start = time.process_time()
    result = StickyTaskAssignor().assign(
        GroupSpec(members, {"num.standby.replicas": "1"}), topology)
    return result, (time.process_time() - start) * 1000


def actives(result: GroupAssignment) -> dict[tuple[str, int], str]:
    return {(s, p): m for m, a in result.members.items()
            for s, ps in a.active_tasks.items() for p in ps}


def run(n_members: int, n_tasks: int) -> None:
    topology = EvenTopology(n_tasks // SUBTOPOLOGIES)
    process = {f"member-{i:05d}": f"process-{i // 2:05d}" for i in range(n_members)}
    members = {m: spec(p) for m, p in process.items()}
    first, first_ms = timed(members, topology)
    current = {m: spec(p, first.members[m]) for m, p in process.items()}
    stable, stable_ms = timed(current, topology)
    assert stable == first
    leaver = next(iter(current))
    rest = {m: s for m, s in current.items() if m != leaver}
    after, leave_ms = timed(rest, topology)
    before = actives(first)
    moved = sum(1 for t, m in actives(after).items() if before[t] != m)
    had = sum(len(ps) for ps in first.members[leaver].active_tasks.values())
    print(f"{n_members:>7} {n_tasks:>6} {first_ms:>9.1f} {stable_ms:>9.1f} {leave_ms:>9.1f}"
          f" {moved:>6} {had:>10}")


def main() -> None:
    print(f"{'members':>7} {'tasks':>6} {'first ms':>9} {'stable ms':>9} {'leave ms':>9}"
          f" {'moved':>6} {'leaver had':>10}")
    for n_members, n_tasks in ((100, 1_000), (1_000, 10_000)):
        run(n_members, n_tasks)


if __name__ == "__main__":
    main()
