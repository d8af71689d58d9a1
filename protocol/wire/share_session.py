"""Share sessions (KIP-932's ShareSessionCache), kept by the share-partition leader: the gateway.

A share session belongs to one member of one group at one broker (key ``(group_id, member_id,
node)``: a client keeps a session with each share-partition leader it fetches from, and in front
of an upstream the gateway plays every upstream broker, one listener each) and holds the
partitions it fetches, so that a fetch after the first names only what changed. Its epoch
orders the member's requests, as Kafka's broker checks them:

* ShareFetch at epoch 0 opens a session (replacing the member's previous one) for the
  partitions it names; it may not carry acknowledgements (INVALID_REQUEST). ShareAcknowledge
  at epoch 0 is INVALID_SHARE_SESSION_EPOCH: only a fetch opens a session.
* Epoch -1 closes the session: its acknowledgements apply, then everything the member holds
  is released (``close`` in the step: the pure request's ``close_session``); nothing is
  acquired.
* Any other epoch must be the session's next one (INVALID_SHARE_SESSION_EPOCH otherwise;
  SHARE_SESSION_NOT_FOUND when there is no session). A fetch adds the partitions it names and
  drops its forgotten ones; a successful request moves the epoch on (wrapping to 1).
* At most ``max_sessions`` sessions (``group.share.max.share.sessions``); a member's own new
  session replaces its old one. When they are all open, the session used least recently
  makes room if it has been idle for ``idle_timeout_ms`` (the share group's session timeout:
  a member that long silent is fenced by its coordinator, or nearly so), as Kafka's
  ShareSessionCache evicts an inactive session; otherwise the new one is
  SHARE_SESSION_LIMIT_REACHED. So sessions nobody closed cannot lock new ones out for good.
* A session lives as long as its member: its sessions end when the member leaves (``drop``, on its
  leave heartbeat) and when the group's coordinator answers a request of the member with an
  error saying the group does not know it (``answered``: never joined, left, or fenced), so a
  made-up member id holds no session past its first reply.

Pure and deterministic (no clock: the caller says the time): a step either fails and changes
nothing, or succeeds.
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
# Kafka's group.share.session.timeout.ms default: idle this long, a session may make room.
IDLE_TIMEOUT_MS = 45_000
# The coordinator's errors that say the member has no place in the group (its session ends).
MEMBER_UNKNOWN = frozenset({E.unknown_member_id.value, E.group_id_not_found.value,
                            E.fenced_member_epoch.value})

TopicPartition = tuple[str, int]
Key = tuple[str, str, int | None]  # (group id, member id, the broker's node id)


@dataclass
class Session:
    epoch: int  # the epoch the member's next request must carry
    partitions: dict[TopicPartition, None] = field(default_factory=dict)  # an ordered set
    used_ms: int = 0  # when a request last moved it on


@dataclass(frozen=True)
class Step:
    """What one request may do: an error (and nothing changed), or the partitions to fetch and
    whether the session ends with this request (then ``partitions`` are the ones it held)."""

    error_code: int = 0
    error_message: str | None = None
    partitions: tuple[TopicPartition, ...] = ()
    close: bool = False


def next_epoch(epoch: int) -> int:
    return 1 if epoch >= MAX_EPOCH else epoch + 1


class ShareSessions:
    """Every open share session, least recently used first (see the module docstring)."""

    def __init__(self, max_sessions: int = MAX_SESSIONS,
                 idle_timeout_ms: int = IDLE_TIMEOUT_MS) -> None:
        self.max_sessions = max_sessions
        self.idle_timeout_ms = idle_timeout_ms
        self._sessions: OrderedDict[Key, Session] = OrderedDict()
        self._nodes: dict[tuple[str, str], set[int | None]] = {}  # each member's brokers

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, group_id: str, member_id: str, node: int | None = None) -> Session | None:
        return self._sessions.get((group_id, member_id, node))

    def fetch(self, group_id: str, member_id: str, epoch: int, named: list[TopicPartition],
              forgotten: list[TopicPartition], acknowledges: bool, now_ms: int = 0,
              node: int | None = None) -> Step:
        """A ShareFetch at ``epoch`` naming ``named`` (``acknowledges``: it carries
        acknowledgements) and forgetting ``forgotten``, at ``now_ms``, to broker ``node``."""
        key = (group_id, member_id, node)
        if epoch == INITIAL_EPOCH:
            if acknowledges:
                return Step(E.invalid_request.value,
                            "A share session's first fetch (epoch 0) carries no "
                            "acknowledgements.")
            if key not in self._sessions and not self._room(now_ms):
                return Step(E.share_session_limit_reached.value,
                            f"The gateway holds {self.max_sessions} share sessions "
                            "(group.share.max.share.sessions), none idle.")
            self._sessions.pop(key, None)
            session = Session(next_epoch(INITIAL_EPOCH), dict.fromkeys(named), now_ms)
            self._sessions[key] = session
            self._nodes.setdefault(key[:2], set()).add(node)
            return Step(partitions=tuple(session.partitions))
        step = self._check(key, epoch)
        if step is not None:
            return step
        if epoch == FINAL_EPOCH:
            return Step(partitions=tuple(self._forget(key).partitions), close=True)
        session = self._used(key, epoch, now_ms)
        for tp in forgotten:
            session.partitions.pop(tp, None)
        for tp in named:
            session.partitions.setdefault(tp, None)
        return Step(partitions=tuple(session.partitions))

    def acknowledge(self, group_id: str, member_id: str, epoch: int, now_ms: int = 0,
                    node: int | None = None) -> Step:
        """A ShareAcknowledge at ``epoch`` (it fetches nothing), at ``now_ms``, to ``node``."""
        key = (group_id, member_id, node)
        if epoch == INITIAL_EPOCH:
            return Step(E.invalid_share_session_epoch.value,
                        "ShareAcknowledge cannot open a share session (epoch 0).")
        step = self._check(key, epoch)
        if step is not None:
            return step
        if epoch == FINAL_EPOCH:
            return Step(partitions=tuple(self._forget(key).partitions), close=True)
        self._used(key, epoch, now_ms)
        return Step()

    def drop(self, group_id: str, member_id: str) -> None:
        """Forget a member's sessions, at every broker (it left the group)."""
        for node in self._nodes.pop((group_id, member_id), ()):
            self._sessions.pop((group_id, member_id, node), None)

    def _forget(self, key: Key) -> Session:
        session = self._sessions.pop(key)
        nodes = self._nodes.get(key[:2])
        if nodes is not None:
            nodes.discard(key[2])
            if not nodes:
                del self._nodes[key[:2]]
        return session

    def answered(self, group_id: str, member_id: str, error_code: int) -> None:
        """The group's coordinator answered a request of the member with ``error_code``: a
        member it does not know (never joined, left, fenced) keeps no session."""
        if error_code in MEMBER_UNKNOWN:
            self.drop(group_id, member_id)

    def _room(self, now_ms: int) -> bool:
        """Whether one more session fits, once the least recently used one, if idle for
        ``idle_timeout_ms``, has made room (one look: the oldest is the idlest)."""
        if len(self._sessions) < self.max_sessions:
            return True
        if not self._sessions:
            return False
        key, oldest = next(iter(self._sessions.items()))
        if now_ms - oldest.used_ms < self.idle_timeout_ms:
            return False
        self._forget(key)
        return True

    def _used(self, key: Key, epoch: int, now_ms: int) -> Session:
        """The session, moved on past ``epoch`` and marked used now (most recent last)."""
        session = self._sessions[key]
        session.epoch = next_epoch(epoch)
        session.used_ms = max(session.used_ms, now_ms)
        self._sessions.move_to_end(key)
        return session

    def _check(self, key: Key, epoch: int) -> Step | None:
        session = self._sessions.get(key)
        if session is None:
            return Step(E.share_session_not_found.value,
                        f"No share session for member {key[1]} of group {key[0]}.")
        if epoch != FINAL_EPOCH and epoch != session.epoch:
            return Step(E.invalid_share_session_epoch.value,
                        f"Share session epoch {epoch}, expected {session.epoch}.")
        return None
