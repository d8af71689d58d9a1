"""The client half of the classic consumer protocol (JoinGroup/SyncGroup), as a pure object.

``ClassicMemberClient`` is Kafka's ``ConsumerCoordinator``/``AbstractCoordinator`` without the
network: it decides which JoinGroup, SyncGroup, Heartbeat or LeaveGroup request to send and
when, runs the group's assignor when it leads, and says what each reply means for the
partitions the member owns. It never sends, sleeps or reads a clock: the caller passes
``now_s`` (seconds, monotonic) into every call, sends what ``poll`` returns, and feeds back
``on_response`` or ``on_failure``. At most one request is in flight (Kafka's socket server
reads one request per client at a time; Ray does not order calls to an async actor).

The join/sync state machine and its ownership rule (give partitions up at the earliest moment
the coordinator could have removed the member) are ``ClassicGroupMember``
(``protocol/client/classic_member.py``), shared with the classic Connect worker; this module
says what is a classic consumer's own: its subscription, its leader's assignment
(``protocol/client/classic_leader.py``), static membership, KIP-800 rejoin reasons, and:

Ownership follows the rebalance protocol the configured assignors share: *eager* members
revoke everything before each JoinGroup; *cooperative* ones keep what they own through the
rebalance and revoke only what the new assignment leaves out, then rejoin at once so that
the revoked partitions can be handed over in a second rebalance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

from assignors.classic import classic_assignor
from protocol import messages as m
from protocol.classic.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    encode_subscription,
)
from protocol.classic.group import TOPIC_METADATA_CHANGE
from protocol.client.classic_leader import COOPERATIVE, EAGER, grouped, lead
from protocol.client.classic_member import NO_GENERATION, TERMINAL, ClassicGroupMember
from protocol.client.member import Sent
from protocol.client.ownership import Callback, PartitionOwnership, TopicPartition
from protocol.client.timeline import DEFAULT_MAX_EVENTS
from protocol.errors import Errors

LEAVE_REASON = "the consumer is being closed"  # what Kafka's consumer says on close
PartitionCounts = Mapping[str, int] | Callable[[], Mapping[str, int]]


class ClassicMemberClient(ClassicGroupMember):
    """One member of one classic consumer group: what to send when, and what it owns.

    It exists so that the classic consumer's protocol logic runs the same under any host (the
    ``ClassicConsumer`` Ray actor, a test's simulated clock next to a real coordinator shard)
    and can be checked without Ray, sockets or sleeping. Guarantees (``ClassicGroupMember``'s):
    at most one request in flight; no heartbeat while a JoinGroup waits (seed 003);
    partitions are used only between the SyncGroup reply that granted them and the moment
    they were revoked, lost, or could have been taken away, whether or not replies arrive
    (invariant 1); ``timeline`` records those moments (bounded: the oldest events are dropped
    first; ``events_recorded`` counts them all).
    """

    PROTOCOL_TYPE = PROTOCOL_TYPE
    PROTOCOL_ERROR = ConsumerProtocolError
    LEAVE_REASON = LEAVE_REASON

    def __init__(
        self,
        group_id: str,
        *,
        topics: list[str],
        instance_id: str | None = None,
        rack_id: str | None = None,
        assignors: Iterable[str] = ("range",),
        session_timeout_ms: int = 45_000,
        rebalance_timeout_ms: int = 60_000,
        heartbeat_interval_ms: int = 3_000,
        join_reason: str | None = None,
        on_revoke: Callback | None = None,
        on_assign: Callback | None = None,
        on_lost: Callback | None = None,
        partitions_per_topic: PartitionCounts | None = None,
        timeline_max_events: int = DEFAULT_MAX_EVENTS,
    ) -> None:
        names = list(assignors)
        kinds = {classic_assignor(name).rebalance_protocol for name in names}  # KeyError: unknown
        if not names or len(set(names)) != len(names):
            raise ValueError("name at least one assignor, each once")
        super().__init__(
            group_id,
            lambda n: PartitionOwnership(sorted, on_assign, on_revoke, on_lost, n),
            (session_timeout_ms, rebalance_timeout_ms, heartbeat_interval_ms),
            timeline_max_events,
            join_reason,
        )
        self.topics = sorted(set(topics))
        self.instance_id, self.rack_id, self.assignors = instance_id, rack_id, tuple(names)
        # Cooperative only if every assignor is (Kafka: the protocol all of them support).
        self.rebalance_protocol = COOPERATIVE if kinds == {COOPERATIVE} else EAGER
        self.on_revoke, self.on_assign, self.on_lost = on_revoke, on_assign, on_lost
        self._counts_source = partitions_per_topic
        self._leader = False
        self._leader_metadata: dict[str, int] | None = None

    # ------------------------------------------------------------------ what the caller sees

    @property
    def is_leader(self) -> bool:
        return self._leader

    @property
    def leader_metadata(self) -> dict[str, int] | None:
        """Partition counts the leader assigned with (None unless leading): a change in
        them is a reason to rebalance (``check_metadata``)."""
        return dict(self._leader_metadata) if self._leader_metadata is not None else None

    def metadata_changed(self) -> None:
        """The leader saw the partition counts of a subscribed topic change: rejoin, saying
        why (KIP-800), so the coordinator rebalances the group."""
        if self._state in TERMINAL or self._state == "leaving":
            return
        self._rejoin_requested, self._reason = True, TOPIC_METADATA_CHANGE
        self._leader_metadata = None
        if self._state == "stable" and self._in_flight is None:
            self._due = -math.inf

    def check_metadata(self) -> bool:
        """Leader only: compare the partition counts now with the ones it assigned with;
        a difference calls ``metadata_changed``. True if it did."""
        if self._leader_metadata is None:
            return False
        counts = self._counts()
        if all(counts.get(t, 0) == n for t, n in self._leader_metadata.items()):
            return False
        self.metadata_changed()
        return True

    # ------------------------------------------------------------------ a consumer's own

    def _join_protocols(self, now_s: float) -> list[m.JoinGroupRequestProtocol]:
        if self.rebalance_protocol == EAGER:
            self._own.end_all(now_s, "revoked", self.generation, self.member_id)
        cooperative = self.rebalance_protocol == COOPERATIVE
        subscription = Subscription(
            topics=list(self.topics),
            owned_partitions=grouped(self._own.owned) if cooperative else [],
            generation_id=self.generation if cooperative else NO_GENERATION,
            rack_id=self.rack_id,
        )
        metadata = encode_subscription(subscription)
        self._leader, self._leader_metadata = False, None
        return [m.JoinGroupRequestProtocol(name, metadata) for name in self.assignors]

    def _lead(self, now_s: float, sent: Sent, resp: m.JoinGroupResponse) -> bool:
        self._leader = bool(resp.leader) and resp.leader == self.member_id
        if self._leader:
            try:
                self._leader_metadata, self._sync_assignments = lead(
                    resp, self.topics, self._counts()
                )
            except (KeyError, ConsumerProtocolError):
                self._fail(sent.at_s, Errors.INCONSISTENT_GROUP_PROTOCOL)
                return False
        return True

    def _decode(self, raw: bytes) -> frozenset[TopicPartition]:
        return frozenset(
            (t, p) for t, ps in decode_assignment(raw).assigned_partitions for p in ps
        )

    def _delta(self, assigned: frozenset[TopicPartition]) -> tuple[frozenset, frozenset]:
        owned = self._own.owned
        return owned - assigned, assigned - owned

    def _rejoins_at_once(self) -> bool:
        return self.rebalance_protocol == COOPERATIVE

    def _forget_leadership(self) -> None:
        self._leader, self._leader_metadata = False, None

    def _counts(self) -> Mapping[str, int]:
        source = self._counts_source
        if source is None:
            return {}
        return source() if callable(source) else source
