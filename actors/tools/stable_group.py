"""When a group is stable, as a benchmark sees it from the clients' side (``bench/groups.py``).

Every system is judged by the same test, on what the clients have handed their application
(librdkafka's ``on_assign`` / ``on_revoke``, the Java consumer's rebalance listener: both
incremental under KIP-848), never on what a coordinator says of itself: the assignments are
disjoint, cover every partition of the topic, and give each live member ⌊P/M⌋ or ⌈P/M⌉ of
them. With as many partitions as members that is exactly one each: every member has joined
and been told its assignment.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field


@dataclass
class Owners:
    """Which partitions each member's client has handed its application, and the moment the
    group is stable (see the module docstring): disjoint, covering ``partitions``, each live
    member holding ⌊P/M⌋ or ⌈P/M⌉. Updated from the clients' callbacks (any thread); a
    callback may come before the member is declared live (``expect``), never after it was
    retired (a leaver's last revocation is not an owner's)."""

    partitions: int
    members: set[object] = field(default_factory=set)
    retired: set[object] = field(default_factory=set)
    owned: dict[object, set[int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stable_event: threading.Event = field(default_factory=threading.Event)
    stable_at: float | None = None

    def expect(self, members: set[object]) -> None:
        """The live members from now on; a member no longer among them is retired and what it
        held is no one's."""
        with self.lock:
            gone = self.members - set(members)
            self.retired |= gone
            for m in gone:
                self.owned.pop(m, None)
            self.members = set(members)
            self.stable_at = None
            self.stable_event.clear()
            self._check()

    def add(self, member: object, parts: list[int]) -> None:
        with self.lock:
            if member not in self.retired:
                self.owned.setdefault(member, set()).update(parts)
                self._check()

    def remove(self, member: object, parts: list[int]) -> None:
        with self.lock:
            if member not in self.retired:
                self.owned.setdefault(member, set()).difference_update(parts)
                self._check()

    def _check(self) -> None:
        if self.stable_at is not None or not self.members:
            return
        low, high = self.partitions // len(self.members), -(-self.partitions // len(self.members))
        total = 0
        seen: set[int] = set()
        for m in self.members:
            held = self.owned.get(m, set())
            if not low <= len(held) <= high:
                return
            total += len(held)
            seen |= held
        if total == self.partitions == len(seen):
            self.stable_at = time.perf_counter()
            self.stable_event.set()

    def holding(self) -> tuple[int, int]:
        """How many members hold a partition, and how many partitions they hold, now."""
        with self.lock:
            held = [len(parts) for parts in self.owned.values() if parts]
        return len(held), sum(held)

    def unbalanced(self) -> dict[object, list[int]]:
        """The live members holding fewer than ⌊P/M⌋ or more than ⌈P/M⌉ partitions, with what
        they hold: why the group is not stable yet."""
        with self.lock:
            if not self.members:
                return {}
            low = self.partitions // len(self.members)
            high = -(-self.partitions // len(self.members))
            return {m: sorted(self.owned.get(m, ())) for m in self.members
                    if not low <= len(self.owned.get(m, ())) <= high}

    def wait(self, timeout_s: float) -> float | None:
        """The moment the group became stable (``perf_counter``), or None after ``timeout_s``."""
        self.stable_event.wait(timeout_s)
        with self.lock:
            return self.stable_at
