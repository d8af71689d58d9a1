"""Why each group rebalanced: KIP-800's "memorize the cause of the state transition".

Every group type writes here: a classic group entering PreparingRebalance, a consumer or
Connect group bumping its epoch. The history is kept per group id, apart from the group
objects, because it outlives a group's conversion between protocols (and back). It is bounded
(``group_rebalance_history_max`` causes per group) and persisted as a record of its own, so a
reloaded partition shows the same history.
"""

from __future__ import annotations

from collections.abc import Callable

from protocol.records import (
    GroupRebalanceHistoryKey,
    GroupRebalanceHistoryValue,
    RebalanceCauseEntry,
    Record,
)


class RebalanceHistory:
    """The causes of each group's recent rebalances, oldest first.

    It changes only through its records: ``remember`` emits one, and ``replay`` (live or on
    load) applies it, so replaying a log rebuilds the same history.
    """

    def __init__(self, emit: Callable[[Record], None], limit: Callable[[], int]) -> None:
        self._emit = emit
        self._limit = limit
        self.causes: dict[str, list[RebalanceCauseEntry]] = {}

    def of(self, group_id: str) -> list[RebalanceCauseEntry]:
        return self.causes.get(group_id, [])

    def __contains__(self, group_id: object) -> bool:
        return group_id in self.causes

    def remember(
        self,
        group_id: str,
        generation_id: int,
        reason: str,
        now_ms: int,
        member_id: str | None = None,
        instance_id: str | None = None,
    ) -> None:
        cause = RebalanceCauseEntry(now_ms, generation_id, reason, member_id, instance_id)
        kept = [*self.of(group_id), cause][-self._limit() :]
        self._emit(
            Record(GroupRebalanceHistoryKey(group_id), GroupRebalanceHistoryValue(tuple(kept)))
        )

    def forget(self, group_id: str) -> None:
        """Tombstone the history (the group is deleted)."""
        self._emit(Record(GroupRebalanceHistoryKey(group_id), None))

    def replay(self, record: Record) -> None:
        key, value = record.key, record.value
        assert isinstance(key, GroupRebalanceHistoryKey), key
        if value is None:
            self.causes.pop(key.group_id, None)
        else:
            self.causes[key.group_id] = list(value.causes)
