"""Wake-ups: telling a client actor at once that one of its members has a new target.

KIP-848 is pull only: a member learns of a rebalance at its next heartbeat, so a step that
starts elsewhere (a member leaves, another joins) reaches a *stable* member after up to one
heartbeat interval, uniform over it. The short reconciliation interval cannot help there: the
stable member has nothing waiting until it hears of the step. Cohort's own client actors can
do better without costing a stable group anything: a ``ConsumerClient`` hands its handle along
with its batched heartbeats, and once a turn's records are durable the partition sends that
actor one fire-and-forget ``wake(member_ids)`` naming the members whose *target* the turn
changed, except those whose own request was in the turn (their reply carries it already). The
client heartbeats for those members at once. A group with no target change wakes nobody, so
stable members send exactly the heartbeats they would without this; clients that give no
handle (the Kafka wire gateway's real clients) are unaffected.

Only the runtime knows actors, so this lives in ``actors/``; the decision what to wake for is
read from the records the pure shard already produced.
"""

from __future__ import annotations

import logging

from protocol.consumer.messages import ConsumerGroupHeartbeatRequest
from protocol.records import (
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    Record,
)

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

    def wake(self, records: list[Record], requests: list[object]) -> int:
        """After a turn's records are durable: wake the owners of the targets it changed,
        except members with a request in it (``requests``); returns how many were woken.
        Forgets members whose metadata the turn deleted."""
        if not self._by_member:
            return 0
        asked: set[tuple[str, str]] | None = None  # made only if a target changed
        due: dict[object, list[str]] = {}
        for record in records:
            key = record.key
            if type(key) is ConsumerGroupTargetAssignmentMemberKey:
                member = (key.group_id, key.member_id)
                waker = self._by_member.get(member)
                if waker is None or record.value is None:
                    continue
                if asked is None:
                    asked = set(_heartbeating(requests))
                if member not in asked:
                    due.setdefault(waker, []).append(key.member_id)
            elif type(key) is ConsumerGroupMemberMetadataKey and record.value is None:
                self._by_member.pop((key.group_id, key.member_id), None)
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
