"""Wake-ups: telling a client actor at once that one of its members has a reason to heartbeat.

KIP-848 is pull only: a member learns of a rebalance at its next heartbeat, so a step that
starts elsewhere (a member leaves, another joins) reaches a *stable* member after up to one
heartbeat interval, uniform over it, and a partition released by one member reaches the member
waiting for it only at that member's next heartbeat (the short reconciliation interval). Cohort's
own client actors can do better without costing a stable group anything: a ``ConsumerClient``
hands its handle along with its batched heartbeats, and once a turn's records are durable the
partition sends that actor one fire-and-forget ``wake(member_ids)`` naming the members the
turn gave a reason to heartbeat now: a new target they were not told of, or released
partitions they wait for. The client heartbeats for those members at once. Whom to wake is
the pure shard's decision (``shard.take_wake_ups()``), and so is which requests speak for a
member that may be woken (``shard.wakeable_members``) and which records end a membership
(``shard.departed_members``): this module knows no group type. A group with nothing in
progress wakes nobody, so stable members send exactly the heartbeats they would without this;
clients that give no handle (the Kafka wire gateway's real clients) are unaffected.

Only the runtime knows actors, so the sending lives here, with the map from members to the
client actors that host them. The map is bounded (``MAX_WAKER_MEMBERS``): a member is noted
when its heartbeat arrives, before the shard decides on it, so members the shard refused (or
that vanished without a record) would otherwise stay for good; past the bound the member
heard from longest ago goes first. Forgetting one only costs it its wake-ups (a hint).
"""

from __future__ import annotations

import logging

log = logging.getLogger(__name__)

# Members (group, member) whose client actor is remembered: beyond it, the least recently
# heard from is forgotten.
MAX_WAKER_MEMBERS = 200_000


class Wakers:
    """Per (group, member): the client actor to wake when its target changes."""

    def __init__(self, max_members: int = MAX_WAKER_MEMBERS) -> None:
        assert max_members > 0
        self._max_members = max_members
        # Insertion order = the order members were last heard from (oldest first).
        self._by_member: dict[tuple[str, str], object] = {}

    def __len__(self) -> int:
        return len(self._by_member)

    def note(self, waker: object, members: list[tuple[str, str]]) -> None:
        """Client actor ``waker`` heartbeats for ``members`` (group id, member id)."""
        by_member = self._by_member
        for key in members:
            by_member.pop(key, None)  # moves it to the end: heard from last
            by_member[key] = waker
        while len(by_member) > self._max_members:
            del by_member[next(iter(by_member))]
        assert len(by_member) <= self._max_members

    def forget(self, members: list[tuple[str, str]]) -> None:
        """Forget ``members`` (a durable turn deleted them)."""
        if not self._by_member:
            return
        for key in members:
            self._by_member.pop(key, None)

    def wake(self, members: list[tuple[str, str]]) -> int:
        """Wake the client actors hosting ``members`` (group id, member id), one call per
        actor; members no client handed its handle for are skipped. Returns how many were
        woken."""
        if not self._by_member or not members:
            return 0
        due: dict[object, list[str]] = {}
        for member in members:
            waker = self._by_member.get(member)
            if waker is not None:
                due.setdefault(waker, []).append(member[1])
        for waker, member_ids in due.items():
            try:
                waker.wake.remote(member_ids)  # fire and forget: a dead client costs nothing
            except Exception:  # a wake-up is a hint, never a failure
                log.debug("wake-up not sent", exc_info=True)
        return sum(map(len, due.values()))
