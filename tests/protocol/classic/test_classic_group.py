"""Classic groups at the shard (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups,
ListGroups): one rule of Kafka's classic coordinator, or of seed 003, per test.

``Bench`` is a shard plus everything it answered and wrote; ``Consumer`` speaks to it as a
classic consumer does: it learns its member id from MEMBER_ID_REQUIRED, its generation from
the JoinGroup reply (which may come later, through another member's event) and its assignment
from the SyncGroup reply. Refused requests live in ``test_classic_validation``, static
membership and KIP-800 in ``test_classic_static``, failover and replay in
``test_classic_failover``, random runs in ``test_classic_stateful``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from protocol import messages as m
from protocol.classic import group as cg
from protocol.classic.consumer_protocol import Subscription, encode_subscription
from protocol.classic.records import GroupMetadataKey, GroupMetadataValue
from protocol.config import CoordinatorConfig
from protocol.errors import Errors
from protocol.records import Record
from protocol.shard import CoordinatorResult, GroupCoordinatorShard
from tests.protocol.driver import image

SESSION_MS = 10_000
REBALANCE_MS = 30_000
DELAY_MS = 3_000  # Kafka's group.initial.rebalance.delay.ms
CONFIG = CoordinatorConfig(group_initial_rebalance_delay_ms=DELAY_MS)
NO_DELAY = CoordinatorConfig(group_initial_rebalance_delay_ms=0)


def subscription(*topics: str, owned=(), generation: int = -1) -> bytes:
    return encode_subscription(Subscription(list(topics), list(owned), generation))


FOO = subscription("foo")


class Bench:
    """A shard, the records it wrote and the replies it gave, routed back to their senders."""

    def __init__(self, config: CoordinatorConfig = CONFIG, metadata=None, now_ms: int = 0) -> None:
        self.image = metadata if metadata is not None else image(foo=4, bar=2)
        self.shard = GroupCoordinatorShard(config, self.image, now_ms=now_ms)
        self.records: list[Record] = []
        self.answers: list[tuple[object, object]] = []
        self._senders: list[tuple[object, Consumer]] = []

    @property
    def now_ms(self) -> int:
        return self.shard.now_ms

    def consumer(self, name: str, **kwargs) -> Consumer:
        return Consumer(self, name, **kwargs)

    def send(self, req: object, sender: Consumer | None = None) -> CoordinatorResult:
        if sender is not None:
            self._senders.append((req, sender))
        return self._take(self.shard.handle(req))

    def batch(self, reqs: list[object]) -> CoordinatorResult:
        return self._take(self.shard.handle_batch(reqs))

    def tick(self, now_ms: int) -> CoordinatorResult:
        return self._take(self.shard.tick(now_ms))

    def advance(self, ms: int) -> CoordinatorResult:
        return self.tick(self.now_ms + ms)

    def update_metadata(self, metadata) -> CoordinatorResult:
        self.image = metadata
        return self._take(self.shard.update_metadata(metadata))

    def _take(self, res: CoordinatorResult) -> CoordinatorResult:
        self.records += res.records
        for req, resp in res.replies:
            assert self.answer(req) is None, f"{type(req).__name__} answered twice"
            self.answers.append((req, resp))
            for sent, sender in self._senders:
                if sent is req:
                    sender.accept(req, resp)
        return res

    def answer(self, req: object) -> object | None:
        return next((resp for q, resp in self.answers if q is req), None)

    def describe(self, group_id: str = "g") -> m.DescribeGroupsResponseGroup:
        return self.shard.handle(m.DescribeGroupsRequest([group_id])).response.groups[0]

    def group(self, group_id: str = "g") -> cg.ClassicGroup:
        group = self.shard.groups[group_id]
        assert isinstance(group, cg.ClassicGroup)
        return group

    def state(self, group_id: str = "g") -> str:
        return self.describe(group_id).group_state

    def group_records(self, res: CoordinatorResult | None = None) -> list[GroupMetadataValue]:
        records = self.records if res is None else res.records
        return [r.value for r in records if isinstance(r.key, GroupMetadataKey)]


@dataclass(eq=False)
class Consumer:
    """A classic consumer reduced to the protocol: ids, generation, assignment."""

    bench: Bench
    name: str
    instance_id: str | None = None
    protocols: list[tuple[str, bytes]] = field(default_factory=lambda: [("range", FOO)])
    session_timeout_ms: int = SESSION_MS
    rebalance_timeout_ms: int = REBALANCE_MS
    group_id: str = "g"
    member_id: str = ""
    generation: int = -1
    assignment: bytes | None = None
    last_join: m.JoinGroupRequest | None = None
    last_sync: m.SyncGroupRequest | None = None
    join_reply: m.JoinGroupResponse | None = None

    # --- requests --------------------------------------------------------------------------

    def join_request(self, reason: str | None = None, **overrides) -> m.JoinGroupRequest:
        fields = dict(
            group_id=self.group_id,
            session_timeout_ms=self.session_timeout_ms,
            rebalance_timeout_ms=self.rebalance_timeout_ms,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocols=[m.JoinGroupRequestProtocol(n, meta) for n, meta in self.protocols],
            reason=reason,
            client_id=self.name,
            client_host="/10.0.0.1",
        )
        fields.update(overrides)
        return m.JoinGroupRequest(**fields)

    def send_join(self, reason: str | None = None, **overrides) -> CoordinatorResult:
        """One JoinGroup, as is (a MEMBER_ID_REQUIRED reply is not followed up)."""
        self.last_join = self.join_request(reason, **overrides)
        self.join_reply = None
        return self.bench.send(self.last_join, self)

    def join(self, reason: str | None = None, **overrides) -> m.JoinGroupResponse | None:
        """Join as a client does: after MEMBER_ID_REQUIRED, again with the id given. The
        reply, or None while the join phase holds it."""
        res = self.send_join(reason, **overrides)
        if res.response is not None and res.response.error_code == Errors.MEMBER_ID_REQUIRED:
            res = self.send_join(reason, **overrides)
        return res.response

    def sync(self, assignments: dict | None = None, **overrides) -> m.SyncGroupResponse | None:
        """SyncGroup; the leader passes ``{consumer or member id: bytes}``."""
        fields = dict(
            group_id=self.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
            protocol_type="consumer",
            protocol_name=self.join_reply.protocol_name if self.join_reply else None,
            assignments=[
                m.SyncGroupRequestAssignment(k.member_id if isinstance(k, Consumer) else k, v)
                for k, v in (assignments or {}).items()
            ],
        )
        fields.update(overrides)
        self.last_sync = m.SyncGroupRequest(**fields)
        return self.bench.send(self.last_sync, self).response

    @property
    def synced(self) -> m.SyncGroupResponse | None:
        return self.bench.answer(self.last_sync) if self.last_sync is not None else None

    def heartbeat(self, **overrides) -> m.HeartbeatResponse:
        fields = dict(
            group_id=self.group_id,
            generation_id=self.generation,
            member_id=self.member_id,
            group_instance_id=self.instance_id,
        )
        fields.update(overrides)
        return self.bench.send(m.HeartbeatRequest(**fields), self).response

    def leave(self, reason: str | None = None) -> m.LeaveGroupResponse:
        who = m.MemberIdentity(self.member_id, self.instance_id, reason)
        return self.bench.send(m.LeaveGroupRequest(self.group_id, [who]), self).response

    @property
    def is_leader(self) -> bool:
        return self.join_reply is not None and self.join_reply.leader == self.member_id

    # --- replies ---------------------------------------------------------------------------

    def accept(self, req: object, resp: object) -> None:
        if isinstance(resp, m.JoinGroupResponse):
            if resp.error_code == Errors.MEMBER_ID_REQUIRED:
                self.member_id = resp.member_id
            elif resp.error_code == Errors.NONE:
                self.join_reply = resp
                self.member_id, self.generation = resp.member_id, resp.generation_id
            else:
                self.join_reply = resp
        elif isinstance(resp, m.SyncGroupResponse) and resp.error_code == Errors.NONE:
            self.assignment = resp.assignment


def assignment_of(c: Consumer) -> bytes:
    return f"{c.name}-assignment".encode()


def form(bench: Bench, *consumers: Consumer) -> Consumer:
    """A new group of ``consumers``, Stable at its first generation; returns the leader."""
    for c in consumers:
        assert c.join() is None
    end_join_phase(bench)
    return complete_sync(*consumers)


def end_join_phase(bench: Bench, group_id: str = "g") -> CoordinatorResult:
    """Let a new group's initial delay pass (extended once per round of newcomers); the
    result of the tick that ended the join phase."""
    deadline = bench.now_ms + REBALANCE_MS
    while True:
        res = bench.advance(DELAY_MS)
        if bench.state(group_id) != cg.PREPARING_REBALANCE:
            return res
        assert bench.now_ms < deadline, "the join phase never ended"


def complete_sync(*consumers: Consumer) -> Consumer:
    """Every consumer got its JoinGroup reply: followers sync, then the leader with the
    assignment ``assignment_of`` each."""
    for c in consumers:
        assert c.join_reply is not None and c.join_reply.error_code == Errors.NONE, c.join_reply
    (leader,) = [c for c in consumers if c.is_leader]
    for c in consumers:
        if c is not leader:
            assert c.sync() is None
    assert leader.sync({c: assignment_of(c) for c in consumers}).error_code == Errors.NONE
    for c in consumers:
        assert c.assignment == assignment_of(c)
    return leader


def rejoin(*consumers: Consumer, reason: str | None = None) -> None:
    for c in consumers:
        c.join(reason)


def keep_alive(bench: Bench, ms: int, *consumers: Consumer) -> None:
    """Let ``ms`` pass while ``consumers`` heartbeat every half session (whatever the reply)."""
    end = bench.now_ms + ms
    while bench.now_ms < end:
        bench.tick(min(end, bench.now_ms + SESSION_MS // 2))
        for c in consumers:
            c.heartbeat()


def snapshot(bench: Bench, group_id: str = "g") -> tuple:
    """What a refused request must leave alone: the group as described and listed, timers."""
    listed = bench.shard.handle(m.ListGroupsRequest()).response.groups
    return (bench.describe(group_id), listed, bench.shard.next_deadline_ms())


def assert_refused(bench: Bench, req: object, error: Errors, group_id: str = "g") -> object:
    before = snapshot(bench, group_id)
    res = bench.send(req)
    assert res.response is not None and res.response.error_code == error, res.response
    assert res.records == []
    assert [q for q, _ in res.replies] == [req], "a refusal completes nothing else"
    assert snapshot(bench, group_id) == before
    return res.response


# ================================================================= member ids (KIP-394)


def test_first_dynamic_join_is_answered_member_id_required_with_a_member_id():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a)
    res = b.send_join()
    assert res.response.error_code == Errors.MEMBER_ID_REQUIRED
    assert res.response.member_id.startswith("b-") and len(res.response.member_id) > 10
    assert res.records == []  # a pending member id is not persisted
    assert [x.member_id for x in bench.describe().members] == [a.member_id]


def test_the_join_that_creates_a_group_writes_it_at_once():
    """As Kafka does, so that the new (Empty) group survives a failover."""
    bench = Bench()
    res = bench.consumer("a").send_join()
    assert res.response.error_code == Errors.MEMBER_ID_REQUIRED
    (value,) = bench.group_records(res)
    assert value.state == cg.EMPTY and value.generation == 0 and value.members == ()
    assert bench.describe().members == [] and bench.state() == cg.EMPTY


def test_rejoining_with_the_given_member_id_joins_the_group():
    bench = Bench()
    a = bench.consumer("a")
    given = a.send_join().response.member_id
    assert a.send_join().response is None  # in the join phase now
    assert [mem.member_id for mem in bench.describe().members] == [given]
    end_join_phase(bench)
    assert a.join_reply.error_code == Errors.NONE and a.join_reply.member_id == given


def test_every_dynamic_joiner_gets_its_own_member_id():
    bench = Bench()
    ids = {bench.consumer("a").send_join().response.member_id for _ in range(5)}
    assert len(ids) == 5


def test_a_member_id_never_used_expires_after_the_session_timeout():
    bench = Bench()
    a = bench.consumer("a")
    a.send_join()
    bench.advance(SESSION_MS)
    res = a.send_join()
    assert res.response.error_code == Errors.UNKNOWN_MEMBER_ID
    assert bench.describe().members == []


def test_a_member_id_used_before_the_session_timeout_stays_valid():
    bench = Bench()
    a = bench.consumer("a")
    a.send_join()
    bench.advance(SESSION_MS - 1)
    assert a.send_join().response is None


def test_join_with_a_made_up_member_id_is_unknown_member_id():
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    assert_refused(
        bench, bench.consumer("x", member_id="made-up").join_request(), Errors.UNKNOWN_MEMBER_ID
    )
    fresh = Bench()
    req = fresh.consumer("x", member_id="made-up").join_request()
    assert fresh.send(req).response.error_code == Errors.UNKNOWN_MEMBER_ID
    assert "g" not in fresh.shard.groups


def test_a_pending_member_id_holds_the_join_phase_until_it_expires():
    """Kafka's hasAllMembersJoined: a member told MEMBER_ID_REQUIRED is waited for."""
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    c = bench.consumer("c")
    c.send_join()  # MEMBER_ID_REQUIRED: pending
    a.join("upgrade")
    b.join()
    assert a.join_reply is None and b.join_reply is None
    bench.advance(SESSION_MS)
    assert a.join_reply.generation_id == 2 and len(a.join_reply.members) == 2


def test_a_static_join_with_a_made_up_member_id_and_an_unknown_instance_is_unknown_member_id():
    bench = Bench()
    form(bench, bench.consumer("a"))
    s = bench.consumer("s", instance_id="s-1", member_id="made-up")
    assert_refused(bench, s.join_request(), Errors.UNKNOWN_MEMBER_ID)


def test_a_static_member_joins_without_member_id_required():
    bench = Bench()
    a = bench.consumer("a", instance_id="a-1")
    assert a.send_join().response is None
    end_join_phase(bench)
    assert a.join_reply.error_code == Errors.NONE
    assert a.join_reply.member_id.startswith("a-1-")


# ======================================================== the initial rebalance delay


def test_new_group_waits_the_initial_rebalance_delay_before_completing_the_join_phase():
    bench = Bench()
    a = bench.consumer("a")
    assert a.join() is None
    bench.advance(DELAY_MS - 1)
    assert a.join_reply is None and bench.state() == cg.PREPARING_REBALANCE
    bench.advance(1)
    assert a.join_reply.error_code == Errors.NONE and a.join_reply.generation_id == 1


def test_members_arriving_during_the_initial_delay_join_the_first_generation():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    a.join()
    bench.advance(1_000)
    b.join()
    c.join()
    bench.advance(DELAY_MS)  # b arrived, so the delay was extended once
    end_join_phase(bench)
    assert {x.join_reply.generation_id for x in (a, b, c)} == {1}
    assert len(a.join_reply.members) == 3


def test_initial_delay_is_extended_while_new_members_keep_arriving():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    a.join()
    bench.advance(2_000)
    b.join()
    bench.advance(1_000)  # t=3000: b arrived, wait another delay
    assert a.join_reply is None
    bench.advance(2_000)
    c.join()
    bench.advance(1_000)  # t=6000: c arrived, wait again
    assert a.join_reply is None
    bench.advance(DELAY_MS - 1)
    assert a.join_reply is None
    bench.advance(1)  # t=9000: nobody new: complete
    assert a.join_reply.generation_id == 1 and len(a.join_reply.members) == 3


def test_initial_delay_is_bounded_by_the_rebalance_timeout():
    bench = Bench()
    rebalance_ms = 10_000
    first = bench.consumer("c0", rebalance_timeout_ms=rebalance_ms)
    first.join()
    others = []
    t = 0
    while t < 20_000 and first.join_reply is None:
        t += 500
        bench.tick(t)
        c = bench.consumer(f"c{len(others) + 1}", rebalance_timeout_ms=rebalance_ms)
        if first.join_reply is None:
            c.join()
            others.append(c)
    assert first.join_reply is not None
    assert first.join_reply.error_code == Errors.NONE
    assert bench.now_ms == rebalance_ms, "members kept arriving: the delay stops at the timeout"


def test_a_stable_group_rebalances_without_the_initial_delay():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a)
    b.join()
    a.join()
    assert a.join_reply.generation_id == 2 and b.join_reply.generation_id == 2


def test_no_delay_configured_completes_the_first_join_at_once():
    bench = Bench(NO_DELAY)
    a = bench.consumer("a")
    assert a.join().generation_id == 1


# ====================================================================== the join phase


def test_join_replies_wait_until_every_known_member_has_rejoined():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    form(bench, a, b, c)
    assert a.join("upgrade") is None
    assert b.join() is None
    assert a.join_reply is None and b.join_reply is None
    res = c.send_join()
    assert res.response is not None and res.response.generation_id == 2
    assert {id(x.last_join) for x in (a, b, c)} == {id(q) for q, _ in res.replies}


def test_members_that_do_not_rejoin_within_the_rebalance_timeout_are_removed():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    form(bench, a, b, c)
    a.join("upgrade")
    b.join()
    keep_alive(bench, REBALANCE_MS - 1, c)  # c heartbeats but never rejoins
    assert a.join_reply is None
    bench.advance(1)
    assert a.join_reply.generation_id == 2
    assert sorted(x.member_id for x in bench.describe().members) == sorted(
        [a.member_id, b.member_id]
    )
    assert c.heartbeat().error_code == Errors.UNKNOWN_MEMBER_ID


def test_the_join_phase_lasts_the_longest_rebalance_timeout_of_the_members():
    bench = Bench()
    a = bench.consumer("a", rebalance_timeout_ms=10_000)
    b = bench.consumer("b", rebalance_timeout_ms=40_000)
    c = bench.consumer("c", rebalance_timeout_ms=10_000)
    form(bench, a, b, c)
    a.join("upgrade")
    keep_alive(bench, 39_999, b, c)
    assert a.join_reply is None
    bench.advance(1)
    assert a.join_reply.generation_id == 2 and len(a.join_reply.members) == 1


def test_the_first_member_to_join_leads_and_only_the_leader_sees_the_members():
    bench = Bench()
    a = bench.consumer("a", protocols=[("range", subscription("foo"))])
    b = bench.consumer("b", protocols=[("range", subscription("foo", "bar"))])
    a.join()
    b.join()
    end_join_phase(bench)
    assert a.is_leader and not b.is_leader
    assert a.join_reply.leader == b.join_reply.leader == a.member_id
    assert {(x.member_id, x.metadata) for x in a.join_reply.members} == {
        (a.member_id, subscription("foo")),
        (b.member_id, subscription("foo", "bar")),
    }
    assert b.join_reply.members == []
    assert not a.join_reply.skip_assignment


def test_the_leader_stays_leader_across_rebalances():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    leader = form(bench, a, b)
    rejoin(a, b, reason="upgrade")
    assert leader.is_leader and leader.join_reply.generation_id == 2


def test_a_new_leader_is_elected_when_the_leader_is_gone():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    leader = form(bench, a, b)
    follower = b if leader is a else a
    follower.join("upgrade")
    bench.advance(REBALANCE_MS)
    assert follower.is_leader and follower.join_reply.generation_id == 2


@pytest.mark.parametrize(
    ("protocols", "chosen"),
    [
        # Every member prefers range, all support both: range.
        ([["range", "roundrobin"]] * 3, "range"),
        # Two prefer roundrobin over range: roundrobin wins the vote.
        ([["range", "roundrobin"], ["roundrobin", "range"], ["roundrobin", "range"]], "roundrobin"),
        # The favourite is not supported by everyone: members vote for their next one.
        ([["sticky", "range"], ["sticky", "range"], ["range"]], "range"),
        # A tie goes to the smaller name, deterministically.
        ([["roundrobin", "range"], ["range", "roundrobin"]], "range"),
    ],
)
def test_the_protocol_is_chosen_by_votes_among_the_protocols_all_members_support(protocols, chosen):
    bench = Bench()
    consumers = [
        bench.consumer(f"c{i}", protocols=[(name, FOO) for name in names])
        for i, names in enumerate(protocols)
    ]
    for c in consumers:
        c.join()
    end_join_phase(bench)
    assert {c.join_reply.protocol_name for c in consumers} == {chosen}
    assert bench.describe().protocol_data == ""  # not stable yet: Kafka shows no protocol
    complete_sync(*consumers)
    assert bench.describe().protocol_data == chosen


def test_describe_shows_members_metadata_only_once_stable():
    """As Kafka's describe: a generation's metadata is shown only once the group is STABLE;
    while it completes a rebalance the members are listed without it."""
    bench = Bench()
    a = bench.consumer("a")
    a.join()
    end_join_phase(bench)
    (member,) = bench.describe().members
    assert (member.member_metadata, member.member_assignment) == (b"", b"")
    complete_sync(a)
    (member,) = bench.describe().members
    assert member.member_metadata != b""


def test_the_leader_sees_each_members_metadata_for_the_chosen_protocol():
    bench = Bench()
    a = bench.consumer("a", protocols=[("range", b"a-range"), ("roundrobin", b"a-rr")])
    b = bench.consumer("b", protocols=[("roundrobin", b"b-rr")])
    a.join()
    b.join()
    end_join_phase(bench)
    assert {x.metadata for x in a.join_reply.members} == {b"a-rr", b"b-rr"}


def test_the_generation_increments_with_every_completed_join_phase():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    for generation in (2, 3, 4):
        rejoin(a, b, reason="upgrade")
        assert a.join_reply.generation_id == b.join_reply.generation_id == generation
        complete_sync(a, b)
        assert bench.describe().generation_id == generation


def test_a_group_metadata_record_is_written_when_the_join_phase_completes_before_its_replies():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    a.join()
    b.join()
    res = end_join_phase(bench)
    (value,) = bench.group_records(res)
    assert value.generation == 1 and value.state == cg.COMPLETING_REBALANCE
    assert value.leader == a.member_id and value.protocol_name == "range"
    assert {mem.member_id for mem in value.members} == {a.member_id, b.member_id}
    assert {mem.subscription for mem in value.members} == {FOO}
    # The replies go out in the same result, so the runtime holds them until it is durable.
    assert {id(q) for q, _ in res.replies} == {id(a.last_join), id(b.last_join)}


def test_a_group_metadata_record_is_written_when_the_leaders_sync_arrives():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    a.join()
    b.join()
    end_join_phase(bench)
    b_sync = bench.send(m.SyncGroupRequest("g", 1, b.member_id, None, "consumer", "range"), b)
    assert b_sync.records == []
    res = bench.send(
        m.SyncGroupRequest(
            "g",
            1,
            a.member_id,
            None,
            "consumer",
            "range",
            [
                m.SyncGroupRequestAssignment(a.member_id, b"for-a"),
                m.SyncGroupRequestAssignment(b.member_id, b"for-b"),
            ],
        ),
        a,
    )
    (value,) = bench.group_records(res)
    assert value.state == cg.STABLE and value.generation == 1
    assert {mem.member_id: mem.assignment for mem in value.members} == {
        a.member_id: b"for-a",
        b.member_id: b"for-b",
    }


def test_a_repeated_join_in_the_join_phase_replaces_the_earlier_one_which_is_answered():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    a.join("upgrade")
    first = a.last_join
    res = a.send_join("upgrade")
    assert res.response is None
    ((q, resp),) = res.replies
    assert q is first and resp.error_code == Errors.REBALANCE_IN_PROGRESS
    b.join()
    assert a.join_reply.generation_id == 2 and bench.answer(a.last_join) is a.join_reply


def test_a_join_whose_reply_was_lost_is_answered_again_during_the_sync_phase():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    a.join()
    b.join()
    end_join_phase(bench)
    first = b.join_reply
    again = b.join()
    assert again.generation_id == first.generation_id and again.leader == first.leader
    assert bench.state() == cg.COMPLETING_REBALANCE


def test_a_join_after_the_group_emptied_starts_a_new_generation():
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    a.leave()
    assert bench.state() == cg.EMPTY
    b = bench.consumer("b")
    b.join()
    end_join_phase(bench)
    assert b.join_reply.generation_id == 3  # 1, the empty generation 2, then 3


def test_the_group_max_size_refuses_one_member_too_many():
    bench = Bench(CoordinatorConfig(group_initial_rebalance_delay_ms=DELAY_MS, group_max_size=2))
    a, b, c = (bench.consumer(n) for n in "abc")
    form(bench, a, b)
    assert_refused(bench, c.join_request(), Errors.GROUP_MAX_SIZE_REACHED)
    s = bench.consumer("s", instance_id="s-1")
    assert_refused(bench, s.join_request(), Errors.GROUP_MAX_SIZE_REACHED)


def test_a_join_without_a_rebalance_timeout_uses_its_session_timeout():
    """JoinGroup v0 has no rebalance timeout (-1): the session timeout serves as both."""
    bench = Bench()
    a, b, c = (bench.consumer(n, rebalance_timeout_ms=-1) for n in "abc")
    form(bench, a, b, c)
    a.join("upgrade")
    b.join()
    keep_alive(bench, SESSION_MS - 1, c)
    assert a.join_reply is None
    bench.advance(1)
    assert a.join_reply.generation_id == 2 and len(a.join_reply.members) == 2


def test_several_joins_in_one_turn_each_get_their_reply():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    form(bench, a, b, c)
    reqs = [x.join_request("upgrade") for x in (a, b, c)]
    res = bench.batch(reqs)
    assert [id(q) for q, _ in res.replies] == [id(r) for r in reqs]
    assert {r.generation_id for _, r in res.replies} == {2}
    assert [r.leader for _, r in res.replies] == [a.member_id] * 3
    assert [len(r.members) for _, r in res.replies] == [3, 0, 0]


def test_the_group_max_size_also_holds_during_a_rebalance():
    bench = Bench(CoordinatorConfig(group_initial_rebalance_delay_ms=DELAY_MS, group_max_size=2))
    a, b, c = (bench.consumer(n) for n in "abc")
    form(bench, a, b)
    a.join("upgrade")
    assert bench.state() == cg.PREPARING_REBALANCE
    assert_refused(bench, c.join_request(), Errors.GROUP_MAX_SIZE_REACHED)


# ============================================================== metadata (seed 003, point 1)


def test_partitions_added_to_a_subscribed_topic_make_a_stable_group_rebalance():
    bench = Bench(metadata=image(foo=4, bar=2))
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    res = bench.update_metadata(image(foo=5, bar=2))
    assert bench.state() == cg.PREPARING_REBALANCE
    assert "topic metadata" in bench.describe().rebalance_history[-1].reason
    assert bench.group_records(res) == []  # the generation is not over until it is
    assert a.heartbeat().error_code == Errors.REBALANCE_IN_PROGRESS


def test_a_change_to_an_unsubscribed_topic_leaves_the_group_alone():
    bench = Bench(metadata=image(foo=4, bar=2))
    a = bench.consumer("a")  # subscribed to foo only
    form(bench, a)
    bench.update_metadata(image(foo=4, bar=9, baz=1))
    assert bench.state() == cg.STABLE
    assert a.heartbeat().error_code == Errors.NONE


def test_a_metadata_change_during_the_sync_phase_restarts_the_rebalance():
    bench = Bench(metadata=image(foo=4, bar=2))
    a, b = bench.consumer("a"), bench.consumer("b")
    a.join()
    b.join()
    end_join_phase(bench)
    follower = b if a.is_leader else a
    follower.sync()
    bench.update_metadata(image(foo=8, bar=2))
    assert bench.state() == cg.PREPARING_REBALANCE
    assert follower.synced.error_code == Errors.REBALANCE_IN_PROGRESS


# ============================================================================ SyncGroup


def test_follower_sync_replies_wait_for_the_leaders_sync():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    for x in (a, b, c):
        x.join()
    end_join_phase(bench)
    assert b.sync() is None and c.sync() is None
    assert a.is_leader
    a.sync({a: b"A", b: b"B", c: b"C"})
    assert b.synced.assignment == b"B" and c.synced.assignment == b"C"


def test_every_member_gets_its_own_assignment():
    bench = Bench()
    consumers = [bench.consumer(n) for n in "abcd"]
    form(bench, *consumers)
    assert [c.assignment for c in consumers] == [assignment_of(c) for c in consumers]
    described = {d.member_id: d.member_assignment for d in bench.describe().members}
    assert described == {c.member_id: assignment_of(c) for c in consumers}


def test_a_member_the_leader_left_out_gets_an_empty_assignment():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    a.join()
    b.join()
    end_join_phase(bench)
    b.sync()
    a.sync({a: b"A"})
    assert b.synced.error_code == Errors.NONE and b.synced.assignment == b""


def test_sync_replies_carry_the_protocol_type_and_name():
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    assert (a.synced.protocol_type, a.synced.protocol_name) == ("consumer", "range")


def test_sync_in_a_stable_group_returns_the_current_assignment():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    resp = b.sync()
    assert resp.error_code == Errors.NONE and resp.assignment == assignment_of(b)


def test_sync_with_the_wrong_generation_is_illegal_generation():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    a.join()
    b.join()
    end_join_phase(bench)
    for generation in (0, 2, -1):
        req = m.SyncGroupRequest("g", generation, b.member_id, None, "consumer", "range")
        assert_refused(bench, req, Errors.ILLEGAL_GENERATION)


def test_sync_during_preparing_rebalance_is_rebalance_in_progress():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    a.join("upgrade")
    req = m.SyncGroupRequest("g", 1, b.member_id, None, "consumer", "range")
    assert_refused(bench, req, Errors.REBALANCE_IN_PROGRESS)


def test_sync_from_an_unknown_member_is_unknown_member_id():
    bench = Bench()
    a = bench.consumer("a")
    a.join()
    end_join_phase(bench)
    req = m.SyncGroupRequest("g", 1, "stranger", None, "consumer", "range")
    assert_refused(bench, req, Errors.UNKNOWN_MEMBER_ID)
    req = m.SyncGroupRequest("nope", 1, "stranger", None, "consumer", "range")
    assert_refused(bench, req, Errors.UNKNOWN_MEMBER_ID, group_id="nope")


@pytest.mark.parametrize(
    "overrides",
    [{"protocol_name": "roundrobin"}, {"protocol_type": "connect"}],
    ids=["protocol-name", "protocol-type"],
)
def test_sync_naming_another_protocol_is_inconsistent_group_protocol(overrides):
    bench = Bench()
    a = bench.consumer("a")
    a.join()
    end_join_phase(bench)
    fields = dict(group_id="g", generation_id=1, member_id=a.member_id)
    fields |= dict(protocol_type="consumer", protocol_name="range") | overrides
    assert_refused(bench, m.SyncGroupRequest(**fields), Errors.INCONSISTENT_GROUP_PROTOCOL)


def test_sync_without_protocol_names_is_accepted():
    """JoinGroup v0-v4 clients send no protocol type/name in SyncGroup (null)."""
    bench = Bench()
    a = bench.consumer("a")
    a.join()
    end_join_phase(bench)
    resp = a.sync({a: b"A"}, protocol_type=None, protocol_name=None)
    assert resp.error_code == Errors.NONE and resp.assignment == b"A"


def test_pending_syncs_are_answered_rebalance_in_progress_when_a_new_rebalance_starts():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    for x in (a, b):
        x.join()
    end_join_phase(bench)
    follower = b if a.is_leader else a
    assert follower.sync() is None
    res = c.send_join()
    res = c.send_join()
    assert res.response is None and bench.state() == cg.PREPARING_REBALANCE
    assert follower.synced.error_code == Errors.REBALANCE_IN_PROGRESS
    assert any(q is follower.last_sync for q, _ in res.replies)


def test_members_that_do_not_sync_within_the_rebalance_timeout_are_removed():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    for x in (a, b, c):
        x.join()
    end_join_phase(bench)
    leader = next(x for x in (a, b, c) if x.is_leader)
    followers = [x for x in (a, b, c) if x is not leader]
    followers[0].sync()  # the other follower and the leader never sync
    # Heartbeats keep the sessions alive: only the sync deadline can remove anyone.
    for _ in range(REBALANCE_MS // 5_000 - 1):
        bench.advance(5_000)
        for x in (a, b, c):
            assert x.heartbeat().error_code == Errors.NONE
    bench.advance(5_000)
    assert followers[0].synced.error_code == Errors.REBALANCE_IN_PROGRESS
    assert bench.state() == cg.PREPARING_REBALANCE
    assert [d.member_id for d in bench.describe().members] == [followers[0].member_id]
    followers[0].join()
    assert followers[0].join_reply.generation_id == 2 and followers[0].is_leader


def test_a_completed_sync_phase_cancels_the_sync_deadline():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    for _ in range(4):
        bench.advance(SESSION_MS // 2)
        assert a.heartbeat().error_code == b.heartbeat().error_code == Errors.NONE
    assert bench.state() == cg.STABLE and bench.describe().generation_id == 1


# ============================================================================ Heartbeat


def test_heartbeat_is_none_when_stable():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    assert a.heartbeat().error_code == Errors.NONE
    assert b.heartbeat().error_code == Errors.NONE


def test_heartbeat_is_none_while_waiting_for_the_leaders_sync():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    a.join()
    b.join()
    end_join_phase(bench)
    assert bench.state() == cg.COMPLETING_REBALANCE
    assert b.heartbeat().error_code == Errors.NONE


def test_heartbeat_is_rebalance_in_progress_while_preparing():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    a.join("upgrade")
    res = bench.send(m.HeartbeatRequest("g", 1, b.member_id))
    assert res.response.error_code == Errors.REBALANCE_IN_PROGRESS and res.records == []


def test_heartbeat_with_another_generation_is_illegal_generation():
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    for generation in (0, 2, -1):
        assert_refused(
            bench, m.HeartbeatRequest("g", generation, a.member_id), Errors.ILLEGAL_GENERATION
        )


def test_heartbeat_from_an_unknown_member_is_unknown_member_id():
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    assert_refused(bench, m.HeartbeatRequest("g", 1, "stranger"), Errors.UNKNOWN_MEMBER_ID)
    assert_refused(
        bench, m.HeartbeatRequest("nope", 1, "stranger"), Errors.UNKNOWN_MEMBER_ID, "nope"
    )


def test_heartbeat_to_an_empty_group_is_unknown_member_id():
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    a.leave()
    assert a.heartbeat(generation_id=2).error_code == Errors.UNKNOWN_MEMBER_ID


def test_a_member_that_stops_heartbeating_is_removed_and_the_group_rebalances():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    bench.advance(SESSION_MS - 1)
    a.heartbeat()
    assert bench.state() == cg.STABLE
    bench.advance(1)
    assert bench.state() == cg.PREPARING_REBALANCE
    assert [d.member_id for d in bench.describe().members] == [a.member_id]
    assert b.heartbeat().error_code == Errors.UNKNOWN_MEMBER_ID
    assert a.heartbeat().error_code == Errors.REBALANCE_IN_PROGRESS
    a.join()
    assert a.join_reply.generation_id == 2


def test_heartbeats_keep_a_member_in_the_group():
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    for _ in range(10):
        bench.advance(SESSION_MS - 1)
        assert a.heartbeat().error_code == Errors.NONE
    assert bench.describe().generation_id == 1


def test_a_member_waiting_in_the_join_phase_is_not_expired_by_its_session_timeout():
    """Seed 003: the coordinator pauses failure detection between a JoinGroup and its reply."""
    bench = Bench()
    a = bench.consumer("a", session_timeout_ms=SESSION_MS)
    b = bench.consumer("b", session_timeout_ms=SESSION_MS)
    c = bench.consumer("c", session_timeout_ms=SESSION_MS, rebalance_timeout_ms=60_000)
    form(bench, a, b, c)
    b.join("upgrade")
    a.join()
    # c is slow to rejoin; a and b wait in the join phase far longer than their sessions.
    for _ in range(10):
        bench.advance(SESSION_MS // 2)
        assert c.heartbeat().error_code == Errors.REBALANCE_IN_PROGRESS
    assert a.join_reply is None
    c.join()
    assert a.join_reply.generation_id == 2 and len(bench.describe().members) == 3


def test_a_member_waiting_for_the_leaders_sync_is_not_expired_by_its_session_timeout():
    """Kafka's rule: a member whose SyncGroup waits on the leader counts as alive."""
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    a.join()
    b.join()
    end_join_phase(bench)
    leader, follower = (a, b) if a.is_leader else (b, a)
    assert follower.sync() is None
    keep_alive(bench, SESSION_MS * 2, leader)  # the follower sends nothing but its sync
    assert len(bench.describe().members) == 2
    leader.sync({leader: b"L", follower: b"F"})
    assert follower.synced.assignment == b"F"


def test_failure_detection_restarts_when_the_join_reply_is_sent():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    a.join("upgrade")
    keep_alive(bench, SESSION_MS * 2, b)
    b.join()
    assert b.join_reply.generation_id == 2
    bench.advance(SESSION_MS - 1)
    b.heartbeat()
    assert len(bench.describe().members) == 2
    bench.advance(1)  # a never heartbeat after its reply
    assert [d.member_id for d in bench.describe().members] == [b.member_id]


# =========================================================================== LeaveGroup


def test_leaving_triggers_a_rebalance():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    resp = b.leave()
    assert resp.error_code == Errors.NONE
    assert [(x.member_id, x.error_code) for x in resp.members] == [(b.member_id, Errors.NONE)]
    assert bench.state() == cg.PREPARING_REBALANCE
    assert a.heartbeat().error_code == Errors.REBALANCE_IN_PROGRESS
    a.join()
    assert a.join_reply.generation_id == 2 and len(a.join_reply.members) == 1


def test_a_batched_leave_reports_each_member():
    bench = Bench()
    a = bench.consumer("a")
    b = bench.consumer("b", instance_id="b-1")
    c = bench.consumer("c", instance_id="c-1")
    d = bench.consumer("d")
    form(bench, a, b, c, d)
    resp = bench.send(
        m.LeaveGroupRequest(
            "g",
            [
                m.MemberIdentity(a.member_id),  # by member id
                m.MemberIdentity("", "b-1"),  # by instance id only
                m.MemberIdentity(c.member_id, "c-1"),  # both
                m.MemberIdentity("stranger"),
                m.MemberIdentity("", "nobody"),
            ],
        )
    ).response
    assert resp.error_code == Errors.NONE
    assert [(x.member_id, x.group_instance_id, x.error_code) for x in resp.members] == [
        (a.member_id, None, Errors.NONE),
        ("", "b-1", Errors.NONE),
        (c.member_id, "c-1", Errors.NONE),
        ("stranger", None, Errors.UNKNOWN_MEMBER_ID),
        ("", "nobody", Errors.UNKNOWN_MEMBER_ID),
    ]
    assert [x.member_id for x in bench.describe().members] == [d.member_id]


def test_leaving_with_an_instance_id_held_by_another_member_is_fenced_instance_id():
    bench = Bench()
    a = bench.consumer("a", instance_id="a-1")
    b = bench.consumer("b")
    form(bench, a, b)
    resp = bench.send(m.LeaveGroupRequest("g", [m.MemberIdentity("old-id", "a-1")])).response
    assert [x.error_code for x in resp.members] == [Errors.FENCED_INSTANCE_ID]
    assert len(bench.describe().members) == 2 and bench.state() == cg.STABLE


def test_a_leave_naming_only_strangers_changes_nothing():
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    before = snapshot(bench)
    res = bench.send(m.LeaveGroupRequest("g", [m.MemberIdentity("stranger")]))
    assert [x.error_code for x in res.response.members] == [Errors.UNKNOWN_MEMBER_ID]
    assert res.records == [] and snapshot(bench) == before


def test_leave_with_no_members_is_refused_and_of_no_group_names_each_member_unknown():
    """Kafka answers a leave of a group it does not know member by member."""
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    assert_refused(bench, m.LeaveGroupRequest("g", []), Errors.INVALID_REQUEST)
    resp = bench.shard.handle(m.LeaveGroupRequest("nope", [m.MemberIdentity("x")])).response
    assert resp.error_code == Errors.NONE
    assert [(x.member_id, x.error_code) for x in resp.members] == [("x",
                                                                     Errors.UNKNOWN_MEMBER_ID)]


def test_a_member_waiting_in_the_join_phase_that_leaves_gets_unknown_member_id():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    form(bench, a, b, c)
    a.join("upgrade")
    b.join()
    res = bench.send(m.LeaveGroupRequest("g", [m.MemberIdentity(a.member_id)]))
    replies = {id(q): r for q, r in res.replies}
    assert replies[id(a.last_join)].error_code == Errors.UNKNOWN_MEMBER_ID
    assert b.join_reply is None  # still waiting for c
    c.join()
    assert b.join_reply.generation_id == 2 and len(bench.describe().members) == 2


def test_the_last_member_to_leave_empties_the_group():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    a.leave()
    res = bench.send(m.LeaveGroupRequest("g", [m.MemberIdentity(b.member_id)]))
    assert bench.state() == cg.EMPTY
    described = bench.describe()
    assert described.members == [] and described.leader == "" and described.protocol_data == ""
    (value,) = bench.group_records(res)
    assert value.state == cg.EMPTY and value.members == ()


def test_a_batched_leave_of_every_member_empties_the_group_in_one_event():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    who = [m.MemberIdentity(a.member_id), m.MemberIdentity(b.member_id)]
    res = bench.send(m.LeaveGroupRequest("g", who))
    assert bench.state() == cg.EMPTY
    assert [v.state for v in bench.group_records(res)] == [cg.EMPTY]


def test_a_pending_member_may_leave():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a)
    b.send_join()  # pending
    resp = b.leave()
    assert [x.error_code for x in resp.members] == [Errors.NONE]
    assert b.send_join().response.error_code == Errors.UNKNOWN_MEMBER_ID


def test_a_pending_member_leaving_lets_a_join_phase_that_waited_for_it_complete():
    """Kafka's removePendingMemberAndUpdateClassicGroup: once the pending member is gone,
    every member has joined, so the join phase ends at once."""
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    c = bench.consumer("c")
    c.send_join()  # MEMBER_ID_REQUIRED: the join phase will wait for c
    a.join("upgrade")
    b.join()
    assert a.join_reply is None
    res = c.leave()
    assert [x.error_code for x in res.members] == [Errors.NONE]
    assert a.join_reply is not None and a.join_reply.generation_id == 2
    assert bench.state() == cg.COMPLETING_REBALANCE


def test_a_member_leaving_while_its_sync_waits_gets_unknown_member_id():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    for x in (a, b, c):
        x.join()
    end_join_phase(bench)
    follower = next(x for x in (a, b, c) if not x.is_leader)
    follower.sync()
    res = bench.send(m.LeaveGroupRequest("g", [m.MemberIdentity(follower.member_id)]))
    assert {id(q): r for q, r in res.replies}[id(follower.last_sync)].error_code == (
        Errors.UNKNOWN_MEMBER_ID
    )
    assert bench.state() == cg.PREPARING_REBALANCE


# ===================================================================== describe and list


def test_describe_shows_generation_leader_protocol_and_members():
    bench = Bench()
    a = bench.consumer("a", instance_id="a-1")
    b = bench.consumer("b")
    leader = form(bench, a, b)
    d = bench.describe()
    assert (d.error_code, d.group_state, d.protocol_type, d.protocol_data) == (
        Errors.NONE,
        cg.STABLE,
        "consumer",
        "range",
    )
    assert d.generation_id == 1 and d.leader == leader.member_id
    assert {
        (x.member_id, x.group_instance_id, x.client_id, x.member_metadata) for x in d.members
    } == {
        (a.member_id, "a-1", "a", FOO),
        (b.member_id, None, "b", FOO),
    }


def test_describe_of_an_unknown_group_is_group_id_not_found():
    bench = Bench()
    d = bench.describe("nope")
    assert d.error_code == Errors.GROUP_ID_NOT_FOUND and d.group_state == cg.DEAD


def test_list_groups_shows_classic_groups_with_protocol_type_and_state():
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    b = bench.consumer("b", group_id="h")
    b.join()
    listed = bench.shard.handle(m.ListGroupsRequest()).response.groups
    assert [(x.group_id, x.protocol_type, x.group_state, x.group_type) for x in listed] == [
        ("g", "consumer", cg.STABLE, "classic"),
        ("h", "consumer", cg.PREPARING_REBALANCE, "classic"),
    ]


@pytest.mark.parametrize(
    ("states", "expected"),
    [
        (["PreparingRebalance"], ["h"]),
        (["preparing_rebalance"], ["h"]),
        (["Stable"], ["g"]),
        (["Stable", "CompletingRebalance", "Empty"], ["g"]),
        (["Empty"], []),
    ],
)
def test_list_groups_state_filter_accepts_kafkas_spelling(states, expected):
    bench = Bench()
    form(bench, bench.consumer("a"))
    bench.consumer("b", group_id="h").join()
    resp = bench.shard.handle(m.ListGroupsRequest(states_filter=states)).response
    assert resp.error_code == Errors.NONE
    assert [x.group_id for x in resp.groups] == expected


def test_list_groups_with_an_unknown_state_lists_nothing_as_kafka():
    bench = Bench()
    form(bench, bench.consumer("a"))
    resp = bench.shard.handle(m.ListGroupsRequest(states_filter=["Rebalancing"])).response
    assert (resp.error_code, resp.groups) == (Errors.NONE, [])


def test_list_groups_type_filter_selects_classic_groups():
    bench = Bench()
    form(bench, bench.consumer("a"))
    resp = bench.shard.handle(m.ListGroupsRequest(types_filter=["classic"])).response
    assert [x.group_id for x in resp.groups] == ["g"]
    resp = bench.shard.handle(m.ListGroupsRequest(types_filter=["consumer"])).response
    assert resp.groups == []
