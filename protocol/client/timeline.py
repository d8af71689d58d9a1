"""A member's timeline: what it owned when, bounded, with a count of everything recorded.

Both client halves (KIP-848 and classic) record the moments a member's ownership changed
("assigned", "revoked", "lost"): the invariant checks and the ownership plots are built from
them. A member may live for days, so the history is bounded (the oldest events are dropped
first) and keeps memory flat. A bounded history alone cannot tell a reader which events are
new once it is full (its length stops growing), so it also counts every event it ever
recorded: a host appending the timeline to a file takes the last ``recorded - flushed``.
"""

from __future__ import annotations

from collections import deque

# Events a member keeps by default: days of rebalances for one member, a few tens of MB at most.
DEFAULT_MAX_EVENTS = 100_000


class Timeline:
    """The newest ``max_events`` events, oldest first, and how many were ever recorded."""

    def __init__(self, max_events: int = DEFAULT_MAX_EVENTS) -> None:
        if max_events <= 0:
            raise ValueError("the timeline bound must be positive")
        self._events: deque[dict] = deque(maxlen=max_events)
        self.recorded = 0

    def append(self, event: dict) -> None:
        self._events.append(event)
        self.recorded += 1

    @property
    def events(self) -> list[dict]:
        """The events kept, oldest first (a copy)."""
        return list(self._events)
