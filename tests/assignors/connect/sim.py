"""A Connect group driven round by round, as the coordinator would drive the assignor.

Each worker's target and metadata are what the last round installed for it: the
coordinator's view (PrepareAssignment hands back the installed metadata and the current
targets). Joining, leaving and changing connectors only change the input of the next round.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from assignors.client.interfaces import ConnectGroup, ConnectGroupMember
from assignors.connect import ConnectRound, IncrementalCooperativeAssignor


@dataclass
class Worker:
    member_id: str
    instance_id: str | None = None
    maximum_version: int | None = 2  # the coordinator knows each worker's range
    connectors: frozenset[str] = frozenset()
    tasks: frozenset[tuple[str, int]] = frozenset()
    version: int = 2  # what the assignor's metadata() reports before any assignment
    metadata: bytes = b""

    def as_member(self) -> ConnectGroupMember:
        return ConnectGroupMember(
            member_id=self.member_id,
            instance_id=self.instance_id,
            version=self.version,
            metadata=self.metadata,
            maximum_version=self.maximum_version,
            owned_connectors=self.connectors,
            owned_tasks=self.tasks,
        )


@dataclass
class ConnectCluster:
    connectors: dict[str, int]
    assignor: IncrementalCooperativeAssignor = field(default_factory=IncrementalCooperativeAssignor)
    workers: dict[str, Worker] = field(default_factory=dict)
    last: ConnectRound | None = None

    def join(self, member_id: str, instance_id: str | None = None, **kw) -> Worker:
        worker = Worker(member_id, instance_id, **kw)
        self.workers[member_id] = worker
        return worker

    def leave(self, member_id: str) -> Worker:
        return self.workers.pop(member_id)

    def group(self, now_ms: int) -> ConnectGroup:
        members = tuple(w.as_member() for w in self.workers.values())
        return ConnectGroup(members=members, connectors=dict(self.connectors), now_ms=now_ms)

    def round(self, now_ms: int, assignor: IncrementalCooperativeAssignor | None = None):
        result = (assignor or self.assignor).plan(self.group(now_ms))
        for member in result.members:
            worker = self.workers[member.member_id]
            worker.connectors, worker.tasks = member.connectors, member.tasks
            worker.version, worker.metadata = member.version, member.metadata
        self.last = result
        return result

    # -- views -------------------------------------------------------------------------

    def tasks_of(self, member_id: str) -> frozenset[tuple[str, int]]:
        return self.workers[member_id].tasks

    def task_counts(self) -> dict[str, int]:
        return {m: len(w.tasks) for m, w in self.workers.items()}

    def connector_counts(self) -> dict[str, int]:
        return {m: len(w.connectors) for m, w in self.workers.items()}

    def per_connector(self, connector: str) -> dict[str, int]:
        return {m: sum(1 for c, _ in w.tasks if c == connector) for m, w in self.workers.items()}

    def all_tasks(self) -> Counter:
        return Counter(t for w in self.workers.values() for t in w.tasks)

    def all_connectors(self) -> Counter:
        return Counter(c for w in self.workers.values() for c in w.connectors)

    def configured_tasks(self) -> set[tuple[str, int]]:
        return {(c, t) for c, n in self.connectors.items() for t in range(n)}
