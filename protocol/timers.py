"""Deadlines without a clock: the shard's timer wheel, driven by ``tick(now_ms)``.

The pure core never reads time. It records *when* something must happen (a member's session
expires, a revocation is overdue) and the runtime asks ``next_deadline_ms`` how long it may
sleep. Rescheduling a key replaces its deadline; superseded heap entries are skipped lazily and
compacted once they outnumber live ones, so the heap stays bounded by the live timers.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable

COMPACT_SLACK = 1024


class Timers:
    def __init__(self) -> None:
        self._deadline: dict[Hashable, int] = {}
        self._heap: list[tuple[int, int, Hashable]] = []
        self._seq = 0

    def schedule(self, key: Hashable, deadline_ms: int) -> None:
        self._deadline[key] = deadline_ms
        self._seq += 1
        heapq.heappush(self._heap, (deadline_ms, self._seq, key))
        if len(self._heap) > 2 * len(self._deadline) + COMPACT_SLACK:
            self._compact()

    def schedule_many(self, entries: list[tuple[Hashable, int]]) -> None:
        """``schedule`` each (key, deadline) in turn, the heap rebuilt once (a load arms a
        session timer per member at once)."""
        deadline, heap, seq = self._deadline, self._heap, self._seq
        deadline.update(entries)
        heap += [(at, seq + i, key) for i, (key, at) in enumerate(entries, 1)]
        self._seq = seq + len(entries)
        heapq.heapify(heap)
        if len(heap) > 2 * len(deadline) + COMPACT_SLACK:
            self._compact()

    def cancel(self, key: Hashable) -> None:
        self._deadline.pop(key, None)

    def deadline(self, key: Hashable) -> int | None:
        return self._deadline.get(key)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._deadline

    def __len__(self) -> int:
        return len(self._deadline)

    def next_deadline_ms(self) -> int | None:
        self._drop_stale_top()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now_ms: int, limit: int | None = None) -> list[Hashable]:
        """Remove and return the keys due at ``now_ms``, earliest first, at most ``limit``."""
        due: list[Hashable] = []
        while limit is None or len(due) < limit:
            self._drop_stale_top()
            if not self._heap or self._heap[0][0] > now_ms:
                return due
            _, _, key = heapq.heappop(self._heap)
            del self._deadline[key]
            due.append(key)
        return due

    def _drop_stale_top(self) -> None:
        while self._heap:
            deadline, _, key = self._heap[0]
            if self._deadline.get(key) == deadline:
                return
            heapq.heappop(self._heap)

    def _compact(self) -> None:
        live = {}
        for deadline, seq, key in self._heap:
            if self._deadline.get(key) == deadline and key not in live:
                live[key] = (deadline, seq, key)
        self._heap = list(live.values())
        heapq.heapify(self._heap)
