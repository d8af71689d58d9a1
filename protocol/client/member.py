"""What every client half shares: one request in flight, a next-due time, and the fence rule.

Four client halves (``ConsumerMemberClient``, ``ConnectWorkerClient`` on the KIP-848-style
core ``protocol/client/modern_member.py``; ``ClassicMemberClient``,
``ClassicConnectWorkerClient`` on the classic core ``protocol/client/classic_member.py``) are
driven the same way by their hosts: ``poll(now_s)`` returns the request to send, which is then
*in flight* until ``on_response`` or ``on_failure``; ``next_due()`` says when to call again.
``GroupMember`` is what that contract and the ownership rule need in every half:

* at most one request in flight, and its send time (``Sent``): deadlines count from there;
* the units owned (an ``Ownership``: callbacks and the bounded timeline);
* the fence rule: once ``ownership_deadline`` has passed, everything is lost at that
  deadline (not later) and the reply in flight, if any, means nothing any more;
* retriable failures back off (``protocol/retry.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from protocol.client.ownership import Ownership
from protocol.retry import backoff_s, next_retries


@dataclass
class Sent:
    """The request in flight: what it was and when it left (deadlines count from there)."""

    kind: str  # "heartbeat" | "leave" | "prepare" | "install" | "join" | "sync"
    at_s: float
    stale: bool = False  # the member gave up its state meanwhile: the reply means nothing now


class GroupMember:
    """The part of a client half that does not depend on its protocol.

    Guarantees: ``_finish`` hands back each request in flight once (a reply with none out is
    a host bug and raises); a leave's reply, whatever it says, ends the member; a reply to a
    request sent before the member lost everything is dropped (``stale``); ``next_due`` is
    the ownership deadline while a request is out, so a host that waits on a reply still
    gives the units up in time.
    """

    role: ClassVar[str] = "member"

    def __init__(self, ownership: Callable[[int], Ownership], timeline_max_events: int) -> None:
        self.member_id = ""
        self._own = ownership(timeline_max_events)  # the units owned, callbacks, timeline
        self._in_flight: Sent | None = None
        self._due = -math.inf  # when the next request is due; -inf: at once
        self._retries = 0

    # ------------------------------------------------------------------ what the caller sees

    @property
    def assignment(self) -> Any:
        """What the member uses now, as a host reads it (``Ownership.view``)."""
        return self._own.view()

    @property
    def owned(self) -> Any:
        """The units owned now (a set of them)."""
        return self._own.owned

    @property
    def in_flight(self) -> bool:
        """A request is out; its reply (or ``on_failure``) must come before the next one."""
        return self._in_flight is not None

    @property
    def timeline(self) -> list[dict]:
        return self._own.timeline.events

    @property
    def events_recorded(self) -> int:
        """How many timeline events were ever recorded (for appending the new ones)."""
        return self._own.timeline.recorded

    @property
    def ownership_deadline(self) -> float | None:
        raise NotImplementedError

    def next_due(self) -> float | None:
        """When the caller should next call ``poll`` (-inf: now; None: only after a reply)."""
        if self._done():
            return None
        deadline = self.ownership_deadline
        if self._in_flight is not None:
            return deadline
        due = self._request_due()
        return due if deadline is None else min(due, deadline)

    # -------------------------------------------------------------------------- internals

    def _request_due(self) -> float:
        """When the next request is due, ignoring the deadline."""
        extra = self._extra_due()
        return self._due if extra is None else min(self._due, extra)

    def _send(self, now_s: float, kind: str, request: Any) -> Any:
        self._in_flight = Sent(kind, now_s)
        return request

    def _finish(self) -> Sent | None:
        """Take the request in flight; None when its reply no longer matters."""
        sent = self._in_flight
        if sent is None:
            raise RuntimeError(f"{self._who()}: a reply with no request in flight")
        self._in_flight = None
        if sent.kind == "leave":
            self._left()  # whatever the coordinator said, this member is done
            return None
        return None if sent.stale else sent

    def _check_deadline(self, now_s: float) -> bool:
        """Give everything up if the coordinator may have removed us by now; True if so."""
        deadline = self.ownership_deadline
        if deadline is None or now_s < deadline:
            return False
        self._lose(deadline)
        if self._in_flight is not None:
            self._in_flight.stale = True
        return True

    def _back_off(self, now_s: float) -> None:
        self._due = now_s + backoff_s(self._retries)
        self._retries = next_retries(self._retries)

    def _who(self) -> str:
        return f"{self.role} {self.member_id!r}"

    # ------------------------------------------------------------------ what a core says

    def _done(self) -> bool:
        """Stopped, failed or fenced: nothing more will be sent."""
        raise NotImplementedError

    def _left(self) -> None:
        """The leave request got its answer (or none): the member is stopped."""
        raise NotImplementedError

    def _lose(self, at_s: float) -> None:
        raise NotImplementedError

    def _extra_due(self) -> float | None:
        """Another time the host should call ``poll`` (None: none)."""
        return None
