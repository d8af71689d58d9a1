"""One ``__consumer_offsets`` partition's worth of groups, as a pure state machine.

``GroupCoordinatorShard`` is to group coordination what ``h11.Connection`` is to HTTP: hand it
a request, a tick of time or new metadata and it hands back replies and the records to
persist. It never reads a clock, sleeps, or touches a file; the runtime in ``actors/`` does
that, persists ``records`` and only then releases ``replies`` (invariant 4).

Every state change goes through ``emit``, which replays the record into memory at once, so
replaying a shard's records into a fresh shard rebuilds the same state.
"""

from __future__ import annotations

import base64
import logging
import random
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from typing import Any

from protocol import messages as m
from protocol.api import APIS, api_of, error_response
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.errors import CoordinatorError, Errors
from protocol.group_types import GROUP_TYPES, group_counts, type_of
from protocol.history import RebalanceHistory
from protocol.metadata import MetadataImage
from protocol.offsets.rules import OffsetRules
from protocol.offsets.timers import OffsetsTimer
from protocol.records import GroupRebalanceHistoryKey, OffsetCommitKey, OffsetCommitValue, Record
from protocol.timers import Timers
from protocol.validation import end_vouch, vouch

log = logging.getLogger(__name__)

# How many due timers one tick fires at most; the rest fire on the next tick, so a burst of
# expiries cannot hold the event loop for long.
MAX_TIMERS_PER_TICK = 10_000


@dataclass
class CoordinatorResult:
    """What one event produced.

    ``response`` is the reply to the request that caused the event (``None`` for ticks,
    metadata updates, batches, or a reply that is delayed); ``replies`` is every reply the
    event completed, in order; ``records`` must be durable before any reply is released.
    """

    response: object | None = None
    replies: list[tuple[object, object]] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)


class GroupCoordinatorShard:
    """The groups of one ``__consumer_offsets`` partition: every rule, no I/O.

    It dispatches each request through ``protocol.api``'s table to the rules of the group
    type it concerns and replays, ticks and ends turns through the group-type table
    (``protocol.group_types``). It guarantees that every state change is a record applied at
    once (so replay rebuilds the same state) and that a handler is atomic: a refusal
    (``CoordinatorError``, how bad input is answered: invariant 6) becomes its error reply and
    leaves no record; a bug raises, and the runtime fails the turn and reloads from its log.
    """

    def __init__(
        self,
        config: CoordinatorConfig | None = None,
        metadata: MetadataImage | None = None,
        now_ms: int = 0,
        seed: int = 0,
    ) -> None:
        self.config = config or CoordinatorConfig()
        self.image = metadata or MetadataImage()
        self.now_ms = now_ms
        self.timers = Timers()
        self.groups: dict[str, Any] = {}  # group id -> its group, of any row's class
        self._group_configs: dict[str, GroupConfig] = {}
        self._rng = random.Random(seed)
        self._records: list[Record] = []
        # Replies to earlier (delayed) requests that this event completed.
        self._completed: list[tuple[object, object]] = []
        # ids of the requests of the running batch its caller vouched for (``handle_batch``).
        self._checked: Collection[int] = ()
        self.history = RebalanceHistory(self.emit, lambda: self.config.group_rebalance_history_max)
        self.offsets = OffsetRules(self)
        # Each row's rules, hosted as ``self.<row name>`` (``self.consumer``, ``self.classic``,
        # ...), and what else the row hosts for the other rules to reach (its migrations).
        for row in GROUP_TYPES:
            setattr(self, row.name, row.rules(self))
            for name, make in row.helpers:
                setattr(self, name, make(self))
        # Replay, timers, metadata and the end of a turn iterate the group-type table
        # (protocol/group_types.py): timer key type -> the rules that own it; record key
        # type -> how to apply it; the rules that end each turn.
        self._timer_owners = (
            *((row.timer_key, getattr(self, row.name)) for row in GROUP_TYPES),
            (OffsetsTimer, self.offsets),
        )
        self._replayers = {
            OffsetCommitKey: self.offsets.replay,
            GroupRebalanceHistoryKey: self.history.replay,
            **{key: row.replayer(self) for row in GROUP_TYPES for key in row.record_keys},
        }
        # The end of a turn settles the epoch turn of each KIP-848-style type that was marked
        # (classic groups have none: their leader computes the assignment).
        self._epoch_turns = tuple(
            turn for row in GROUP_TYPES
            if (turn := getattr(getattr(self, row.name), "epoch_turn", None)) is not None
        )
        # heartbeat type -> (its rules, its reply type): the heartbeats a turn admits first and
        # completes once the turn's epoch bumps are settled (``_handle_batch``).
        self._batched = {
            row.heartbeat: (getattr(self, row.name), APIS[row.heartbeat].response)
            for row in GROUP_TYPES
            if row.heartbeat is not None
        }
        self._waking = tuple(getattr(self, row.name) for row in GROUP_TYPES if row.wake_ups)

    # ------------------------------------------------------------------ public API

    def handle(self, request: object) -> CoordinatorResult:
        result = self.handle_batch([request])
        result.response = next((r for q, r in result.replies if q is request), None)
        return result

    def handle_batch(self, requests: list[object],
                     checked: Collection[int] = ()) -> CoordinatorResult:
        """One turn: a reply for each request (``None`` while one is delayed: a JoinGroup or
        SyncGroup waiting for the rest of its group), each group's target recomputed once.

        ``checked``: the ``id()`` of each request of ``requests`` that the caller vouches is
        well typed, because the Kafka wire codec built it in this process; its handler skips
        ``check_types`` (``protocol.validation``: one check, not two). Only an in-process
        caller can name an object's id, so no request can vouch for itself; by default every
        request is checked."""
        self._records = []
        self._completed = []
        self._checked = checked
        try:
            result = self._handle_batch(requests)
            self.offsets.keep_watch()
            return result
        finally:
            self._checked = ()

    def _handle_batch(self, requests: list[object]) -> CoordinatorResult:
        """A row's heartbeats are admitted as they come and completed together, once the epoch
        bumps they caused are settled; any other request is dispatched alone, after the
        heartbeats before it are completed. A member heard twice in a turn has its first
        heartbeat completed before its second is admitted."""
        replies: list[object | None] = [None] * len(requests)
        admitted: list[tuple[int, Any, Any]] = []  # (index, admitted heartbeat, its rules)
        in_turn: set[tuple[str, str]] = set()
        for i, req in enumerate(requests):
            batched = self._batched.get(type(req))
            if batched is not None:
                rules, reply_type = batched
                member_key = _member_key(req)
                if member_key is not None and member_key in in_turn:
                    self._complete(admitted, replies)  # same member twice: finish the first
                    in_turn.clear()
                outcome = self._guard(req, rules.admit, req)
                if isinstance(outcome, reply_type):
                    replies[i] = outcome
                else:
                    admitted.append((i, outcome, rules))
                    in_turn.add((outcome.group_id, outcome.member_id))
            else:
                self._complete(admitted, replies)
                in_turn.clear()
                replies[i] = self._guard(req, self._dispatch, req)
                self._finish_turn()
        self._complete(admitted, replies)
        answered = [(q, r) for q, r in zip(requests, replies, strict=True) if r is not None]
        return self._result(answered)

    def tick(self, now_ms: int) -> CoordinatorResult:
        """Advance time to ``now_ms`` (never backwards) and fire the timers that are due."""
        self._records = []
        self._completed = []
        self.now_ms = max(self.now_ms, now_ms)
        for key in self.timers.pop_due(self.now_ms, MAX_TIMERS_PER_TICK):
            owner = next(rules for kind, rules in self._timer_owners if isinstance(key, kind))
            owner.on_timer(key)
        self._finish_turn()
        return self._result([])

    def next_deadline_ms(self) -> int | None:
        return self.timers.next_deadline_ms()

    def update_metadata(self, image: MetadataImage) -> CoordinatorResult:
        self._records = []
        self._completed = []
        self.image = image
        for row in GROUP_TYPES:
            of_type = [g for g in self.groups.values() if g.group_type == row.name]
            getattr(self, row.name).on_metadata(of_type)
        self._finish_turn()
        return self._result([])

    def replay(self, record: Record) -> None:
        """Apply one persisted record (the load path; live events come through here too)."""
        replay = self._replayers.get(type(record.key))
        if replay is None:
            raise ValueError(f"no group type replays {type(record.key).__name__} records")
        replay(record)

    def take_wake_ups(self, decide: bool = True) -> list[tuple[str, str]]:
        """The (group, member) pairs the events since the last call gave a reason to heartbeat
        now (a row's ``wake_ups``); a runtime that can reach clients wakes them
        once the events' records are durable. ``decide=False`` only forgets the changes (no
        client could be woken): nothing is computed."""
        groups = self.groups if decide else {}
        taken = [pair for rules in self._waking for pair in rules.wake_ups.take(groups)]
        return taken if decide else []

    def replay_offsets(
        self, commits: Iterable[tuple[str, str, int, OffsetCommitValue | None]]
    ) -> None:
        """Apply persisted offset commits in bulk, (group id, topic, partition, value or None)
        each: the same state as ``replay`` of their records in order, for the load path."""
        self.offsets.replay_many(commits)

    def set_group_config(self, group_id: str, config: GroupConfig | None) -> None:
        """Dynamic group configs come from the controller; the shard only reads them."""
        if config is None:
            self._group_configs.pop(group_id, None)
        else:
            self._group_configs[group_id] = config

    def set_group_configs(self, configs: dict[str, GroupConfig]) -> None:
        """Replace every dynamic group config at once: the controller sends its whole image."""
        self._group_configs = dict(configs)

    # --------------------------------------------------------- the rules' context

    def emit(self, record: Record) -> None:
        self.replay(record)
        self._records.append(record)

    def group_config(self, group_id: str) -> GroupConfig:
        return self._group_configs.get(group_id) or GroupConfig()

    def new_member_id(self) -> str:
        return base64.urlsafe_b64encode(self._rng.randbytes(16)).decode().rstrip("=")

    def group_of(self, group_id: str, group_type: str):
        """The group ``group_id`` if it is of ``group_type`` (a row of the group-type
        table), else None."""
        group = self.groups.get(group_id)
        return group if group is not None and group.group_type == group_type else None

    def classic_host(self, group):
        """Who answers a classic request to ``group`` (its row's ``classic_host``): None for
        a classic group; GROUP_ID_NOT_FOUND for a type that takes no classic requests."""
        row = type_of(group)
        if row.classic_host is None:
            raise CoordinatorError(
                Errors.GROUP_ID_NOT_FOUND,
                f"Group {group.group_id} is a {row.name} group, not a classic group.",
            )
        return row.classic_host(self)

    def describe_classic(self, group, history: list) -> m.DescribeGroupsResponseGroup:
        """``group`` as DescribeGroups shows it, in its row's shape."""
        entry = type_of(group).describe_classic(self, group, history)
        entry.group_type = group.group_type
        return entry

    def offset_only_groups(self) -> set[str]:
        """Groups known only by their committed offsets (Kafka's simple groups)."""
        return self.offsets.offsets.keys() - self.groups.keys()

    def error_reply(self, request: object, error: Errors, message: str | None) -> object:
        """The reply ``request`` expects, carrying ``error``: for waits the rules end."""
        return error_response(request, error, message)

    def complete(self, request: object, response: object) -> None:
        """Answer a request that an earlier event left waiting (delayed JoinGroup/SyncGroup)."""
        self._completed.append((request, response))

    # ------------------------------------------------------------------ internals

    def _result(self, answered: list[tuple[object, object]]) -> CoordinatorResult:
        records, self._records = self._records, []
        completed, self._completed = self._completed, []
        return CoordinatorResult(None, answered + completed, records)

    def _complete(self, admitted: list[tuple[int, Any, Any]], replies: list[object | None]) -> None:
        self._finish_turn()
        for i, a, rules in admitted:
            replies[i] = self._guard(a.request, rules.complete, a)
        admitted.clear()
        self._finish_turn()

    def _finish_turn(self) -> None:
        for turn in self._epoch_turns:
            if turn.touched:
                turn.finish()

    def _dispatch(self, req: object) -> object:
        api = api_of(req)
        if api is None or api.handler is None:
            raise CoordinatorError(
                Errors.INVALID_REQUEST, f"unknown request type {type(req).__name__}"
            )
        return api.handler(self, req)

    def _guard(self, req: object, fn: Callable[[Any], object], arg: object) -> object:
        """Run a handler atomically: a refusal (``CoordinatorError``) becomes its error reply and
        must leave no trace, so a handler that refuses after it emitted records is a bug. A bug
        (any other exception) is raised: the runtime fails the whole turn and reloads the shard
        from its log, never answering over half-applied state (docs/decisions.md). A request
        the caller vouched for (``handle_batch``'s ``checked``) is not type-checked again."""
        emitted = len(self._records)
        token = vouch(req) if id(req) in self._checked else None
        try:
            return fn(arg)
        except CoordinatorError as e:
            if len(self._records) != emitted:
                raise RuntimeError(
                    f"{type(req).__name__} refused with {e.error.name} after it emitted "
                    f"{len(self._records) - emitted} record(s)"
                ) from e
            return error_response(req, e.error, e.message)
        finally:
            if token is not None:
                end_vouch(token)

    # ---- runtime hooks: what the runtime (actors/runtime) asks the shard instead of knowing
    # group types, their records or their requests itself.

    def census(self) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
        """The metrics' gauges: groups per row's metrics label (every label, zeros too), and
        for each row with a state gauge, its groups per state (every state of the row)."""
        by_state = {row.state_gauge: dict.fromkeys(row.states, 0) for row in _STATE_GAUGED}
        for group in self.groups.values():
            gauge = _STATE_GAUGE_OF.get(group.group_type)
            if gauge is not None:
                by_state[gauge][group.state] = by_state[gauge].get(group.state, 0) + 1
        return group_counts(self.groups.values()), by_state

    def summarize(self, group_id: str) -> dict | None:
        """State, epochs and member counts of one group (None: no such group)."""
        group = self.groups.get(group_id)
        return None if group is None else type_of(group).summarize(group)

    @staticmethod
    def epoch_bumps(records: list[Record]) -> dict[str, int]:
        """How many epoch bumps (rebalances) ``records`` hold, per row's rebalance metric."""
        bumps: dict[str, int] = {}
        for r in records:
            name = _REBALANCE_METRIC_OF.get(type(r.key))
            if name is not None and r.value is not None:
                bumps[name] = bumps.get(name, 0) + 1
        return bumps

    @staticmethod
    def wakeable_members(requests: list[object]) -> list[tuple[str, str]]:
        """The (group, member) pairs that ``requests`` heartbeat for: members whose client
        may be woken when their target changes (``take_wake_ups``)."""
        return [
            (req.group_id, req.member_id)
            for req in requests
            if type(req) in _WAKEABLE and req.member_id
        ]

    @staticmethod
    def departed_members(records: list[Record]) -> list[tuple[str, str]]:
        """The (group, member) pairs whose membership ``records`` deleted: never woken again."""
        return [
            (r.key.group_id, r.key.member_id)  # type: ignore[attr-defined]
            for r in records
            if type(r.key) in _DEPARTED and r.value is None
        ]

    def bulk_loader(
        self, keys: list[tuple], blobs: list[bytes | None]
    ) -> tuple[object, list[bool]]:
        """For a load of compacted records (``keys``, encoded ``blobs``; at most one per key):
        a loader that builds the groups it can in bulk (``add(key, blob)``, ``add_all(keys,
        blobs)``, ``finish()``: each row's ``bulk_load``), and for each record whether that
        loader takes it; the rest go through ``replay`` one by one. The result equals replaying
        them all in order."""
        return bulk_loaders(
            [row.bulk_load(self, keys, blobs) for row in GROUP_TYPES if row.bulk_load], keys
        )

# The rows with a state gauge (group type -> its name), and each row's own record whose value
# is an epoch bump -> the name of its rebalance metric.
_STATE_GAUGED = tuple(row for row in GROUP_TYPES if row.state_gauge is not None)
_STATE_GAUGE_OF = {row.name: row.state_gauge for row in _STATE_GAUGED}
_REBALANCE_METRIC_OF = {
    row.group_key: row.rebalance_metric for row in GROUP_TYPES if row.rebalance_metric
}
# The heartbeats whose senders may be woken, and the records that end a membership.
_WAKEABLE = frozenset(row.wake_ups.request for row in GROUP_TYPES if row.wake_ups)
_DEPARTED = frozenset(row.wake_ups.member_key for row in GROUP_TYPES if row.wake_ups)


def _member_key(req: Any) -> tuple[str, str] | None:
    """The (group, member) a heartbeat speaks for, when it names one (ids may be garbage)."""
    gid, mid = req.group_id, req.member_id
    return (gid, mid) if type(gid) is str and type(mid) is str and mid else None


class _NoBulk:
    """No row loads in bulk: every record is replayed one by one."""

    def add(self, key: tuple, blob: bytes) -> None:
        raise AssertionError("no row took this record")

    def add_all(self, keys: list[tuple], blobs: list[bytes]) -> None:
        assert not keys, "no row took these records"

    def finish(self) -> None:
        pass


class _BulkLoaders:
    """Several rows' bulk loaders as one: each record goes to the loader that took it."""

    def __init__(self, loaders: list[Any], taker: dict[tuple, Any]) -> None:
        self._loaders, self._taker = loaders, taker

    def add(self, key: tuple, blob: bytes) -> None:
        self._taker[key].add(key, blob)

    def add_all(self, keys: list[tuple], blobs: list[bytes]) -> None:
        for key, blob in zip(keys, blobs, strict=True):
            self.add(key, blob)

    def finish(self) -> None:
        for loader in self._loaders:
            loader.finish()


def bulk_loaders(taken: list[tuple[Any, list[bool]]], keys: list[tuple]) -> tuple[Any, list[bool]]:
    """The rows' (loader, which of ``keys`` it takes) as one; a single loader as it is (the
    usual case: nothing to route), none as a loader that takes nothing."""
    if not taken:
        return _NoBulk(), [False] * len(keys)
    if len(taken) == 1:
        return taken[0]
    flags = [False] * len(keys)
    taker: dict[tuple, Any] = {}
    for loader, takes in taken:
        for i, key in enumerate(keys):
            if takes[i]:
                assert not flags[i], f"two rows load {key} in bulk"
                flags[i], taker[key] = True, loader
    return _BulkLoaders([loader for loader, _ in taken], taker), flags
