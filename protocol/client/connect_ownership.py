"""What a Connect worker runs, the callbacks that start and stop it, and its timeline.

Both Connect client halves (the new protocol's ``ConnectWorkerClient`` and the classic
``ClassicConnectWorkerClient``) move the same thing, a set of connectors and tasks, through the
same three doors: work is *assigned* (start it), *revoked* (stop it, then tell the
coordinator) or *lost* (stop it without telling anyone: the worker may no longer be in the
group). This module is that bookkeeping, written once: the callback of a change runs while the
work is still listed as running (a host stops a task before the worker says it stopped), and
every change goes on the bounded timeline in one format::

    {"t": at_s, "event": "assigned" | "revoked" | "lost", "connectors": [name, ...],
     "tasks": [(connector, task), ...], "epoch": int, "member_id": str}

which ``actors.tools.invariants`` reads (a connector is the unit ``(name, -1)``, Kafka's
``CONNECTOR_TASK``; a task is ``(connector, task)``).
"""

from __future__ import annotations

from collections.abc import Callable

from protocol import messages as m
from protocol.classic.connect_protocol import Work
from protocol.client.timeline import DEFAULT_MAX_EVENTS, Timeline

Task = tuple[str, int]
# on_assigned / on_revoked / on_lost(connectors, tasks), both sorted.
WorkCallback = Callable[[list[str], list[Task]], None]


def work_from_wire(wire: m.ConnectorsAndTasks | None) -> Work:
    if wire is None:
        return Work()
    return Work.of(wire.connectors, ((t.connector, t.task) for t in wire.tasks))


def work_to_wire(work: Work) -> m.ConnectorsAndTasks:
    return m.ConnectorsAndTasks(
        connectors=sorted(work.connectors),
        tasks=[m.ConnectorTaskId(c, t) for c, t in sorted(work.tasks)],
    )


class WorkOwnership:
    """The work one worker runs now, with its callbacks and timeline.

    Guarantees: ``owned`` changes only through ``assign`` and ``end``; ``end`` calls its
    callback before the work leaves ``owned`` (even if the callback raises); every change is
    recorded, oldest events dropped first beyond ``timeline_max_events``.
    """

    def __init__(
        self,
        on_assigned: WorkCallback | None = None,
        on_revoked: WorkCallback | None = None,
        on_lost: WorkCallback | None = None,
        timeline_max_events: int = DEFAULT_MAX_EVENTS,
    ) -> None:
        self.on_assigned, self.on_revoked, self.on_lost = on_assigned, on_revoked, on_lost
        self.owned = Work()
        self.timeline = Timeline(timeline_max_events)

    def assign(self, at_s: float, work: Work, epoch: int, member_id: str) -> None:
        work = work - self.owned
        if not work:
            return
        self.owned = self.owned | work
        self.record(at_s, "assigned", work, epoch, member_id)
        if self.on_assigned is not None:
            self.on_assigned(*_sorted(work))

    def end(self, at_s: float, event: str, work: Work, epoch: int, member_id: str) -> None:
        """Stop ``work`` (``event`` "revoked" or "lost"); what is not owned is ignored."""
        work = work & self.owned
        if not work:
            return
        self.record(at_s, event, work, epoch, member_id)
        callback = self.on_revoked if event == "revoked" else self.on_lost
        try:
            if callback is not None:
                callback(*_sorted(work))
        finally:
            self.owned = self.owned - work

    def record(self, at_s: float, event: str, work: Work, epoch: int, member_id: str) -> None:
        connectors, tasks = _sorted(work)
        self.timeline.append(
            {
                "t": at_s,
                "event": event,
                "connectors": connectors,
                "tasks": tasks,
                "epoch": epoch,
                "member_id": member_id,
            }
        )

    def as_dict(self) -> dict[str, list]:
        """``{"connectors": [...], "tasks": [(connector, task), ...]}``, sorted."""
        connectors, tasks = _sorted(self.owned)
        return {"connectors": connectors, "tasks": tasks}


def _sorted(work: Work) -> tuple[list[str], list[Task]]:
    return sorted(work.connectors), sorted(work.tasks)
