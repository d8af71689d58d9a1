"""A Connect group's units of work as one set: connectors and tasks side by side.

The wire and the records keep connectors and tasks apart (``ConnectorsAndTasks``; a tuple of
names and a ``{connector: (task ids)}`` map). The rules only ever ask set questions (what to
revoke, what is free, is this a subset), so they work on one frozen set of ``(connector,
task)`` pairs where the connector itself is task :data:`CONNECTOR` (-1), as Kafka Connect's
classic assignment writes it. Canonical shapes (sorted, no empty entries) make equal
assignments compare and encode equal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from protocol import messages as m
from protocol.connect.records import TaskMap

CONNECTOR = -1  # the "task id" of a connector instance itself (Kafka Connect's convention)

Unit = tuple[str, int]
Units = frozenset[Unit]
EMPTY: Units = frozenset()


def of(connectors: Iterable[str], tasks: Mapping[str, Iterable[int]]) -> Units:
    """Units from a record's two fields."""
    out = {(c, CONNECTOR) for c in connectors}
    out.update((c, t) for c, ts in tasks.items() for t in ts)
    return frozenset(out)


def split(units: Iterable[Unit]) -> tuple[tuple[str, ...], TaskMap]:
    """A record's two fields from units: sorted connector names, sorted task map."""
    connectors: set[str] = set()
    tasks: dict[str, set[int]] = {}
    for c, t in units:
        if t == CONNECTOR:
            connectors.add(c)
        else:
            tasks.setdefault(c, set()).add(t)
    return tuple(sorted(connectors)), {c: tuple(sorted(ts)) for c, ts in sorted(tasks.items())}


def from_wire(cat: m.ConnectorsAndTasks) -> Units:
    out = {(c, CONNECTOR) for c in cat.connectors}
    out.update((t.connector, t.task) for t in cat.tasks)
    return frozenset(out)


def to_wire(units: Iterable[Unit]) -> m.ConnectorsAndTasks:
    connectors, tasks = split(units)
    return m.ConnectorsAndTasks(
        connectors=list(connectors),
        tasks=[m.ConnectorTaskId(c, t) for c, ts in tasks.items() for t in ts],
    )


def configured(connectors: Mapping[str, int]) -> Units:
    """Every unit of a group whose connectors are ``{name: task_count}``."""
    return frozenset(
        [(c, CONNECTOR) for c in connectors]
        + [(c, t) for c, n in connectors.items() for t in range(n)]
    )


def label(unit: Unit) -> str:
    """How a message names a unit: ``sink`` for a connector, ``sink-2`` for its task 2."""
    c, t = unit
    return c if t == CONNECTOR else f"{c}-{t}"
