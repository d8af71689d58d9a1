"""Per-process bookkeeping for the sticky task assignor.

Kafka Streams runs one *process* (one ``process_id``, one state directory) with one or more
members (stream threads). State is shared by the members of a process, so the assignor
balances first across processes -- by ``load``, tasks per member of the process -- and only
then across the members inside one. A process never holds two copies of a task (an active and
a standby, or two standbys): that would be the same state on the same disk twice.

Ties between equally loaded members of a process go as in Kafka's ``ProcessState``: a
``PriorityQueue`` of its ``HashMap`` of members (``assignors.java_order``), built when first
needed and kept until a task goes to a named member.
"""

from __future__ import annotations

from assignors.java_order import JavaPriorityQueue, hash_map_order
from assignors.streams.spec import TaskId


class ProcessState:
    """The tasks handed to one process's members so far, and its load."""

    __slots__ = (
        "_by_count",
        "active",
        "process_id",
        "standby",
        "task_count",
        "task_counts",
        "tasks",
    )

    def __init__(self, process_id: str) -> None:
        self.process_id = process_id
        self.task_counts: dict[str, int] = {}  # member id -> tasks (active + standby)
        self.active: dict[str, list[TaskId]] = {}
        self.standby: dict[str, list[TaskId]] = {}
        self.tasks: set[TaskId] = set()
        self.task_count = 0
        # Kafka's ``membersByLoad``: [member id, task count] entries, built lazily; dropped when
        # a task goes to a named member.
        self._by_count: JavaPriorityQueue[list] | None = None

    def add_member(self, member_id: str) -> None:
        self.task_counts[member_id] = 0
        self._by_count = None

    @property
    def capacity(self) -> int:
        """Members in the process (Kafka counts one unit of capacity per member)."""
        return len(self.task_counts)

    @property
    def load(self) -> float:
        """Tasks per member; the correctly rounded quotient, so equal ratios compare equal."""
        return self.task_count / self.capacity

    def has_task(self, task: TaskId) -> bool:
        return task in self.tasks

    def add_task(self, member_id: str, task: TaskId, active: bool) -> int:
        """Gives ``task`` to ``member_id``; returns the member's new task count."""
        self._by_count = None
        return self._add(member_id, task, active)

    def add_task_to_least_loaded_member(self, task: TaskId, active: bool) -> int:
        """Gives ``task`` to the member with the fewest tasks (ties: Kafka's queue order);
        returns that member's new task count."""
        if len(self.task_counts) == 1:
            return self._add(next(iter(self.task_counts)), task, active)
        if self._by_count is None:
            # ``memberToTaskCounts`` is a ``new HashMap<>()`` filled in member order.
            self._by_count = JavaPriorityQueue(
                lambda entry: entry[1],
                ([mid, self.task_counts[mid]] for mid in hash_map_order(self.task_counts)))
        entry = self._by_count.poll()
        assert entry is not None
        entry[1] = self._add(entry[0], task, active)
        self._by_count.add(entry)
        return entry[1]

    def _add(self, member_id: str, task: TaskId, active: bool) -> int:
        assert task not in self.tasks, f"process {self.process_id} already holds {task}"
        self.tasks.add(task)
        self.task_count += 1
        (self.active if active else self.standby).setdefault(member_id, []).append(task)
        count = self.task_counts[member_id] + 1
        self.task_counts[member_id] = count
        return count
