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
the pure shard's decision (``protocol/consumer/wake_ups.py``, ``shard.take_wake_ups()``); a
group with nothing in progress wakes nobody, so stable members send exactly the heartbeats
they would without this; clients that give no handle (the Kafka wire gateway's real clients)
are unaffected.

Only the runtime knows actors, so the sending lives here, with the map from members to the
client actors that host them.
"""

from __future__ import annotations

import logging

from protocol.consumer.messages import ConsumerGroupHeartbeatRequest
from protocol.records import ConsumerGroupMemberMetadataKey, Record

log = logging.getLogger(__name__)


class Wakers:
    """Per (group, member): the client actor to wake when its target changes."""

    def __init__(self) -> None:
        self._by_member: dict[tuple[str, str], object] = {}

    def __len__(self) -> int:
        return len(self._by_member)

    def note(self, waker: object, requests: list[object]) -> None:
        """A batch arrived from client actor ``waker``: its heartbeating members are its."""
        for key in _heartbeating(requests):
            self._by_member[key] = waker

    def forget(self, records: list[Record]) -> None:
        """Forget the members whose metadata ``records`` (a durable turn's) deleted."""
        if not self._by_member:
            return
        for record in records:
            key = record.key
            if type(key) is ConsumerGroupMemberMetadataKey and record.value is None:
                self._by_member.pop((key.group_id, key.member_id), None)

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


def _heartbeating(requests: list[object]) -> list[tuple[str, str]]:
    return [
        (req.group_id, req.member_id)
        for req in requests
        if type(req) is ConsumerGroupHeartbeatRequest and req.member_id
    ]
