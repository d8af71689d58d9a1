"""Where a client actor's timeline goes when it must outlive the actor: a JSON-lines file.

A chaos run kills client actors and still has to check what they owned when, so both client
actors (``ConsumerClient``, ``ClassicConsumer``) can append their members' timeline events to a
file (``timeline_path``) as they happen. They share this one sink so the subtle part is written
once: a member's timeline is bounded (``protocol.client.timeline``), so once full its length
stops growing and "the events after the first ``flushed``" finds nothing new; the new events
are the last ``recorded - flushed`` of it, ``recorded`` counting every event ever recorded.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Hashable, Sequence
from typing import Any


class TimelineSink:
    """Appends each source's new timeline events to one JSON-lines file.

    Guarantees: every event a source recorded is written once, in order, as long as the sink
    is flushed before the source drops it (a source keeps its newest events, so flushing at
    least every ``max_events`` records loses nothing); an event dropped before a flush is
    skipped, never written twice. With no path the sink does nothing.
    """

    def __init__(self, path: str | os.PathLike | None) -> None:
        self.path = path
        self._flushed: dict[Hashable, int] = {}  # source -> events of it already written
        self._lines: list[str] = []

    def collect(self, source: Hashable, recorded: int, events: Callable[[], Sequence[dict]],
                **fields: Any) -> None:
        """Take the events of ``source`` recorded since its last collect, each with ``fields``
        added. ``recorded`` is how many events the source ever recorded; ``events`` reads
        what it keeps now, oldest first (called only when something is new: a timeline's
        copy costs up to its bound)."""
        if self.path is None:
            return
        new = recorded - self._flushed.get(source, 0)
        if new <= 0:
            return
        self._flushed[source] = recorded
        kept = events()
        for e in kept[max(0, len(kept) - new):]:
            self._lines.append(json.dumps(dict(e, **fields)))

    def write(self) -> None:
        """Append what was collected to the file (one write, so it survives this process)."""
        if not self._lines:
            return
        with open(self.path, "a") as f:
            f.write("\n".join(self._lines) + "\n")
        self._lines.clear()
