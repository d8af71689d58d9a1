"""What a Connect worker runs, the callbacks that start and stop it, and its timeline.

Both Connect client halves (the new protocol's ``ConnectWorkerClient`` and the classic
``ClassicConnectWorkerClient``) move the same thing, a set of connectors and tasks, through the
same three doors: work is *assigned* (start it), *revoked* (stop it, then tell the
coordinator) or *lost* (stop it without telling anyone: the worker may no longer be in the
group). This module is that unit: the bookkeeping itself is ``protocol/client/ownership.py`` (the
callback of a change runs while the work is still listed as running, so a host stops a task
before the worker says it stopped), and every change goes on the bounded timeline as::

    {"t": at_s, "event": "assigned" | "revoked" | "lost", "connectors": [name, ...],
     "tasks": [(connector, task), ...], "epoch": int, "member_id": str}

which ``actors.tools.invariants`` reads (a connector is the unit ``(name, -1)``, Kafka's
``CONNECTOR_TASK``; a task is ``(connector, task)``).
"""

from __future__ import annotations

from collections.abc import Callable

from protocol import messages as m
from protocol.classic.connect_protocol import Work
from protocol.client.ownership import Ownership

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


class WorkOwnership(Ownership[Work]):
    """The work one worker runs now: connectors and tasks, shown to the callbacks as
    ``(connectors, tasks)``, both sorted, and on the timeline as their two lists. Built as
    ``WorkOwnership(on_assigned, on_revoked, on_lost, timeline_max_events)``."""

    EMPTY = Work()

    def callback_args(self, units: Work) -> tuple:
        return _sorted(units)

    def fields(self, units: Work) -> dict:
        connectors, tasks = _sorted(units)
        return {"connectors": connectors, "tasks": tasks}

    def view(self) -> dict[str, list]:
        """``{"connectors": [...], "tasks": [(connector, task), ...]}``, sorted."""
        return self.fields(self.owned)

    as_dict = view


def _sorted(work: Work) -> tuple[list[str], list[Task]]:
    return sorted(work.connectors), sorted(work.tasks)
