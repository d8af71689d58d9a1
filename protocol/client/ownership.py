"""What a member owns, the callbacks that start and stop it, and its timeline: written once.

Every client half moves one kind of unit through the same three doors: units are *assigned*
(start using them), *revoked* (stop, then tell the coordinator) or *lost* (stop without telling
anyone: the member may no longer be in the group). What differs is only the unit (topic
partitions for consumers, connectors and tasks for Connect workers) and how it is shown to the
callbacks and on the timeline. ``Ownership`` is the bookkeeping for any unit set that has set
algebra (``|``, ``-``, ``&``, truth): ``PartitionOwnership`` here for both consumers,
``WorkOwnership`` (``protocol/client/connect_ownership.py``) for both Connect workers.

Each timeline event is ``{"t": at_s, "event": "assigned" | "revoked" | "lost", ...the units'
fields..., "epoch": int, "member_id": str}``, which ``actors.tools.invariants`` reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Generic, TypeVar

from protocol.client.timeline import DEFAULT_MAX_EVENTS, Timeline

U = TypeVar("U")  # a set of units with |, -, & and truth (a frozenset, a Work)
TopicPartition = tuple[str, int]
Partitions = list[TopicPartition]  # sorted
Callback = Callable[[Partitions], None]


class Ownership(Generic[U]):
    """The units one member uses now, with its callbacks and bounded timeline.

    Guarantees: ``owned`` changes only through ``assign`` and ``end``; ``assign`` lists the
    units before its callback runs; ``end`` calls its callback while the units are still
    listed (even if the callback raises, they leave afterwards); units not owned are ignored
    by ``end`` and owned ones by ``assign``; every change is recorded, oldest events dropped
    first beyond ``timeline_max_events``.
    """

    EMPTY: ClassVar[Any]  # no units

    def __init__(
        self,
        on_assigned: Callable[..., Any] | None = None,
        on_revoked: Callable[..., Any] | None = None,
        on_lost: Callable[..., Any] | None = None,
        timeline_max_events: int = DEFAULT_MAX_EVENTS,
    ) -> None:
        self.on_assigned, self.on_revoked, self.on_lost = on_assigned, on_revoked, on_lost
        self.owned: U = self.EMPTY
        self.timeline = Timeline(timeline_max_events)

    def assign(self, at_s: float, units: U, epoch: int, member_id: str) -> None:
        units = units - self.owned  # type: ignore[operator]
        if not units:
            return
        self.owned = self.owned | units  # type: ignore[operator]
        self.record(at_s, "assigned", units, epoch, member_id)
        if self.on_assigned is not None:
            self.on_assigned(*self.callback_args(units))

    def end(self, at_s: float, event: str, units: U, epoch: int, member_id: str) -> None:
        """Stop using ``units`` (``event`` "revoked" or "lost")."""
        units = units & self.owned  # type: ignore[operator]
        if not units:
            return
        self.record(at_s, event, units, epoch, member_id)
        callback = self.on_revoked if event == "revoked" else self.on_lost
        try:
            if callback is not None:
                callback(*self.callback_args(units))
        finally:
            self.owned = self.owned - units  # type: ignore[operator]

    def end_all(self, at_s: float, event: str, epoch: int, member_id: str) -> None:
        self.end(at_s, event, self.owned, epoch, member_id)

    def record(self, at_s: float, event: str, units: U, epoch: int, member_id: str) -> None:
        fields = self.fields(units)
        self.timeline.append(
            {"t": at_s, "event": event, **fields, "epoch": epoch, "member_id": member_id}
        )

    def view(self) -> Any:
        """What is owned, as a host reads it."""
        raise NotImplementedError

    def callback_args(self, units: U) -> tuple:
        """The callbacks' arguments for ``units``."""
        raise NotImplementedError

    def fields(self, units: U) -> dict:
        """The timeline event's fields for ``units``."""
        raise NotImplementedError


class PartitionOwnership(Ownership[frozenset[TopicPartition]]):
    """A consumer's topic partitions; ``render`` shows them to callbacks and the timeline
    (sorted ``(topic, partition)`` pairs; a KIP-848 consumer shows topic names for ids)."""

    EMPTY: ClassVar[frozenset[TopicPartition]] = frozenset()

    def __init__(self, render: Callable[[Iterable[TopicPartition]], Partitions], *args) -> None:
        """``args``: ``Ownership``'s (the callbacks and the timeline bound)."""
        super().__init__(*args)
        self.render = render

    def view(self) -> Partitions:
        return self.render(self.owned)

    def callback_args(self, units: frozenset[TopicPartition]) -> tuple:
        return (self.render(units),)

    def fields(self, units: frozenset[TopicPartition]) -> dict:
        return {"partitions": self.render(units)}
