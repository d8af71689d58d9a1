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
from dataclasses import dataclass, field

from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic.group import ClassicGroup
from protocol.classic.rules import ClassicGroupRules
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.consumer.client_assignment import install_assignment, prepare_assignment
from protocol.consumer.describe import describe_group
from protocol.consumer.group import STATES, ConsumerGroup
from protocol.consumer.rules import Admitted, ConsumerGroupRules
from protocol.error_responses import error_response
from protocol.errors import CoordinatorError, Errors
from protocol.metadata import MetadataImage
from protocol.migration.classic_members import ClassicMembersOfConsumerGroup
from protocol.migration.conversion import Migration
from protocol.offsets.rules import OffsetRules
from protocol.records import (
    ConsumerGroupMetadataKey,
    GroupMetadataKey,
    GroupRebalanceHistoryKey,
    OffsetCommitKey,
    Record,
)
from protocol.timers import Timers
from protocol.validation import check_types

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
        self.groups: dict[str, ConsumerGroup | ClassicGroup] = {}
        self._group_configs: dict[str, GroupConfig] = {}
        self._rng = random.Random(seed)
        self._records: list[Record] = []
        # Replies to earlier (delayed) requests that this event completed.
        self._completed: list[tuple[object, object]] = []
        self.consumer = ConsumerGroupRules(self)
        self.classic = ClassicGroupRules(self)
        self.classic_members = ClassicMembersOfConsumerGroup(self)
        self.classic.in_consumer_group = self.classic_members
        self.migration = Migration(self)
        self.offsets = OffsetRules(self)

    # ------------------------------------------------------------------ public API

    def handle(self, request: object) -> CoordinatorResult:
        result = self.handle_batch([request])
        result.response = next((r for q, r in result.replies if q is request), None)
        return result

    def handle_batch(self, requests: list[object]) -> CoordinatorResult:
        """One turn: a reply for each request (``None`` while one is delayed: a JoinGroup or
        SyncGroup waiting for the rest of its group), each group's target recomputed once."""
        self._records = []
        self._completed = []
        replies: list[object | None] = [None] * len(requests)
        admitted: list[tuple[int, Admitted]] = []
        in_turn: set[tuple[str, str]] = set()
        for i, req in enumerate(requests):
            if isinstance(req, m.ConsumerGroupHeartbeatRequest):
                member_key = _member_key(req)
                if member_key is not None and member_key in in_turn:
                    self._complete(admitted, replies)  # same member twice: finish the first
                    in_turn.clear()
                outcome = self._guard(req, lambda r=req: self.consumer.admit(r))
                if isinstance(outcome, Admitted):
                    admitted.append((i, outcome))
                    in_turn.add((outcome.group_id, outcome.member_id))
                else:
                    replies[i] = outcome
            else:
                self._complete(admitted, replies)
                in_turn.clear()
                replies[i] = self._guard(req, lambda r=req: self._dispatch(r))
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
            kind = key[0]
            if kind.startswith("classic-"):
                self.classic.on_timer(key)
            elif kind.startswith("offsets-"):
                self.offsets.on_timer(key)
            else:
                self.consumer.on_timer(key)
        self._finish_turn()
        return self._result([])

    def next_deadline_ms(self) -> int | None:
        return self.timers.next_deadline_ms()

    def update_metadata(self, image: MetadataImage) -> CoordinatorResult:
        self._records = []
        self._completed = []
        self.image = image
        self.consumer.on_metadata([g for g in self.groups.values() if isinstance(g, ConsumerGroup)])
        self.classic.on_metadata([g for g in self.groups.values() if isinstance(g, ClassicGroup)])
        self._finish_turn()
        return self._result([])

    def replay(self, record: Record) -> None:
        """Apply one persisted record (the load path; live events come through here too)."""
        key = record.key
        if isinstance(key, OffsetCommitKey):
            self.offsets.replay(record)
            return
        if isinstance(key, (GroupMetadataKey, GroupRebalanceHistoryKey)):
            self.classic.replay(record)
            return
        group_id = key.group_id  # type: ignore[attr-defined]
        if isinstance(key, ConsumerGroupMetadataKey) and record.value is None:
            if isinstance(self.groups.get(group_id), ConsumerGroup):
                del self.groups[group_id]
            return
        group = self.groups.get(group_id)
        if not isinstance(group, ConsumerGroup):
            group = self.groups[group_id] = ConsumerGroup(group_id)
        before = group.members.get(getattr(key, "member_id", None) or "")
        group.replay(record)
        self.consumer.after_replay(group, record, before)

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

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ConsumerGroup) else None

    def classic_group(self, group_id: str) -> ClassicGroup | None:
        group = self.groups.get(group_id)
        return group if isinstance(group, ClassicGroup) else None

    def other_type_group_exists(self, group_id: str) -> bool:
        return isinstance(self.groups.get(group_id), ClassicGroup)

    def complete(self, request: object, response: object) -> None:
        """Answer a request that an earlier event left waiting (delayed JoinGroup/SyncGroup)."""
        self._completed.append((request, response))

    # ------------------------------------------------------------------ internals

    def _result(self, answered: list[tuple[object, object]]) -> CoordinatorResult:
        records, self._records = self._records, []
        completed, self._completed = self._completed, []
        return CoordinatorResult(None, answered + completed, records)

    def _complete(self, admitted: list[tuple[int, Admitted]], replies: list[object | None]) -> None:
        self._finish_turn()
        for i, a in admitted:
            replies[i] = self._guard(a.request, lambda a=a: self.consumer.complete(a))
        admitted.clear()
        self._finish_turn()

    def _finish_turn(self) -> None:
        self.consumer.finish_turn()

    def _dispatch(self, req: object) -> object:
        if isinstance(req, m.ConsumerGroupDescribeRequest):
            return self._describe(req)
        if isinstance(req, m.ConsumerGroupPrepareAssignmentRequest):
            return prepare_assignment(self, req)
        if isinstance(req, m.ConsumerGroupInstallAssignmentRequest):
            return install_assignment(self, req)
        if isinstance(req, m.ListGroupsRequest):
            return self._list_groups(req)
        handler = self._HANDLERS.get(type(req))
        if handler is not None:
            return handler(self, req)
        raise CoordinatorError(Errors.INVALID_REQUEST, f"unknown request type {type(req).__name__}")

    def _describe(self, req: m.ConsumerGroupDescribeRequest) -> m.ConsumerGroupDescribeResponse:
        check_types(req)
        out = []
        for group_id in req.group_ids:
            group = self.consumer_group(group_id)
            if group is None:
                kind = "is not a consumer group" if group_id in self.groups else "not found"
                out.append(
                    m.DescribedGroup(
                        error_code=Errors.GROUP_ID_NOT_FOUND,
                        error_message=f"Group {group_id} {kind}.",
                        group_id=group_id,
                        group_state="dead",
                    )
                )
            else:
                out.append(describe_group(group, self.image, self.config))
        return m.ConsumerGroupDescribeResponse(groups=out)

    def _list_groups(self, req: m.ListGroupsRequest) -> m.ListGroupsResponse:
        check_types(req)
        states = {_state_name(s) for s in req.states_filter}
        unknown = states - {_state_name(s) for s in (*STATES, *cg.STATES)}
        if unknown:
            raise CoordinatorError(
                Errors.INVALID_REQUEST, f"unknown group states {sorted(unknown)}"
            )
        types = {t.lower() for t in req.types_filter}
        unknown = types - {"consumer", "classic"}
        if unknown:
            raise CoordinatorError(Errors.INVALID_REQUEST, f"unknown group types {sorted(unknown)}")
        listed = []
        for group_id in sorted(self.groups):
            g = self.groups[group_id]
            if (states and _state_name(g.state) not in states) or (
                types and g.group_type not in types
            ):
                continue
            protocol_type = "consumer" if isinstance(g, ConsumerGroup) else (g.protocol_type or "")
            listed.append(m.ListedGroup(group_id, protocol_type, g.state, g.group_type))
        return m.ListGroupsResponse(groups=listed)

    def _guard(self, req: object, fn):
        """Run a handler; a refusal or a bug becomes an error reply, never an exception."""
        try:
            return fn()
        except CoordinatorError as e:
            return error_response(req, e.error, e.message)
        except Exception as e:  # invariant 6: no request crashes a partition
            log.exception("request %s failed", type(req).__name__)
            return error_response(req, Errors.UNKNOWN_SERVER_ERROR, f"{type(e).__name__}: {e}")


def _state_name(state: str) -> str:
    """Kafka spells states ``PreparingRebalance``; Cohort ``preparing_rebalance``: either
    names the same state in a filter."""
    return state.replace("_", "").lower() if isinstance(state, str) else ""


def _member_key(req: m.ConsumerGroupHeartbeatRequest) -> tuple[str, str] | None:
    """The (group, member) a heartbeat speaks for, when it names one (ids may be garbage)."""
    gid, mid = req.group_id, req.member_id
    return (gid, mid) if isinstance(gid, str) and isinstance(mid, str) and mid else None


GroupCoordinatorShard._HANDLERS = {
    m.JoinGroupRequest: lambda s, r: s.classic.join(r),
    m.SyncGroupRequest: lambda s, r: s.classic.sync(r),
    m.HeartbeatRequest: lambda s, r: s.classic.heartbeat(r),
    m.LeaveGroupRequest: lambda s, r: s.classic.leave(r),
    m.DescribeGroupsRequest: lambda s, r: s.classic.describe(r),
    m.OffsetCommitRequest: lambda s, r: s.offsets.commit(r),
    m.OffsetFetchRequest: lambda s, r: s.offsets.fetch(r),
    m.OffsetDeleteRequest: lambda s, r: s.offsets.delete(r),
    m.DeleteGroupsRequest: lambda s, r: s.offsets.delete_groups(r),
}
