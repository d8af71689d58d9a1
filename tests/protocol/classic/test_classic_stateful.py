"""Random classic-group lifecycles against one shard, checking the design's invariants.

Simulated classic consumers (static or dynamic; eager or cooperative) join one group, sync,
heartbeat, rejoin with KIP-800 reasons, lose replies, crash, restart (static: reason
``restart``), leave and come back, several at once in one turn; time jumps, also right onto
the coordinator's timers; a topic grows; the coordinator fails over (a fresh shard replays
the records). The group's leader computes the assignment with Kafka's classic assignors
(``assignors.classic``: ``range`` for eager groups, ``cooperative-sticky`` otherwise).

The client model (``Client``), reduced to what the invariants need:

* Protocols. ``eager`` offers ``range``; ``upgrading`` offers ``cooperative-sticky`` and
  ``range`` and therefore behaves eagerly, as Kafka's consumer does; ``cooperative`` offers
  ``cooperative-sticky`` only. A run mixes eager with upgrading clients, or upgrading with
  cooperative ones, so every joiner shares a protocol with the group.
* An eager client revokes everything before each JoinGroup (checked). A cooperative one keeps
  what it owns, reports it in its subscription, takes exactly what its newest SyncGroup gives
  and rejoins when that took something away.
* It keeps its own clock, as a real consumer must for any protocol to keep ownership
  exclusive across timeouts: once the coordinator *could* have removed it, it drops
  everything. The coordinator promises (seed 003 and Kafka's timers) that a member is not
  removed before ``min(session, rebalance timeout)`` after a confirmation: a successful
  SyncGroup, a NONE heartbeat in its synced generation, or a delayed JoinGroup reply (the
  end of a join phase); and never while its JoinGroup waits in the join phase.
* A lost reply is noticed (a broken connection), not read; the client sends the request
  again. A crashed process loses its partitions and its in-flight requests.

Invariants checked after every step: no partition owned by two clients; eager clients own
nothing when they join; the group's generation never goes down while it exists (the
retention check deletes it once empty without offsets), nor any client's; every request is
answered exactly once (delayed replies included); a successful reply speaks for
the group's current generation and a current member; the coordinator's assignments in a
Stable group are disjoint; whenever the group is Stable or Empty, replaying every record so
far into a fresh shard describes the same group. At the end faults stop, time moves on and
everyone rejoins: the group must become Stable with every live client in it at the current
generation, every subscribed partition owned exactly once and every request answered.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from assignors.classic import ClassicSubscription, classic_assignor
from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.classic.records import GroupMetadataKey
from protocol.codec import decode_record, encode_record
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.records import Record
from protocol.shard import CoordinatorResult, GroupCoordinatorShard, error_response

GROUP = "g"
SESSION_MS = 10_000
REBALANCE_TIMEOUTS_MS = (12_000, 20_000)
TIME_STEPS_MS = (100, 1_000, 3_000, 5_000, 9_000, 11_000, 25_000)
MAX_CLIENTS = 5
PROTOCOLS = {
    "eager": ("range",),
    "upgrading": ("cooperative-sticky", "range"),
    "cooperative": ("cooperative-sticky",),
}
MIXES = (("eager", "upgrading"), ("upgrading", "cooperative"))
REASONS = (None, "upgrade", "topic_metadata_change")
FAULTS = ("lost", "lost", "rejoin", "rejoin", "crash", "restart", "restart", "leave", "come_back")
SUBSCRIPTIONS = (("foo",), ("bar", "foo"))
SETTLE_ROUNDS = 60
# (second kind of the mix?, static?, topics, rebalance timeout)
CLIENT_ARGS = st.tuples(
    st.booleans(),
    st.booleans(),
    st.sampled_from(SUBSCRIPTIONS),
    st.sampled_from(REBALANCE_TIMEOUTS_MS),
)
SETTLE_STEP_MS = 1_000

OUT = "out"  # must (re)join: its next request is a JoinGroup
JOINING = "joining"  # a JoinGroup in flight
JOINED = "joined"  # has a generation, must sync
SYNCING = "syncing"  # a SyncGroup in flight
STABLE = "stable"  # synced: heartbeats
GONE = "gone"  # left the group (may come back as a new member)

TopicPartition = tuple[str, int]


@dataclass(eq=False)
class Client:
    name: str
    kind: str
    topics: tuple[str, ...]
    rebalance_timeout_ms: int
    instance_id: str | None = None
    session_timeout_ms: int = SESSION_MS
    incarnation: int = 0
    member_id: str = ""
    status: str = OUT
    reason: str | None = None  # of the next JoinGroup
    generation: int = -1  # of the last successful JoinGroup
    synced_generation: int = -1  # whose assignment it holds
    highest_generation: int = -1
    owned: frozenset[TopicPartition] = frozenset()
    declared: frozenset[TopicPartition] = frozenset()  # what its last JoinGroup said it owns
    join_reply: m.JoinGroupResponse | None = None
    in_flight: object | None = None  # the JoinGroup/SyncGroup it waits on
    lost: bool = False  # in_flight was answered, but the reply never arrived
    safe_until_ms: int = 0  # the coordinator cannot have removed it before
    history: list[str] = field(default_factory=list)

    @property
    def eager(self) -> bool:
        return self.kind != "cooperative"

    @property
    def patience_ms(self) -> int:
        return min(self.session_timeout_ms, self.rebalance_timeout_ms)

    def deadline_ms(self) -> int | None:
        """When it must drop everything; None while its JoinGroup waits in the join phase."""
        if self.status == JOINING and not self.lost:
            return None
        return self.safe_until_ms

    # --- requests --------------------------------------------------------------------------

    def join_request(self) -> m.JoinGroupRequest:
        if self.eager:
            self.drop("revoke all before joining (eager)")
        assert not (self.eager and self.owned), f"{self.name} joins owning {self.owned}"
        owned: dict[str, list[int]] = {}
        self.declared = self.owned
        for t, p in sorted(self.owned):
            owned.setdefault(t, []).append(p)
        meta = encode_subscription(
            Subscription(list(self.topics), sorted(owned.items()), self.synced_generation)
        )
        req = m.JoinGroupRequest(
            group_id=GROUP,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocols=[m.JoinGroupRequestProtocol(n, meta) for n in PROTOCOLS[self.kind]],
            reason=self.reason,
            client_id=self.name,
        )
        self.status, self.in_flight, self.lost = JOINING, req, False
        return req

    def sync_request(self, image: MetadataImage) -> m.SyncGroupRequest:
        reply = self.join_reply
        assert reply is not None
        assignments = []
        if reply.leader == self.member_id and not reply.skip_assignment:
            assignments = leader_assignment(reply, image)
        req = m.SyncGroupRequest(
            GROUP,
            self.generation,
            self.member_id,
            self.instance_id,
            "consumer",
            reply.protocol_name,
            assignments,
        )
        self.status, self.in_flight, self.lost = SYNCING, req, False
        return req

    def resend(self) -> object:
        """The in-flight request again, after its reply was lost."""
        req = self.in_flight
        if isinstance(req, m.JoinGroupRequest):
            self.status = OUT
            return self.join_request()
        assert isinstance(req, m.SyncGroupRequest)
        again = m.SyncGroupRequest(**vars(req))
        self.in_flight, self.lost = again, False
        return again

    def heartbeat_request(self) -> m.HeartbeatRequest:
        return m.HeartbeatRequest(GROUP, self.generation, self.member_id, self.instance_id)

    def leave_request(self) -> m.LeaveGroupRequest:
        who = m.MemberIdentity(self.member_id, self.instance_id, "shutting down")
        return m.LeaveGroupRequest(GROUP, [who])

    # --- state changes ---------------------------------------------------------------------

    def drop(self, why: str) -> None:
        if self.owned:
            self.history.append(f"dropped {sorted(self.owned)}: {why}")
        self.owned = frozenset()

    def rejoin(self, why: str, forget_id: bool = False) -> None:
        self.history.append(f"rejoin: {why}")
        self.status, self.in_flight, self.lost, self.reason = OUT, None, False, None
        if forget_id:
            self.member_id = ""

    def crash(self) -> None:
        """The process dies: partitions, in-flight requests and (dynamic) member id go."""
        self.drop("crashed")
        self.incarnation += 1
        self.status, self.in_flight, self.lost, self.join_reply = OUT, None, False, None
        self.member_id = ""
        self.generation = self.synced_generation = -1
        self.reason = cg.RESTART if self.instance_id is not None else None

    # --- replies ---------------------------------------------------------------------------

    def on_lost(self, req: object, now_ms: int, delayed: bool) -> None:
        if req is not self.in_flight:
            return  # a heartbeat's reply: nothing to redo
        self.lost = True
        if isinstance(req, m.JoinGroupRequest) and delayed:
            # Its join phase ended now (only its own leave could have ended it otherwise).
            self.safe_until_ms = max(self.safe_until_ms, now_ms + self.patience_ms)

    def on_reply(self, req: object, resp: object, now_ms: int, delayed: bool) -> None:
        code = resp.error_code
        assert code != Errors.FENCED_INSTANCE_ID, f"{self.name}'s live process was fenced"
        if isinstance(req, m.JoinGroupRequest):
            if req is self.in_flight:
                self._on_join(resp, now_ms, delayed)
        elif isinstance(req, m.SyncGroupRequest):
            if req is self.in_flight:
                self._on_sync(resp, now_ms)
        elif isinstance(req, m.HeartbeatRequest):
            self._on_heartbeat(req, resp, now_ms)
        else:
            assert isinstance(resp, m.LeaveGroupResponse) and code == Errors.NONE, resp

    def _on_join(self, resp: m.JoinGroupResponse, now_ms: int, delayed: bool) -> None:
        code = resp.error_code
        if code == Errors.NOT_COORDINATOR:
            self.lost = True  # the coordinator moved: send it again
            return
        self.in_flight = None
        if code == Errors.NONE:
            assert resp.generation_id >= self.highest_generation, (
                f"{self.name}: generation {resp.generation_id} after {self.highest_generation}"
            )
            self.highest_generation = resp.generation_id
            self.member_id, self.generation = resp.member_id, resp.generation_id
            self.join_reply, self.status, self.reason = resp, JOINED, None
            if delayed:
                self.safe_until_ms = max(self.safe_until_ms, now_ms + self.patience_ms)
        elif code == Errors.MEMBER_ID_REQUIRED:
            self.member_id, self.status = resp.member_id, OUT
        elif code == Errors.UNKNOWN_MEMBER_ID:
            self.drop("JoinGroup: unknown member")
            self.rejoin("unknown member", forget_id=True)
        elif code == Errors.REBALANCE_IN_PROGRESS:
            self.status = OUT
        else:
            raise AssertionError(f"{self.name}: unexpected JoinGroup reply {resp}")

    def _on_sync(self, resp: m.SyncGroupResponse, now_ms: int) -> None:
        code = resp.error_code
        if code == Errors.NOT_COORDINATOR:
            self.lost = True  # the coordinator moved: send it again
            return
        self.in_flight = None
        if code == Errors.NONE:
            given = frozenset(
                (t, p)
                for t, ps in decode_assignment(resp.assignment).assigned_partitions
                for p in ps
            )
            # What the leader took away from what this client declared at its join is revoked
            # too, even if the client let it go meanwhile: only a rejoin hands it over.
            revoked = (self.owned | self.declared) - given
            self.owned, self.synced_generation, self.status = given, self.generation, STABLE
            self.safe_until_ms = max(self.safe_until_ms, now_ms + self.patience_ms)
            self.history.append(f"gen {self.generation}: owns {sorted(given)}")
            if revoked and not self.eager:
                self.rejoin(f"revoked {sorted(revoked)}")
        elif code == Errors.REBALANCE_IN_PROGRESS:
            self.rejoin("SyncGroup: rebalance in progress")
        elif code == Errors.ILLEGAL_GENERATION:
            self.drop("SyncGroup: illegal generation")
            self.rejoin("illegal generation")
        elif code == Errors.UNKNOWN_MEMBER_ID:
            self.drop("SyncGroup: unknown member")
            self.rejoin("unknown member", forget_id=True)
        else:
            raise AssertionError(f"{self.name}: unexpected SyncGroup reply {resp}")

    def _on_heartbeat(self, req: m.HeartbeatRequest, resp: m.HeartbeatResponse, now_ms: int):
        code = resp.error_code
        if req.generation_id != self.generation or req.member_id != self.member_id:
            return  # the client moved on since
        if code == Errors.NONE:
            if self.status == STABLE and self.synced_generation == self.generation:
                self.safe_until_ms = max(self.safe_until_ms, now_ms + self.patience_ms)
        elif code == Errors.REBALANCE_IN_PROGRESS:
            if self.status == STABLE:
                self.rejoin("heartbeat: rebalance in progress")
        elif code == Errors.ILLEGAL_GENERATION:
            self.drop("heartbeat: illegal generation")
            self.rejoin("illegal generation")
        elif code == Errors.UNKNOWN_MEMBER_ID:
            self.drop("heartbeat: unknown member")
            self.rejoin("unknown member", forget_id=True)
        else:
            raise AssertionError(f"{self.name}: unexpected heartbeat reply {resp}")


def leader_assignment(
    reply: m.JoinGroupResponse, image: MetadataImage
) -> list[m.SyncGroupRequestAssignment]:
    """The leader runs the group's classic assignor over the members' subscriptions."""
    subscriptions = {}
    for member in reply.members:
        sub = decode_subscription(member.metadata)
        owned = [(t, p) for t, ps in sub.owned_partitions for p in ps]
        subscriptions[member.member_id] = ClassicSubscription(
            sub.topics, owned, sub.generation_id, sub.rack_id, member.group_instance_id
        )
    sizes = {t.name: t.num_partitions for t in image.topics()}
    plan = classic_assignor(reply.protocol_name).assign(sizes, subscriptions)
    out = []
    for member_id, tps in plan.items():
        by_topic: dict[str, list[int]] = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        data = encode_assignment(Assignment(sorted(by_topic.items())))
        out.append(m.SyncGroupRequestAssignment(member_id, data))
    return out


@dataclass
class Pending:
    req: object
    client: Client
    incarnation: int
    lose: bool
    sent_turn: int


class ClassicLifecycles(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.clients: list[Client] = []
        self.records: list[Record] = []
        self.outstanding: dict[int, Pending] = {}
        self.turn = 0
        self.replaced_in_turn: set[str] = set()
        self.highest_generation = 0
        self.topics = {"foo": 4, "bar": 2}
        self.mix: tuple[str, str] = MIXES[0]
        self.shard = GroupCoordinatorShard(CoordinatorConfig(), self.image())
        self.shadow = GroupCoordinatorShard(CoordinatorConfig(), self.image())

    def image(self) -> MetadataImage:
        return MetadataImage(
            [TopicMetadata(f"{name}-id", name, n) for name, n in sorted(self.topics.items())]
        )

    # --- plumbing --------------------------------------------------------------------------

    def _send(self, calls: list[tuple[Client, object, bool]]) -> CoordinatorResult:
        self.turn += 1
        for client, req, lose in calls:
            self.outstanding[id(req)] = Pending(req, client, client.incarnation, lose, self.turn)
        reqs = [req for _, req, _ in calls]
        # Static members whose new process joins in this turn: a reply the turn gave their old
        # member id earlier (a SyncGroup answered before the JoinGroup replaced the id) is
        # checked against the state at the turn's end, where that id is already gone.
        self.replaced_in_turn = {
            req.group_instance_id for req in reqs
            if isinstance(req, m.JoinGroupRequest) and req.group_instance_id is not None
        }
        res = self.shard.handle(reqs[0]) if len(reqs) == 1 else self.shard.handle_batch(reqs)
        self._deliver(res)
        self.replaced_in_turn = set()
        return res

    def _deliver(self, res: CoordinatorResult) -> None:
        for r in res.records:
            self.records.append(r)
            self.shadow.replay(decode_record(encode_record(r)))
            if isinstance(r.key, GroupMetadataKey) and r.value is None:
                self._group_deleted()
        for req, resp in res.replies:
            pending = self.outstanding.pop(id(req), None)
            assert pending is not None and pending.req is req, (
                f"{type(req).__name__} answered twice or never asked: {resp}"
            )
            self._check_reply(req, resp)
            client = pending.client
            if client.incarnation != pending.incarnation or client.status == GONE:
                continue  # its process is gone
            delayed = pending.sent_turn != self.turn
            if pending.lose:
                client.on_lost(req, self.shard.now_ms, delayed)
            else:
                client.on_reply(req, resp, self.shard.now_ms, delayed)

    def _group_deleted(self) -> None:
        """The retention check deleted the empty group (it had no offsets): a later join
        creates a new group, whose generations start again, as Kafka's do."""
        self.highest_generation = 0
        for c in self.clients:
            c.highest_generation = -1

    def _check_reply(self, req: object, resp: object) -> None:
        """A successful reply speaks for the group's current generation."""
        if getattr(resp, "error_code", None) != Errors.NONE:
            return
        group = self.shard.groups.get(GROUP)
        if isinstance(resp, m.JoinGroupResponse):
            assert group is not None and resp.generation_id == group.generation_id, resp
        elif isinstance(req, (m.SyncGroupRequest, m.HeartbeatRequest)):
            assert group is not None and req.generation_id == group.generation_id, (req, resp)
            assert req.member_id in group.members or (
                req.group_instance_id in self.replaced_in_turn
                and group.static_members.get(req.group_instance_id) != req.member_id
            ), (req, resp)

    def _next_call(self, client: Client, lose: bool = False) -> tuple | None:
        """The request the client sends next, if any."""
        if client.status == OUT:
            return (client, client.join_request(), lose)
        if client.status in (JOINING, SYNCING) and client.lost:
            return (client, client.resend(), lose)
        if client.status == JOINED:
            return (client, client.sync_request(self.image()), lose)
        if client.status in (SYNCING, STABLE):
            return (client, client.heartbeat_request(), lose)
        return None

    def _step(self, client: Client, lose: bool = False) -> None:
        call = self._next_call(client, lose)
        if call is None:
            return
        self._send([call])
        if client.status == OUT and client.member_id and not lose and call[1].member_id == "":
            # MEMBER_ID_REQUIRED: a client joins again at once with the id it was given.
            self._send([(client, client.join_request(), False)])

    def _advance_to(self, now_ms: int) -> None:
        now_ms = max(now_ms, self.shard.now_ms)
        for c in self.live():
            deadline = c.deadline_ms()
            if deadline is not None and deadline <= now_ms:
                if c.owned:
                    c.drop(f"own timer at {deadline}")
                if c.status == STABLE:
                    c.rejoin("own timer")
        self.turn += 1
        self._deliver(self.shard.tick(now_ms))

    def live(self) -> list[Client]:
        return [c for c in self.clients if c.status != GONE]

    def _client(self, i: int, *statuses: str) -> Client | None:
        fit = [c for c in self.clients if c.status in statuses]
        return fit[i % len(fit)] if fit else None

    # --- rules -----------------------------------------------------------------------------

    @initialize(
        foo=st.integers(1, 6),
        bar=st.integers(1, 3),
        mix=st.sampled_from(MIXES),
        delay_ms=st.sampled_from([0, 3_000]),
        first=st.lists(CLIENT_ARGS, min_size=1, max_size=4),
        start_stable=st.booleans(),
    )
    def setup(self, foo, bar, mix, delay_ms, first, start_stable) -> None:
        """A group of a few clients, already Stable or still forming."""
        self.topics = {"foo": foo, "bar": bar}
        self.mix = mix
        config = CoordinatorConfig(group_initial_rebalance_delay_ms=delay_ms)
        self.shard = GroupCoordinatorShard(config, self.image())
        self.shadow = GroupCoordinatorShard(config, self.image())
        for args in first:
            self.new_client(*args)
        if start_stable:
            settle(self)

    @precondition(lambda self: len(self.clients) < MAX_CLIENTS)
    @rule(args=CLIENT_ARGS)
    def a_client_starts(self, args: tuple) -> None:
        self.new_client(*args)

    def new_client(self, second_kind, static, topics, rebalance_timeout_ms) -> None:
        name = f"c{len(self.clients)}"
        client = Client(
            name,
            self.mix[int(second_kind)],
            topics,
            rebalance_timeout_ms,
            instance_id=f"{name}-instance" if static else None,
        )
        self.clients.append(client)
        self._step(client)

    @rule(
        i=st.integers(0, MAX_CLIENTS - 1),
        fault=st.sampled_from(FAULTS),
        reason=st.sampled_from(REASONS),
    )
    def something_happens_to_a_client(self, i: int, fault: str, reason: str | None) -> None:
        """One fault (rarer than progress: a single rule among the progress rules)."""
        if fault == "lost":
            self.step_whose_reply_is_lost(i)
        elif fault == "rejoin":
            self.rejoin_on_purpose(i, reason)
        elif fault in ("crash", "restart"):
            self.crash(i, rejoin_at_once=fault == "restart")
        elif fault == "leave":
            self.leave(i)
        else:
            self.come_back(i)

    @rule(i=st.integers(0, MAX_CLIENTS - 1))
    def step(self, i: int) -> None:
        """A client's natural next request: join, sync, heartbeat, or a retry."""
        busy = [c for c in self.live() if c.status != JOINING or c.lost]
        if busy:
            self._step(busy[i % len(busy)])

    def step_whose_reply_is_lost(self, i: int) -> None:
        client = self._client(i, OUT, JOINING, JOINED, SYNCING, STABLE)
        if client is not None:
            self._step(client, lose=True)

    def rejoin_on_purpose(self, i: int, reason: str | None) -> None:
        client = self._client(i, STABLE)
        if client is not None:
            client.rejoin(f"on purpose ({reason})")
            client.reason = reason
            self._step(client)

    def crash(self, i: int, rejoin_at_once: bool) -> None:
        """The process dies; a static one comes back with reason restart."""
        client = self._client(i, OUT, JOINING, JOINED, SYNCING, STABLE)
        if client is not None:
            client.history.append("crashed")
            client.crash()
            if rejoin_at_once:
                self._step(client)

    def leave(self, i: int) -> None:
        client = self._client(i, OUT, JOINING, JOINED, SYNCING, STABLE)
        if client is None or (not client.member_id and client.instance_id is None):
            return
        client.drop("leaving")
        req = client.leave_request()
        client.status, client.in_flight = GONE, None
        client.history.append("left")
        self._send([(client, req, False)])

    def come_back(self, i: int) -> None:
        client = self._client(i, GONE)
        if client is not None:
            client.crash()  # a new process: no member id, nothing owned
            client.history.append("came back")
            self._step(client)

    @rule(
        picks=st.lists(
            st.tuples(st.integers(0, MAX_CLIENTS - 1), st.booleans()), min_size=2, max_size=4
        )
    )
    def several_in_one_turn(self, picks: list[tuple[int, bool]]) -> None:
        live = [c for c in self.clients if c.status != GONE]
        calls, seen = [], set()
        for i, lose in picks:
            if not live:
                return
            client = live[i % len(live)]
            if client.name in seen:
                continue
            seen.add(client.name)
            call = self._next_call(client, lose)
            if call is not None:
                calls.append(call)
        if calls:
            self._send(calls)

    @rule(ms=st.sampled_from(TIME_STEPS_MS))
    def time_passes(self, ms: int) -> None:
        self._advance_to(self.shard.now_ms + ms)

    @rule(offset_ms=st.sampled_from([-1, 0, 1]))
    def time_reaches_the_next_timer(self, offset_ms: int) -> None:
        deadline = self.shard.next_deadline_ms()
        if deadline is not None:
            self._advance_to(deadline + offset_ms)

    @rule(batched=st.booleans())
    def everyone_steps(self, batched: bool) -> None:
        """A round: each live client takes its next step, one by one or in one turn."""
        if batched:
            calls = [call for c in self.live() if (call := self._next_call(c)) is not None]
            if calls:
                self._send(calls)
        else:
            for c in self.live():
                self._step(c)

    @rule()
    def everyone_heartbeats(self) -> None:
        for c in self.live():
            if c.status in (SYNCING, STABLE) and not c.lost:
                self._send([(c, c.heartbeat_request(), False)])

    @rule(more=st.integers(1, 3))
    def foo_grows(self, more: int) -> None:
        self.topics["foo"] += more
        self.turn += 1
        self._deliver(self.shard.update_metadata(self.image()))

    @rule()
    def coordinator_fails_over(self) -> None:
        """A fresh shard loads the records; requests held by the old one are answered
        NOT_COORDINATOR by the runtime, and their clients send them again."""
        old = self.shard
        fresh = GroupCoordinatorShard(old.config, self.image(), now_ms=old.now_ms)
        for r in self.records:
            fresh.replay(decode_record(encode_record(r)))
        held = [p.req for p in self.outstanding.values()]
        self.shard = fresh
        self.turn += 1
        orphans = CoordinatorResult(
            replies=[(req, error_response(req, Errors.NOT_COORDINATOR, "moved")) for req in held]
        )
        now = fresh.now_ms
        for p in list(self.outstanding.values()):
            client = p.client
            if (
                isinstance(p.req, m.JoinGroupRequest)
                and p.req is client.in_flight
                and client.incarnation == p.incarnation
            ):
                # The new coordinator restarted every member's session as it loaded.
                client.safe_until_ms = max(client.safe_until_ms, now + client.patience_ms)
        self._deliver(orphans)
        self._deliver(fresh.update_metadata(self.image()))

    # --- invariants ------------------------------------------------------------------------

    @invariant()
    def no_partition_is_owned_by_two_clients(self) -> None:
        owners: dict[TopicPartition, str] = {}
        for c in self.clients:
            for tp in c.owned:
                assert tp not in owners, (
                    f"{tp} owned by {owners[tp]} and {c.name}\n" + self.describe_clients()
                )
                owners[tp] = c.name

    @invariant()
    def generations_never_go_down(self) -> None:
        group = self._described()
        if group is not None:
            assert group.generation_id >= self.highest_generation
            self.highest_generation = group.generation_id

    @invariant()
    def a_stable_groups_assignments_are_disjoint(self) -> None:
        group = self._described()
        if group is None or group.group_state != cg.STABLE:
            return
        seen: Counter = Counter()
        for mem in group.members:
            for t, ps in decode_assignment(mem.member_assignment).assigned_partitions:
                seen.update((t, p) for p in ps)
        assert all(n == 1 for n in seen.values()), seen

    @invariant()
    def replaying_the_records_describes_the_same_group(self) -> None:
        group = self._described()
        if group is None or group.generation_id == 0:
            return  # never persisted yet (see test_a_group_created_by_a_first_join_...)
        if group.group_state not in (cg.STABLE, cg.EMPTY):
            return
        replayed = self.shadow.handle(m.DescribeGroupsRequest([GROUP])).response.groups[0]
        assert replayed == group, f"replayed:\n{replayed}\nlive:\n{group}"

    def _described(self) -> m.DescribeGroupsResponseGroup | None:
        group = self.shard.handle(m.DescribeGroupsRequest([GROUP])).response.groups[0]
        return None if group.error_code == Errors.GROUP_ID_NOT_FOUND else group

    def describe_clients(self) -> str:
        lines = [f"t={self.shard.now_ms} group={self._described()}"]
        for c in self.clients:
            lines.append(
                f"  {c.name} {c.kind} {c.instance_id} {c.status} id={c.member_id} "
                f"gen={c.generation}/{c.synced_generation} owns={sorted(c.owned)} "
                f"safe_until={c.safe_until_ms} lost={c.lost}\n    " + "\n    ".join(c.history[-8:])
            )
        return "\n".join(lines)

    def teardown(self) -> None:
        # Hypothesis calls teardown from a ``finally``: after a failed step, let that failure
        # be the report rather than piling a convergence failure on top of it.
        if sys.exc_info()[0] is None and self.clients:
            settle(self)


def settle(machine: ClassicLifecycles) -> None:
    """Faults stop; every live client takes its next step each second: the group must end
    Stable, every live client in it at the current generation, every subscribed partition
    owned exactly once, and every request answered."""
    why = "no rounds"
    for _ in range(SETTLE_ROUNDS):
        for c in machine.live():
            machine._step(c)
            machine.no_partition_is_owned_by_two_clients()
        why = unsettled(machine)
        if why is None:
            break
        machine._advance_to(machine.shard.now_ms + SETTLE_STEP_MS)
    else:
        raise AssertionError(
            f"not settled after {SETTLE_ROUNDS} rounds: {why}\n" + machine.describe_clients()
        )
    machine.replaying_the_records_describes_the_same_group()


def unsettled(machine: ClassicLifecycles) -> str | None:
    live = machine.live()
    group = machine._described()
    if machine.outstanding:
        return f"{len(machine.outstanding)} requests wait for their replies"
    if not live:
        return None
    if group is None or group.group_state != cg.STABLE:
        return f"group {group and group.group_state}"
    if sorted(x.member_id for x in group.members) != sorted(c.member_id for c in live):
        return f"members {[x.member_id for x in group.members]}"
    for c in live:
        if c.status != STABLE or c.synced_generation != group.generation_id:
            return f"{c.name} {c.status} at generation {c.synced_generation}"
    wanted = {(t, p) for c in live for t in c.topics for p in range(machine.topics[t])}
    used = Counter(tp for c in live for tp in c.owned)
    if set(used) != wanted or any(n > 1 for n in used.values()):
        return f"owned {sorted(used.items())}, subscribed {sorted(wanted)}"
    return None


SETTINGS = settings(max_examples=300, stateful_step_count=50, deadline=None)


def test_random_classic_lifecycles_keep_ownership_exclusive_and_converge():
    run_state_machine_as_test(ClassicLifecycles, settings=SETTINGS)
