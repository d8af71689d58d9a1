"""Synthetic Connect work: what each running connector and task did, and when.

Cohort runs no real connectors, so a worker's connectors and tasks do synthetic work: each
unit counts records at ``records_per_s`` while it runs. What is real is the evidence: every
stretch of time a unit ran on this worker is reported as a ``ran`` event::

    {"t": at_s, "event": "ran", "connector": name, "task": task (-1: the connector itself),
     "from": start_s, "to": end_s, "work": records, "member_id": worker id}

A unit running on two workers at once shows as two overlapping ranges of the same unit
(``actors.tools.invariants.check_connect_work``). A long run is reported in pieces every
``report_interval_s`` (``advance``), so a worker killed mid-run still leaves most of its
history in its file. Pure, like the client halves: the caller passes the time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from protocol.client.timeline import DEFAULT_MAX_EVENTS, Timeline

Unit = tuple[str, int]  # (connector, task); task -1 is the connector itself
CONNECTOR = -1


@dataclass
class _Running:
    since_s: float  # start of the range not reported yet
    carry: float = 0.0  # fractional records owed to the next range


class TaskWork:
    """The units this worker runs now and the ``ran`` ranges of everything it ran.

    Guarantees: ranges of one unit on this worker never overlap and leave no gap while it
    runs; a unit stopped is reported up to the stop; events are bounded (oldest dropped
    first) with ``recorded`` counting all of them.
    """

    def __init__(self, member_id: str, records_per_s: float = 50.0,
                 report_interval_s: float = 1.0, max_events: int = DEFAULT_MAX_EVENTS) -> None:
        if records_per_s < 0 or report_interval_s <= 0:
            raise ValueError("records_per_s must be >= 0 and report_interval_s > 0")
        self.member_id = member_id
        self.records_per_s, self.report_interval_s = records_per_s, report_interval_s
        self.running: dict[Unit, _Running] = {}
        self.records: dict[Unit, int] = {}  # every record each unit processed here
        self._events = Timeline(max_events)

    @property
    def events(self) -> list[dict]:
        return self._events.events

    @property
    def recorded(self) -> int:
        return self._events.recorded

    @staticmethod
    def units(connectors: Iterable[str], tasks: Iterable[tuple[str, int]]) -> list[Unit]:
        return [(c, CONNECTOR) for c in connectors] + [(c, int(t)) for c, t in tasks]

    def start(self, units: Iterable[Unit], now_s: float) -> None:
        for unit in units:
            self.running.setdefault(tuple(unit), _Running(now_s))

    def stop(self, units: Iterable[Unit], now_s: float) -> None:
        for unit in units:
            run = self.running.pop(tuple(unit), None)
            if run is not None:
                self._report(tuple(unit), run, now_s)

    def stop_all(self, now_s: float) -> None:
        self.stop(list(self.running), now_s)

    def advance(self, now_s: float, everything: bool = False) -> None:
        """Report every range older than ``report_interval_s`` (all of them with
        ``everything``); the work goes on."""
        for unit, run in self.running.items():
            if everything or now_s - run.since_s >= self.report_interval_s:
                self._report(unit, run, now_s)
                run.since_s = now_s

    def _report(self, unit: Unit, run: _Running, now_s: float) -> None:
        end_s = max(now_s, run.since_s)
        exact = (end_s - run.since_s) * self.records_per_s + run.carry
        work = int(exact)
        run.carry = exact - work
        self.records[unit] = self.records.get(unit, 0) + work
        self._events.append(
            {
                "t": end_s,
                "event": "ran",
                "connector": unit[0],
                "task": unit[1],
                "from": run.since_s,
                "to": end_s,
                "work": work,
                "member_id": self.member_id,
            }
        )
