"""A Connect group's work flattened into numbered units, so rounds are array operations.

Unit ``c`` (``0 <= c < C``) is connector ``names[c]``; unit ``task_offsets[c] + t`` is task
``t`` of that connector. Connectors are sorted by name, so the numbering is a function of
the configuration alone and every run of the assignor numbers the same way.

An *owner* array holds one int per unit: a present worker's index (members sorted by member
id), :data:`UNASSIGNED` (free to hand out this round) or :data:`HELD` (a departed worker's
work, running nowhere until it returns or its delay expires).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

UNASSIGNED = -1
HELD = -2


class WorkLayout:
    """The configured connectors and tasks as units ``0 .. num_units - 1``."""

    def __init__(self, connectors: Mapping[str, int]) -> None:
        self.names: list[str] = sorted(connectors)
        self.index: dict[str, int] = {name: c for c, name in enumerate(self.names)}
        counts = [connectors[name] for name in self.names]
        if any(not isinstance(n, int) or n < 0 for n in counts):
            raise ValueError("task counts must be non-negative ints")
        self.task_counts = np.array(counts, dtype=np.int64)
        self.num_connectors = len(self.names)
        self.num_tasks = int(self.task_counts.sum())
        starts = np.concatenate(([0], np.cumsum(self.task_counts)))
        self.task_offsets = (self.num_connectors + starts).astype(np.int64)  # C + 1 entries
        self.num_units = self.num_connectors + self.num_tasks
        # The connector each task unit belongs to: task unit u -> task_connector[u - C].
        self.task_connector = np.repeat(np.arange(self.num_connectors), self.task_counts)
        self._counts = counts
        self._offsets = self.task_offsets.tolist()

    @property
    def connector_units(self) -> slice:
        return slice(0, self.num_connectors)

    @property
    def task_units(self) -> slice:
        return slice(self.num_connectors, self.num_units)

    # -- names <-> units -------------------------------------------------------------------

    def connector_unit(self, name: str) -> int | None:
        """The unit of connector ``name``, ``None`` if it is not configured."""
        return self.index.get(name)

    def task_unit(self, name: str, task: int) -> int | None:
        """The unit of task ``task`` of ``name``, ``None`` if no such task is configured."""
        c = self.index.get(name)
        if c is None or not 0 <= task < self._counts[c]:
            return None
        return self._offsets[c] + task

    def units_of(self, connectors: Iterable[str], tasks: Iterable[tuple[str, int]]) -> list[int]:
        """The configured units among these connectors and tasks; the rest is dropped."""
        index, counts, offsets = self.index, self._counts, self._offsets
        units = [c for c in map(index.get, connectors) if c is not None]
        for name, task in tasks:
            c = index.get(name)
            if c is not None and 0 <= task < counts[c]:
                units.append(offsets[c] + task)
        return units

    def labels(self) -> list[str | tuple[str, int]]:
        """Every unit's name: the connector name, or ``(connector, task)``."""
        labels: list[str | tuple[str, int]] = list(self.names)
        for name, count in zip(self.names, self._counts, strict=True):
            labels.extend((name, t) for t in range(count))
        return labels

    def split(
        self, units: np.ndarray, labels: Sequence[str | tuple[str, int]]
    ) -> tuple[frozenset[str], frozenset[tuple[str, int]]]:
        """Ascending units as (connector names, (connector, task) pairs).

        ``labels`` comes from :meth:`labels`; connector units sort before task units.
        """
        ids = units.tolist()
        first_task = int(np.searchsorted(units, self.num_connectors))
        connectors = frozenset([labels[u] for u in ids[:first_task]])
        tasks = frozenset([labels[u] for u in ids[first_task:]])
        return connectors, tasks  # type: ignore[return-value]

    # -- unit groups for balancing -----------------------------------------------------------

    def connector_groups(self) -> np.ndarray:
        """Connectors form one group: they are balanced across workers as a whole."""
        return np.zeros(self.num_connectors, dtype=np.int64)

    def task_groups(self) -> np.ndarray:
        """Tasks are grouped by connector: each connector's tasks are spread on their own."""
        return self.task_connector.astype(np.int64)


def owners_by_worker(owner: np.ndarray, num_workers: int) -> list[np.ndarray]:
    """For each worker index, the (ascending) units it owns."""
    assigned = np.flatnonzero(owner >= 0)
    order = np.argsort(owner[assigned], kind="stable")
    units = assigned[order]
    bounds = np.searchsorted(owner[units], np.arange(num_workers + 1))
    return [units[bounds[w] : bounds[w + 1]] for w in range(num_workers)]
