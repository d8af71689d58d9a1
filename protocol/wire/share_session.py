"""Share sessions (KIP-932's ShareSessionCache), kept by the share-partition leader: the gateway.

A share session belongs to one member of one group (key ``(group_id, member_id)``) and holds
the partitions it fetches, so that a fetch after the first names only what changed. Its
epoch orders the member's requests, as Kafka's broker checks them:

* ShareFetch at epoch 0 opens a session (replacing the member's previous one) for the
  partitions it names; it may not carry acknowledgements (INVALID_REQUEST). ShareAcknowledge
  at epoch 0 is INVALID_SHARE_SESSION_EPOCH: only a fetch opens a session.
* Epoch -1 closes the session: its acknowledgements apply, then everything the member holds
  is released (``close`` in the step: the pure request's ``close_session``); nothing is
  acquired.
* Any other epoch must be the session's next one (INVALID_SHARE_SESSION_EPOCH otherwise;
  SHARE_SESSION_NOT_FOUND when there is no session). A fetch adds the partitions it names and
  drops its forgotten ones; a successful request moves the epoch on (wrapping to 1).
* At most ``max_sessions`` sessions (``group.share.max.share.sessions``): one more is
  SHARE_SESSION_LIMIT_REACHED; a member's own new session replaces its old one.

Pure and deterministic (no clock): a step either fails and changes nothing, or succeeds.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field

from kio.schema.errors import ErrorCode as E

INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_EPOCH = 2**31 - 1
# Kafka's group.share.max.share.sessions default.
MAX_SESSIONS = 2000

TopicPartition = tuple[str, int]


@dataclass
class Session:
    epoch: int  # the epoch the member's next request must carry
    partitions: dict[TopicPartition, None] = field(default_factory=dict)  # an ordered set


@dataclass(frozen=True)
class Step:
    """What one request may do: an error (and nothing changed), or the partitions to fetch and
    whether the session ends with this request."""

    error_code: int = 0
    error_message: str | None = None
    partitions: tuple[TopicPartition, ...] = ()
    close: bool = False


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= MAX_EPOCH else epoch + 1


class ShareSessions:
    def __init__(self, max_sessions: int = MAX_SESSIONS) -> None:
        self.max_sessions = max_sessions
        self._sessions: OrderedDict[tuple[str, str], Session] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str) -> Session | None:
        return self._sessions.get((group_id, member_id))

    def fetch(self, group_id: str, member_id: str, epoch: int, named: list[TopicPartition],
              forgotten: list[TopicPartition], acknowledges: bool) -> Step:
        """A ShareFetch at ``epoch`` naming ``named`` (``acknowledges``: it carries
        acknowledgements) and forgetting ``forgotten``."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            if acknowledges:
                return Step(E.invalid_request.value,
                            "A share session's first fetch (epoch 0) carries no "
                            "acknowledgements.")
            if key not in self._sessions and len(self._sessions) >= self.max_sessions:
                return Step(E.share_session_limit_reached.value,
                            f"The gateway holds {self.max_sessions} share sessions "
                            "(group.share.max.share.sessions).")
            self._sessions.pop(key, None)
            session = Session(next_epoch(INITIAL_EPOCH), dict.fromkeys(named))
            self._sessions[key] = session
            return Step(partitions=tuple(session.partitions))
        step = self._check(key, epoch)
        if step is not None:
            return step
        if epoch == FINAL_EPOCH:
            del self._sessions[key]
            return Step(close=True)
        session = self._sessions[key]
        for tp in forgotten:
            session.partitions.pop(tp, None)
        for tp in named:
            session.partitions.setdefault(tp, None)
        session.epoch = next_epoch(epoch)
        return Step(partitions=tuple(session.partitions))

    def acknowledge(self, group_id: str, member_id: str, epoch: int) -> Step:
        """A ShareAcknowledge at ``epoch`` (it fetches nothing)."""
        key = (group_id, member_id)
        if epoch == INITIAL_EPOCH:
            return Step(E.invalid_share_session_epoch.value,
                        "ShareAcknowledge cannot open a share session (epoch 0).")
        step = self._check(key, epoch)
        if step is not None:
            return step
        if epoch == FINAL_EPOCH:
            del self._sessions[key]
            return Step(close=True)
        self._sessions[key].epoch = next_epoch(epoch)
        return Step()

    def drop(self, group_id: str, member_id: str) -> None:
        """Forget a member's session (it left the group)."""
        self._sessions.pop((group_id, member_id), None)

    def _check(self, key: tuple[str, str], epoch: int) -> Step | None:
        session = self._sessions.get(key)
        if session is None:
            return Step(E.share_session_not_found.value,
                        f"No share session for member {key[1]} of group {key[0]}.")
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            return Step(E.invalid_share_session_epoch.value,
                        f"Share session epoch {epoch}, expected {session.epoch}.")
        return None
