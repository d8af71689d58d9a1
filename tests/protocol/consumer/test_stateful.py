"""Random KIP-848 group lifecycles against one shard, checking the design's invariants.

A pool of simulated clients (in two groups of one shard) joins, heartbeats, stalls, loses
replies, retries, leaves, leaves temporarily and comes back, changes its subscription (names
or a regex) or assignor; time jumps, also right onto the coordinator's timers; topics grow,
appear, vanish, come back under a new id and move racks; several requests share one turn.
After every step the machine checks invariants 1 and 2 of the design (exclusive ownership,
from both the clients' and the coordinator's view; epochs that never go back nor pass the
group's, while the group lives: the retention check deletes an empty one without offsets), and
at the end, once changes stop, invariant 3 (every group settles within a
bounded number of heartbeats, complete and balanced). Every heartbeat at an epoch > 0 sent
alone is also checked against seed 000's epoch rule (fenced unless current, or the previous
epoch of a lost reply with nothing owned outside the assignment); zombies exercise it.

The client model (``Client``) is a KIP-848 consumer reduced to what the invariants need:

* It only ever uses partitions a reply handed it, and drops what a reply takes away
  (``acknowledge=True``), or keeps using them for a while (``acknowledge=False``: its
  revocation callback is slow; it keeps reporting what it still owns).
* A lost reply leaves it with its old epoch and partitions; it forgets what it had not
  applied yet and sends a full heartbeat next (as Kafka's client does after a failure).
* FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: it drops everything and rejoins with epoch 0.
* Some report their partitions only when they changed or after a new assignment (null
  otherwise), as Kafka's client does; the others in every heartbeat.
* It keeps its own clock: once the coordinator *could* have fenced it (no reply for a
  session timeout, or unacknowledged revocations for a rebalance timeout since the
  coordinator last confirmed its state), it drops everything and rejoins. Without this no
  protocol could keep invariant 1 across timeouts; with it, the coordinator must never
  fence a member the client still believes in (checked: a joined client's member exists).
  Afterwards it rejoins at once, or first asks at its old epoch (owning nothing).

Only successful replies are lost: a lost fencing reply leaves a zombie in any protocol.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import hypothesis.strategies as st
from hypothesis import HealthCheck, settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from protocol import messages as m
from protocol import partitions as pm
from protocol.config import CoordinatorConfig
from protocol.consumer.member import STATIC_LEAVE_EPOCH
from protocol.consumer.records import ConsumerGroupMetadataKey
from protocol.errors import Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.records import PartitionMap, Record
from protocol.shard import CoordinatorResult, GroupCoordinatorShard

# No KIP-1263 assignment interval: ``settle`` converges without the clock moving (the
# interval's own properties: test_assignment_interval.py).
CONFIG = CoordinatorConfig(group_consumer_assignment_interval_ms=0)
SESSION_TIMEOUT_MS = CONFIG.group_consumer_session_timeout_ms

GROUPS = ("g", "g", "h")  # mostly one group; a second one shares the shard
SUBSCRIPTIONS: tuple[tuple[str, ...] | str, ...] = (
    ("foo",),
    ("bar",),
    ("bar", "foo"),
    "f.*",
    ("baz",),  # a topic that only exists now and then
)
ASSIGNORS = (None, None, "uniform", "range")  # None: the member names none, the default applies
RACKS = ("r0", "r1", "r2")
TOPIC_NAMES = ("foo", "bar", "fizz", "baz")  # fizz matches f.*, baz does not
REBALANCE_TIMEOUTS_MS = (25_000, 60_000)
TIME_STEPS_MS = (100, 1_000, 5_000, 15_000, 30_000, SESSION_TIMEOUT_MS, 61_000)
MAX_CLIENTS = 6
MAX_PARTITIONS = 10

JOINED = "joined"  # in the group as far as the client knows
REJOINING = "rejoining"  # fenced, timed out or not yet in: its next request is a join
AWAY = "away"  # a static member that left temporarily (epoch -2)
GONE = "gone"  # left the group (epoch -1)
STALE = "stale"  # dropped its partitions on its own timer; asks at its old epoch whether it's in

HEARTBEAT_ERRORS = {Errors.NONE, Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID}


@dataclass
class Client:
    name: str
    group_id: str
    subscription: tuple[str, ...] | str
    rebalance_timeout_ms: int
    instance_id: str | None = None
    server_member_id: bool = False  # joins with an empty member id, the coordinator names it
    server_assignor: str | None = None
    rack_id: str | None = None
    # After its own timer fired: rejoin at once (epoch 0), or first try its old epoch.
    retries_after_timeout: bool = False
    # Like Kafka's client, report owned partitions only when they changed or after a new
    # assignment (TopicPartitions null otherwise); or report them in every heartbeat.
    terse: bool = False
    last_reported: PartitionMap | None = None  # None: the next heartbeat must report
    incarnation: int = 0
    member_id: str = ""
    status: str = REJOINING
    epoch: int = 0
    owned: PartitionMap = field(default_factory=dict)
    # The member's assignment as the coordinator last told it, or None once a reply was lost.
    assigned_view: PartitionMap | None = None
    send_full: bool = True
    subscription_dirty: bool = False
    last_reply_ms: int = 0
    # When the coordinator last confirmed the client has nothing left to revoke.
    clean_ms: int = 0
    clean_chain: bool = False  # the last reply was such a confirmation
    # What it held before it last dropped everything: a zombie of it may still claim that.
    ghost: tuple[int, PartitionMap] | None = None
    history: list[str] = field(default_factory=list)
    # Check the replies against the protocol (off where another property is under test).
    strict: bool = True

    def __post_init__(self) -> None:
        if not self.server_member_id:
            self.member_id = self._own_member_id()

    def _own_member_id(self) -> str:
        return f"{self.name}.{self.incarnation}"

    # --- requests --------------------------------------------------------------------------

    def _subscription_fields(self) -> dict:
        out: dict = {"server_assignor": self.server_assignor, "rack_id": self.rack_id}
        if isinstance(self.subscription, str):
            out["subscribed_topic_regex"] = self.subscription
        else:
            out["subscribed_topic_names"] = list(self.subscription)
        return out

    def join_request(self) -> m.ConsumerGroupHeartbeatRequest:
        return m.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=0,
            instance_id=self.instance_id,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            topic_partitions=[],
            **self._subscription_fields(),
        )

    def heartbeat_request(self, acknowledge: bool) -> m.ConsumerGroupHeartbeatRequest:
        if acknowledge and self.assigned_view is not None:
            # Finish reconciling first: drop what was revoked, take what was given.
            self.owned = self.assigned_view
        extra: dict = {}
        if self.send_full or self.subscription_dirty:
            extra.update(self._subscription_fields())
        if self.send_full:
            extra.update(
                instance_id=self.instance_id, rebalance_timeout_ms=self.rebalance_timeout_ms
            )
        report = not (self.terse and not self.send_full and self.last_reported == self.owned)
        self.last_reported = self.owned if report else self.last_reported
        return m.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=self.epoch,
            topic_partitions=pm.to_wire(self.owned) if report else None,
            **extra,
        )

    def leave_request(self, epoch: int) -> m.ConsumerGroupHeartbeatRequest:
        return m.ConsumerGroupHeartbeatRequest(
            group_id=self.group_id,
            member_id=self.member_id,
            member_epoch=epoch,
            instance_id=self.instance_id,
        )

    # --- replies ---------------------------------------------------------------------------

    def on_reply(
        self,
        req: m.ConsumerGroupHeartbeatRequest,
        resp: m.ConsumerGroupHeartbeatResponse,
        now_ms: int,
        acknowledge: bool,
    ) -> None:
        joining = req.member_epoch == 0
        # Never UNRELEASED_INSTANCE_ID: a static client only takes a new member id once its
        # old member left for good or temporarily.
        self._expect(
            resp.error_code in HEARTBEAT_ERRORS,
            f"unexpected {_error_name(resp.error_code)}: {resp.error_message}",
        )
        if resp.error_code in (Errors.FENCED_MEMBER_EPOCH, Errors.UNKNOWN_MEMBER_ID):
            self.drop(f"{_error_name(resp.error_code)} at epoch {req.member_epoch}")
            return
        if resp.error_code != Errors.NONE:
            self.history.append(f"refused: {_error_name(resp.error_code)}")
            return
        if self.server_member_id and joining and not req.member_id:
            self._expect(bool(resp.member_id), "a join without a member id must be given one")
            self.member_id = resp.member_id or ""
        self._expect(
            resp.member_id == self.member_id, f"reply for {resp.member_id}, not {self.member_id}"
        )
        self._expect(
            resp.member_epoch >= max(req.member_epoch, 0),
            f"reply to a heartbeat at epoch {req.member_epoch} says epoch {resp.member_epoch}",
        )
        if self.status in (JOINED, STALE):
            self._expect(
                resp.member_epoch >= self.epoch,
                f"epoch went back from {self.epoch} to {resp.member_epoch}",
            )
        self.epoch = resp.member_epoch
        if resp.assignment is not None:
            self.assigned_view = pm.from_wire(resp.assignment.assigned_topic_partitions)
        self._expect(
            self.assigned_view is not None, "a reply to a full heartbeat must carry the assignment"
        )
        if self.assigned_view is None:
            return
        if req.topic_partitions is not None:
            # The coordinator saw what the client holds: if that is all within the assignment,
            # any revocation was acknowledged, and a new one (its timer) starts now.
            clean = pm.is_subset(pm.from_wire(req.topic_partitions), self.assigned_view)
        else:
            # Nothing reported: still clean only if nothing changed since the last time.
            clean = self.clean_chain and resp.assignment is None
        if resp.assignment is not None:
            self.last_reported = None
        if acknowledge:
            self.owned = self.assigned_view
        self.status = JOINED
        self.send_full = self.subscription_dirty = False
        self.last_reply_ms = now_ms
        self.clean_chain = clean
        if clean:
            self.clean_ms = now_ms
        self.history.append(f"epoch {self.epoch} owns {_fmt(self.owned)}")

    def _expect(self, ok: bool, what: str) -> None:
        if self.strict and not ok:
            raise AssertionError(f"{self.name}: {what}\n  history: {self.history[-8:]}")

    def on_lost_reply(self) -> None:
        self.assigned_view = self.last_reported = None
        self.send_full, self.clean_chain = True, False
        self.history.append("reply lost")

    def drop(self, why: str, status: str = REJOINING) -> None:
        if self.epoch > 0 and status in (REJOINING, STALE):
            self.ghost = (self.epoch, self.owned)
        self.status = status
        if status != STALE:
            self.epoch = 0
        self.owned = {}
        self.assigned_view = self.last_reported = None
        self.send_full, self.clean_chain = True, False
        self.history.append(f"drops everything: {why}")

    def new_incarnation(self) -> None:
        """A new consumer process for this client: a new member id."""
        self.incarnation += 1
        self.member_id = "" if self.server_member_id else self._own_member_id()

    @property
    def drop_deadline_ms(self) -> int:
        """The earliest time the coordinator may have fenced this member by a timer."""
        return min(
            self.last_reply_ms + SESSION_TIMEOUT_MS, self.clean_ms + self.rebalance_timeout_ms
        )


def _error_name(code: int) -> str:
    return Errors(code).name if code in Errors._value2member_map_ else str(code)


def _fmt(parts: PartitionMap) -> str:
    return "[" + ", ".join(f"{t}-{p}" for t, ps in sorted(parts.items()) for p in ps) + "]"


class GroupEvents(RuleBasedStateMachine):
    """Rules only: the events of a shard's life, driven through the client model.

    Every record the shard produces is kept in ``journal`` (one list per event) for the
    replay tests; the invariants live in ``GroupLifecycles``.
    """

    strict = True  # clients check every reply against the protocol

    def __init__(self) -> None:
        super().__init__()
        self.now_ms = 0
        self.topics: dict[str, tuple[str, int]] = {}  # name -> (topic id, partitions)
        # name -> how its partitions sit on racks: partition p on rack (p + shift) % 3
        self.rack_shift: dict[str, int | None] = {}
        self.topic_versions: Counter[str] = Counter()
        self.clients: list[Client] = []
        self.shard = GroupCoordinatorShard(config=CONFIG, metadata=MetadataImage(), now_ms=0)
        self.journal: list[list[Record]] = []

    # --- plumbing --------------------------------------------------------------------------

    def _record(self, result: CoordinatorResult) -> CoordinatorResult:
        self.journal.append(list(result.records))
        for r in result.records:
            if isinstance(r.key, ConsumerGroupMetadataKey) and r.value is None:
                self.group_deleted(r.key.group_id)
        return result

    def group_deleted(self, group_id: str) -> None:
        """The retention check deleted an empty group without offsets; a later join creates
        a new one, whose epochs start again (as Kafka's)."""

    def image(self) -> MetadataImage:
        def racks(name: str, n: int) -> tuple[frozenset[str], ...] | None:
            shift = self.rack_shift.get(name)
            if shift is None:
                return None
            return tuple(frozenset({RACKS[(p + shift) % len(RACKS)]}) for p in range(n))

        return MetadataImage(
            TopicMetadata(tid, name, n, racks(name, n)) for name, (tid, n) in self.topics.items()
        )

    def _client(self, i: int, *statuses: str) -> Client | None:
        matching = [c for c in self.clients if c.status in statuses]
        return matching[i % len(matching)] if matching else None

    def _send(
        self,
        calls: list[tuple[Client, m.ConsumerGroupHeartbeatRequest, bool, bool]],
    ) -> None:
        """Send (client, request, acknowledge, lose_reply) as one turn, deliver the replies."""
        if len(calls) == 1:
            expected = self._expected_error(calls[0][1])
            result = self._record(self.shard.handle(calls[0][1]))
            if self.strict and expected is not None:
                got = result.response.error_code
                assert got == expected, (
                    f"{calls[0][0].name}: expected {expected.name}, got {_error_name(got)} "
                    f"({result.response.error_message}) for {calls[0][1]}"
                )
        else:
            result = self._record(self.shard.handle_batch([req for _, req, _, _ in calls]))
        assert len(result.replies) == len(calls)
        for (client, req, acknowledge, lose), (_, resp) in zip(calls, result.replies, strict=True):
            assert resp is not None, "a heartbeat is never delayed"
            if req.member_epoch < 0:
                client._expect(
                    resp.error_code in (Errors.NONE, Errors.UNKNOWN_MEMBER_ID),
                    f"leave got {_error_name(resp.error_code)}: {resp.error_message}",
                )
                client._expect(
                    resp.error_code != Errors.NONE or resp.member_epoch == req.member_epoch,
                    f"leave at epoch {req.member_epoch} answered with {resp.member_epoch}",
                )
            elif lose and resp.error_code == Errors.NONE and req.member_epoch != 0:
                client.on_lost_reply()
            else:
                client.on_reply(req, resp, self.now_ms, acknowledge)

    def _expected_error(self, req: m.ConsumerGroupHeartbeatRequest) -> Errors | None:
        """Seed 000's epoch check (with its lost-reply edge case) for a heartbeat at epoch > 0."""
        if req.member_epoch <= 0:
            return None
        group = self.shard.groups.get(req.group_id)
        member = group.members.get(req.member_id) if group is not None else None
        if member is None:
            return Errors.UNKNOWN_MEMBER_ID
        if req.member_epoch == member.member_epoch:
            return Errors.NONE
        owned = pm.from_wire(req.topic_partitions) if req.topic_partitions is not None else None
        if (
            req.member_epoch == member.previous_member_epoch
            and member.member_epoch >= 0
            and owned is not None
            and pm.is_subset(owned, member.assigned_partitions)
        ):
            return Errors.NONE  # its reply was lost: accepted, as it owns nothing it shouldn't
        return Errors.FENCED_MEMBER_EPOCH

    def _heartbeat_call(self, client: Client, mode: str) -> tuple:
        if client.status == REJOINING:
            return (client, client.join_request(), True, False)
        acknowledge = mode != "slow"
        return (client, client.heartbeat_request(acknowledge), acknowledge, mode == "lost")

    # --- rules: membership -----------------------------------------------------------------

    @initialize(foo=st.integers(1, 8), bar=st.integers(1, 4))
    def create_topics(self, foo: int, bar: int) -> None:
        self._create("foo", foo)
        self._create("bar", bar)
        self._record(self.shard.update_metadata(self.image()))

    @precondition(lambda self: len(self.clients) < MAX_CLIENTS)
    @rule(
        group=st.sampled_from(GROUPS),
        subscription=st.sampled_from(SUBSCRIPTIONS),
        static=st.booleans(),
        server_member_id=st.booleans(),
        rebalance_timeout_ms=st.sampled_from(REBALANCE_TIMEOUTS_MS),
        server_assignor=st.sampled_from(ASSIGNORS),
        retries_after_timeout=st.booleans(),
        terse=st.booleans(),
        rack_id=st.sampled_from((None, *RACKS)),
    )
    def join_new_client(
        self,
        group: str,
        subscription: tuple[str, ...] | str,
        static: bool,
        server_member_id: bool,
        rebalance_timeout_ms: int,
        server_assignor: str | None,
        retries_after_timeout: bool,
        terse: bool,
        rack_id: str | None,
    ) -> None:
        name = f"c{len(self.clients)}"
        client = Client(
            name,
            group,
            subscription,
            rebalance_timeout_ms,
            instance_id=f"{name}-instance" if static else None,
            server_member_id=server_member_id,
            server_assignor=server_assignor,
            retries_after_timeout=retries_after_timeout,
            terse=terse,
            rack_id=rack_id,
            strict=self.strict,
        )
        self.clients.append(client)
        self._send([(client, client.join_request(), True, False)])

    @rule(i=st.integers(0, MAX_CLIENTS - 1), same_member_id=st.booleans())
    def rejoin(self, i: int, same_member_id: bool) -> None:
        """A fenced client rejoins; a static one comes back; a departed one starts anew."""
        client = self._client(i, REJOINING, AWAY, GONE)
        if client is None:
            return
        if client.status == GONE or (client.status == AWAY and not same_member_id):
            client.new_incarnation()
        client.status = REJOINING
        self._send([(client, client.join_request(), True, False)])

    @rule(i=st.integers(0, MAX_CLIENTS - 1), acknowledge=st.booleans())
    def heartbeat(self, i: int, acknowledge: bool) -> None:
        client = self._client(i, JOINED, STALE)
        if client is not None:
            self._send([self._heartbeat_call(client, "ack" if acknowledge else "slow")])

    @rule(i=st.integers(0, MAX_CLIENTS - 1), acknowledge=st.booleans())
    def heartbeat_whose_reply_is_lost(self, i: int, acknowledge: bool) -> None:
        client = self._client(i, JOINED, STALE)
        if client is not None:
            call = self._heartbeat_call(client, "lost")
            self._send([(call[0], call[1], acknowledge, True)])

    @rule(
        picks=st.lists(
            st.tuples(
                st.integers(0, MAX_CLIENTS - 1),
                st.sampled_from(["ack", "slow", "lost", "retry", "leave"]),
            ),
            min_size=2,
            max_size=5,
        )
    )
    def heartbeats_in_one_turn(self, picks: list[tuple[int, str]]) -> None:
        """Several clients' requests in one turn (joins and leaves too).

        "retry": a request and, after it timed out, its retry; "leave": a static member
        leaves temporarily, a dynamic one for good; an away static member comes back.
        """
        live = [c for c in self.clients if c.status in (JOINED, STALE, REJOINING, AWAY)]
        calls, seen = [], set()
        for i, mode in picks:
            if not live or (client := live[i % len(live)]).name in seen:
                continue
            seen.add(client.name)
            if client.status == AWAY:
                client.new_incarnation()
                client.status = REJOINING
                calls.append(self._heartbeat_call(client, "ack"))
            elif client.status == REJOINING:
                calls.append(self._heartbeat_call(client, "ack"))
            elif mode == "leave":
                static = client.instance_id is not None
                req = client.leave_request(STATIC_LEAVE_EPOCH if static else -1)
                client.drop("left in a batch", status=AWAY if static else GONE)
                calls.append((client, req, True, False))
            elif mode == "retry":
                first = self._heartbeat_call(client, "lost")
                client.on_lost_reply()
                calls += [first, self._heartbeat_call(client, "ack")]
            else:
                calls.append(self._heartbeat_call(client, mode))
        if calls:
            self._send(calls)

    @rule(modes=st.lists(st.sampled_from(["ack", "slow", "lost"]), min_size=1, max_size=6))
    def every_client_heartbeats(self, modes: list[str]) -> None:
        """One heartbeat from every client in or joining the group, one after the other."""
        live = [c for c in self.clients if c.status in (JOINED, STALE, REJOINING)]
        for n, client in enumerate(live):
            self._send([self._heartbeat_call(client, modes[n % len(modes)])])

    @rule(i=st.integers(0, MAX_CLIENTS - 1))
    def zombie_heartbeat(self, i: int) -> None:
        """A dropped client's old self (a process that missed its fencing) claims what it had.

        It sends its old epoch and partitions; the coordinator must fence it unless that is
        safe (seed 000). The client itself still owns nothing until a reply gives it some.
        """
        ghosts = [c for c in self.clients if c.status in (STALE, REJOINING) and c.ghost]
        if ghosts:
            client = ghosts[i % len(ghosts)]
            assert client.ghost is not None
            epoch, owned = client.ghost
            client.ghost = None
            req = m.ConsumerGroupHeartbeatRequest(
                group_id=client.group_id,
                member_id=client.member_id,
                member_epoch=epoch,
                topic_partitions=pm.to_wire(owned),
                rebalance_timeout_ms=client.rebalance_timeout_ms,
                **client._subscription_fields(),
            )
            client.history.append(f"zombie claims epoch {epoch} and {_fmt(owned)}")
            self._send([(client, req, True, False)])

    @rule(i=st.integers(0, MAX_CLIENTS - 1))
    def leave(self, i: int) -> None:
        client = self._client(i, JOINED, STALE)
        if client is not None:
            req = client.leave_request(-1)
            client.drop("left the group", status=GONE)
            self._send([(client, req, True, False)])

    @rule(i=st.integers(0, MAX_CLIENTS - 1))
    def leave_temporarily(self, i: int) -> None:
        statics = [
            c for c in self.clients if c.status in (JOINED, STALE) and c.instance_id is not None
        ]
        if statics:
            client = statics[i % len(statics)]
            req = client.leave_request(STATIC_LEAVE_EPOCH)
            client.drop("left temporarily", status=AWAY)
            self._send([(client, req, True, False)])

    @rule(i=st.integers(0, MAX_CLIENTS - 1), subscription=st.sampled_from(SUBSCRIPTIONS))
    def change_subscription(self, i: int, subscription: tuple[str, ...] | str) -> None:
        """The new subscription goes out with the client's next heartbeat."""
        client = self._client(i, JOINED, STALE, REJOINING, AWAY)
        if client is not None and client.subscription != subscription:
            client.subscription = subscription
            client.subscription_dirty = True

    @rule(i=st.integers(0, MAX_CLIENTS - 1), assignor=st.sampled_from(["uniform", "range"]))
    def change_server_assignor(self, i: int, assignor: str) -> None:
        client = self._client(i, JOINED, STALE, REJOINING, AWAY)
        if client is not None and client.server_assignor != assignor:
            client.server_assignor = assignor
            client.subscription_dirty = True

    # --- rules: time -----------------------------------------------------------------------

    @rule(ms=st.sampled_from(TIME_STEPS_MS))
    def advance_time(self, ms: int) -> None:
        self._tick(self.now_ms + ms)

    @rule(early=st.booleans())
    def advance_time_to_the_next_deadline(self, early: bool) -> None:
        """Right onto a coordinator timer (session, rebalance), or one millisecond before it."""
        deadline = self.shard.next_deadline_ms()
        if deadline is not None and deadline - early > self.now_ms:
            self._tick(deadline - early)

    def _tick(self, now_ms: int) -> None:
        self.now_ms = now_ms
        self._record(self.shard.tick(self.now_ms))
        for client in self.clients:
            if client.status == JOINED and self.now_ms >= client.drop_deadline_ms:
                status = STALE if client.retries_after_timeout else REJOINING
                client.drop(f"own timer at {self.now_ms} ms", status)

    # --- rules: metadata -------------------------------------------------------------------

    def _create(self, name: str, partitions: int) -> None:
        self.topic_versions[name] += 1
        self.topics[name] = (f"{name}-v{self.topic_versions[name]}", partitions)

    def _publish(self) -> None:
        self._record(self.shard.update_metadata(self.image()))

    @rule(name=st.sampled_from(TOPIC_NAMES), count=st.integers(1, 3))
    def add_partitions(self, name: str, count: int) -> None:
        if name in self.topics:
            tid, n = self.topics[name]
            self.topics[name] = (tid, min(n + count, MAX_PARTITIONS))
            self._publish()

    @rule(name=st.sampled_from(TOPIC_NAMES), partitions=st.integers(1, 4))
    def create_topic(self, name: str, partitions: int) -> None:
        if name not in self.topics:
            self._create(name, partitions)
            self._publish()

    @rule(name=st.sampled_from(TOPIC_NAMES), shift=st.sampled_from([None, 0, 1, 2]))
    def move_replicas(self, name: str, shift: int | None) -> None:
        """The topic's partitions move to other racks (None: racks unknown)."""
        if name in self.topics and self.rack_shift.get(name) != shift:
            self.rack_shift[name] = shift
            self._publish()

    @rule(name=st.sampled_from(TOPIC_NAMES))
    def delete_topic(self, name: str) -> None:
        if self.topics.pop(name, None) is not None:
            self._publish()

    @rule(name=st.sampled_from(TOPIC_NAMES), partitions=st.integers(1, 4))
    def recreate_topic(self, name: str, partitions: int) -> None:
        """Deleted and created again between two metadata images: same name, new id."""
        if name in self.topics:
            self._create(name, partitions)
            self._publish()

    # --- helpers for the checks ------------------------------------------------------------

    def topic_names_for(self, subscription: tuple[str, ...] | str) -> set[str]:
        if isinstance(subscription, str):
            return {n for n in self.topics if re.fullmatch(subscription, n)}
        return {n for n in subscription if n in self.topics}

    def describe_clients(self) -> str:
        return "\n".join(
            f"  {c.name} [{c.status}] member={c.member_id} epoch={c.epoch} "
            f"owned={_fmt(c.owned)} sub={c.subscription}\n    " + "\n    ".join(c.history[-8:])
            for c in self.clients
        )


class GroupLifecycles(GroupEvents):
    """The events, with the design's invariants checked after each and convergence at the end."""

    def __init__(self) -> None:
        super().__init__()
        self.member_epochs: dict[tuple[str, str], int] = {}
        self.group_epochs: dict[str, tuple[int, int]] = {}

    @invariant()
    def no_partition_is_ever_owned_by_two_clients(self) -> None:
        owner: dict[tuple[str, str, int], str] = {}
        for c in self.clients:
            for t, p in pm.pairs(c.owned):
                key = (c.group_id, t, p)
                assert key not in owner, (
                    f"{t}-{p} of group {c.group_id} is used by {owner[key]} and {c.name}\n"
                    + self.describe_clients()
                )
                owner[key] = c.name

    @invariant()
    def coordinator_never_gives_a_partition_to_two_members(self) -> None:
        for group in self.shard.groups.values():
            held: dict[tuple[str, int], str] = {}
            for mid, member in group.members.items():
                assigned = pm.pairs(member.assigned_partitions)
                pending = pm.pairs(member.partitions_pending_revocation)
                assert not assigned & pending, f"{mid} both holds and revokes {assigned & pending}"
                for tp in assigned | pending:
                    assert tp not in held, f"{tp} held by {held[tp]} and {mid}"
                    held[tp] = mid
            assert held == group.owners, f"owners index {group.owners} != members' {held}"

    @invariant()
    def clients_only_use_partitions_the_coordinator_gave_them(self) -> None:
        for c in self.clients:
            if c.status != JOINED:
                assert not c.owned, f"{c.name} is {c.status} but owns {_fmt(c.owned)}"
                continue
            group = self.shard.groups.get(c.group_id)
            member = group.members.get(c.member_id) if group is not None else None
            assert member is not None, (
                f"{c.name} ({c.member_id}) believes it is in {c.group_id} but the coordinator "
                f"removed it at {self.now_ms} ms\n" + self.describe_clients()
            )
            assert member.member_epoch != STATIC_LEAVE_EPOCH
            assert c.epoch <= member.member_epoch, (c.name, c.epoch, member.member_epoch)
            held = pm.union(member.assigned_partitions, member.partitions_pending_revocation)
            assert pm.is_subset(c.owned, held), (
                f"{c.name} uses {_fmt(c.owned)}, the coordinator gave it {_fmt(held)}\n"
                + self.describe_clients()
            )

    def group_deleted(self, group_id: str) -> None:
        self.group_epochs.pop(group_id, None)
        self.member_epochs = {k: v for k, v in self.member_epochs.items() if k[0] != group_id}

    @invariant()
    def epochs_never_go_back_nor_pass_the_group_epoch(self) -> None:
        seen: dict[tuple[str, str], int] = {}
        for gid, group in self.shard.groups.items():
            last_group, last_assignment = self.group_epochs.get(gid, (0, 0))
            assert group.group_epoch >= last_group, (gid, last_group, group.group_epoch)
            assert group.assignment_epoch >= last_assignment
            assert group.assignment_epoch <= group.group_epoch
            self.group_epochs[gid] = (group.group_epoch, group.assignment_epoch)
            for mid, member in group.members.items():
                last = self.member_epochs.get((gid, mid))
                if member.member_epoch == STATIC_LEAVE_EPOCH:  # away: keeps its last epoch
                    if last is not None:
                        seen[(gid, mid)] = last
                    continue
                assert last is None or member.member_epoch >= last, (
                    f"member {mid} went from epoch {last} back to {member.member_epoch}"
                )
                assert 0 <= member.member_epoch <= group.assignment_epoch, (
                    f"member {mid} at epoch {member.member_epoch}, "
                    f"assignment epoch {group.assignment_epoch}, group epoch {group.group_epoch}"
                )
                seen[(gid, mid)] = member.member_epoch
        self.member_epochs = seen  # a member that left and comes back is a new member

    def check_invariants_now(self) -> None:
        self.no_partition_is_ever_owned_by_two_clients()
        self.coordinator_never_gives_a_partition_to_two_members()
        self.clients_only_use_partitions_the_coordinator_gave_them()
        self.epochs_never_go_back_nor_pass_the_group_epoch()

    def teardown(self) -> None:
        # Hypothesis calls teardown from a ``finally``: after a failed step, let that failure
        # be the report rather than piling a convergence failure on top of it.
        if sys.exc_info()[0] is None and self.clients:
            settle(self, self.check_invariants_now)


def settle(machine: GroupEvents, check: Callable[[], None] = lambda: None) -> None:
    """Invariant 3: stop all changes; every live client heartbeats and acknowledges.

    Within 3 * clients + 5 rounds each group is stable, every subscribed partition is used
    by exactly one client, and the assignor's balance promise holds (homogeneous: sizes
    differ by at most one). ``check`` runs after every heartbeat.
    """
    for c in machine.clients:
        if c.status == AWAY:  # the static member's process comes back
            c.new_incarnation()
            c.status = REJOINING
    live = [c for c in machine.clients if c.status in (JOINED, STALE, REJOINING)]
    rounds = 3 * len(live) + 5
    why = "no rounds"
    for _ in range(rounds):
        for c in live:
            machine._send([machine._heartbeat_call(c, "ack")])
            check()
        why = _unsettled(machine, live)
        if why is None:
            break
    else:
        raise AssertionError(
            f"not settled after {rounds} rounds: {why}\n" + machine.describe_clients()
        )
    # Settled means quiet: another round changes nothing.
    before = len(machine.journal)
    for c in live:
        machine._send([machine._heartbeat_call(c, "ack")])
    written = [r for batch in machine.journal[before:] for r in batch]
    assert not written, f"a settled group still writes records: {written}"


def _unsettled(machine: GroupEvents, live: list[Client]) -> str | None:
    image = machine.image()
    for gid in sorted({c.group_id for c in live}):
        members = [c for c in live if c.group_id == gid]
        if any(c.status != JOINED for c in members):
            return f"{gid}: not every client is in"
        group = machine.shard.groups[gid]
        if group.state != "stable":
            return f"{gid}: state {group.state}"
        if sorted(group.members) != sorted(c.member_id for c in members):
            return f"{gid}: members {sorted(group.members)}"
        wanted: set[tuple[str, int]] = set()
        for c in members:
            for name in machine.topic_names_for(c.subscription):
                t = image.topic_by_name(name)
                wanted |= {(t.topic_id, p) for p in range(t.num_partitions)}
        used = Counter(tp for c in members for tp in pm.pairs(c.owned))
        if set(used) != wanted or any(n > 1 for n in used.values()):
            return f"{gid}: used {sorted(used.items())} but subscribed {sorted(wanted)}"
        why = _unbalanced(machine, group.assignor(CONFIG).name, members, image)
        if why is not None:
            return f"{gid}: {why}"
    return None


def _unbalanced(
    machine: GroupEvents, assignor: str, members: list[Client], image: MetadataImage
) -> str | None:
    """The assignors' balance promises (assignors/uniform.py, assignors/range.py)."""
    topics = {
        c.name: {image.topic_by_name(n).topic_id for n in machine.topic_names_for(c.subscription)}
        for c in members
    }
    homogeneous = len({frozenset(t) for t in topics.values()}) == 1
    if assignor == "range":
        if homogeneous:  # balanced topic by topic
            for t in next(iter(topics.values())):
                sizes = [len(c.owned.get(t, ())) for c in members]
                if max(sizes) - min(sizes) > 1:
                    return f"range assignor unbalanced on {t}: {sizes}"
        return None
    sizes = [pm.count(c.owned) for c in members]
    if homogeneous:
        if max(sizes) - min(sizes) > 1:
            return f"homogeneous but unbalanced {sizes}"
        return None
    # Heterogeneous: no partition stays with a member holding 2+ more than another member
    # subscribed to its topic.
    for x in members:
        for t, p in sorted(pm.pairs(x.owned)):
            for y in members:
                if t in topics[y.name] and pm.count(y.owned) <= pm.count(x.owned) - 2:
                    return (
                        f"{x.name} keeps {t}-{p} with {pm.count(x.owned)} partitions while "
                        f"{y.name}, subscribed to {t}, has {pm.count(y.owned)}"
                    )
    return None


SETTINGS = settings(
    max_examples=200,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def test_random_lifecycles_keep_ownership_exclusive_epochs_monotonic_and_converge():
    """Invariants 1-3 of the design under random joins, leaves, stalls, losses, time, topics."""
    run_state_machine_as_test(GroupLifecycles, settings=SETTINGS)


# ---------------------------------------------------------------- scenarios found by the machine


def run_steps(steps: list[tuple[str, dict]]) -> GroupLifecycles:
    """Run rules by name on a fresh machine, checking every invariant after each, then settle."""
    machine = GroupLifecycles()
    for name, args in steps:
        getattr(machine, name)(**args)
        machine.check_invariants_now()
    machine.teardown()
    return machine


def _new_client(**overrides) -> tuple[str, dict]:
    args = {
        "group": "g",
        "subscription": ("foo",),
        "static": False,
        "server_member_id": False,
        "rebalance_timeout_ms": 25_000,
        "server_assignor": None,
        "retries_after_timeout": False,
        "terse": False,
        "rack_id": None,
    }
    return ("join_new_client", {**args, **overrides})


def test_static_member_back_after_its_partitions_moved_gets_a_real_epoch():
    """Found by the machine: the rejoin was answered with epoch -2 (fixed in 6ad68c0).

    A static member leaves temporarily; while it is away another member takes half of its
    partitions in the target. Coming back (owning nothing), it must be moved to the group's
    epoch at once, not left at -2 waiting to revoke partitions its new process never had.
    """
    machine = run_steps(
        [
            ("create_topics", {"foo": 4, "bar": 1}),
            _new_client(static=True),
            ("leave_temporarily", {"i": 0}),
            _new_client(),
            ("rejoin", {"i": 0, "same_member_id": False}),
        ]
    )
    returned = machine.clients[0]
    assert returned.epoch == machine.shard.groups["g"].group_epoch


def test_static_member_back_after_its_topic_vanished_gets_a_real_epoch():
    """The machine's first shrunk example of the same bug: the topic went away instead."""
    run_steps(
        [
            ("create_topics", {"foo": 1, "bar": 1}),
            _new_client(static=True, subscription=("bar",)),
            ("delete_topic", {"name": "bar"}),
            ("leave_temporarily", {"i": 0}),
            ("rejoin", {"i": 0, "same_member_id": False}),
        ]
    )
