"""Coordinator failover for classic groups (seed 003's five failure points) and replay.

A failover is what the runtime does when a partition moves: a fresh shard replays the records
the old one made durable, then receives the current metadata image. Requests the old shard
held (delayed JoinGroup/SyncGroup replies) die with it; their clients retry against the new
one. Each test takes the records a shard produced up to a failure point and goes on against
the reloaded shard.
"""

from __future__ import annotations

from protocol import messages as m
from protocol.classic import group as cg
from protocol.codec import decode_record, encode_record
from protocol.errors import Errors
from protocol.shard import GroupCoordinatorShard
from tests.protocol.classic.test_classic_group import (
    CONFIG,
    FOO,
    REBALANCE_MS,
    SESSION_MS,
    Bench,
    Consumer,
    assignment_of,
    complete_sync,
    form,
    keep_alive,
    rejoin,
    subscription,
)
from tests.protocol.driver import image


def failover(bench: Bench, *consumers: Consumer, metadata=None, records=None, now_ms=None) -> Bench:
    """A new coordinator loads the group from ``records`` (default: all so far) at ``now_ms``
    and gets the current image; ``consumers`` now talk to it, their in-flight requests lost."""
    new = Bench(
        bench.shard.config,
        metadata if metadata is not None else bench.image,
        now_ms=bench.now_ms if now_ms is None else now_ms,
    )
    loaded = bench.records if records is None else records
    for r in loaded:
        new.shard.replay(decode_record(encode_record(r)))
    new.records = list(loaded)
    new.update_metadata(new.image)
    for c in consumers:
        c.bench = new
    return new


def history_reasons(bench: Bench) -> list[str]:
    return [x.reason for x in bench.describe().rebalance_history]


# ========================================== 1: the group changed while nobody was looking


def test_partitions_added_while_the_coordinator_was_down_make_the_new_one_rebalance():
    bench = Bench(metadata=image(foo=4, bar=2))
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    new = failover(bench, a, b, metadata=image(foo=6, bar=2))
    assert new.state() == cg.PREPARING_REBALANCE
    assert "topic metadata" in history_reasons(new)[-1]
    assert a.heartbeat().error_code == Errors.REBALANCE_IN_PROGRESS
    rejoin(a, b)
    assert a.join_reply.generation_id == 2


def test_a_subscribed_topic_created_while_the_coordinator_was_down_makes_it_rebalance():
    bench = Bench(metadata=image(foo=4))
    sub = [("range", subscription("foo", "baz"))]
    a, b = bench.consumer("a", protocols=sub), bench.consumer("b", protocols=sub)
    form(bench, a, b)
    new = failover(bench, a, b, metadata=image(foo=4, baz=3))
    assert new.state() == cg.PREPARING_REBALANCE


def test_a_subscribed_topic_deleted_while_the_coordinator_was_down_makes_it_rebalance():
    bench = Bench(metadata=image(foo=4, bar=2))
    sub = [("range", subscription("foo", "bar"))]
    a = bench.consumer("a", protocols=sub)
    form(bench, a)
    new = failover(bench, a, metadata=image(foo=4))
    assert new.state() == cg.PREPARING_REBALANCE


def test_an_unchanged_or_unsubscribed_topic_does_not_make_the_new_coordinator_rebalance():
    bench = Bench(metadata=image(foo=4, bar=2))
    a, b = bench.consumer("a"), bench.consumer("b")  # subscribed to foo only
    form(bench, a, b)
    new = failover(bench, a, b, metadata=image(foo=4, bar=7, qux=1))
    assert new.state() == cg.STABLE
    assert a.heartbeat().error_code == b.heartbeat().error_code == Errors.NONE


def test_a_member_that_never_comes_back_to_the_new_coordinator_expires_and_the_group_rebalances():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    bench.advance(SESSION_MS - 1)  # both were about to expire on the old coordinator
    new = failover(bench, a, b)
    keep_alive(new, SESSION_MS - 1, a)  # sessions restart with the load
    assert new.state() == cg.STABLE
    keep_alive(new, 1, a)
    assert new.state() == cg.PREPARING_REBALANCE
    assert [x.member_id for x in new.describe().members] == [a.member_id]
    a.join()
    assert a.join_reply.generation_id == 2


def test_the_members_sessions_restart_when_the_new_coordinator_loads_the_group():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    # The new coordinator loads the group long after the last heartbeat the old one saw.
    new = failover(bench, a, b, now_ms=bench.now_ms + SESSION_MS * 5)
    assert new.state() == cg.STABLE
    assert a.heartbeat().error_code == b.heartbeat().error_code == Errors.NONE


# =============================================== 2: a rebalance began but was not persisted


def test_a_rebalance_that_began_but_was_not_persisted_is_gone_after_failover():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    leader = form(bench, a, b, c)
    d = bench.consumer("d")
    d.join()  # a new member: the group starts to rebalance
    follower = next(x for x in (a, b, c) if x is not leader)
    assert follower.heartbeat().error_code == Errors.REBALANCE_IN_PROGRESS
    new = failover(bench, a, b, c, d)
    assert new.state() == cg.STABLE and new.describe().generation_id == 1
    # The follower told to rejoin does, with its known id and unchanged metadata: no rebalance.
    resp = follower.join()
    assert resp.generation_id == 1 and new.state() == cg.STABLE
    assert follower.sync().assignment == assignment_of(follower)
    others = [x for x in (a, b, c) if x is not follower]
    assert all(x.heartbeat().error_code == Errors.NONE for x in others)


def test_an_unknown_member_joining_the_reloaded_group_makes_it_rebalance():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    d = bench.consumer("d")
    d.join()
    new = failover(bench, a, b, d)
    assert d.join().error_code == Errors.UNKNOWN_MEMBER_ID  # its id died with the old one
    d.member_id = ""
    assert d.join() is None
    assert new.state() == cg.PREPARING_REBALANCE
    rejoin(a, b)
    assert d.join_reply.generation_id == 2 and len(a.join_reply.members) == 3


def test_a_member_that_expired_unpersisted_and_recovered_is_not_rebalanced_after_failover():
    """Seed 003: "if a rebalance was initiated due to a consumer failure and the consumer
    recovers before the co-ordinator failover completes, the co-ordinator will not initiate
    a rebalance"."""
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    keep_alive(bench, SESSION_MS, a)  # b's session expired: a rebalance began
    assert bench.state() == cg.PREPARING_REBALANCE
    assert b.member_id not in {x.member_id for x in bench.describe().members}
    new = failover(bench, a, b)
    assert new.state() == cg.STABLE
    assert b.heartbeat().error_code == Errors.NONE
    assert a.heartbeat().error_code == Errors.NONE


# ===================================================== 3: only some JoinGroups had arrived


def test_after_a_failover_mid_join_phase_members_heartbeat_and_the_rebalance_is_asked_again():
    bench = Bench()
    a, b, c = (bench.consumer(n) for n in "abc")
    form(bench, a, b, c)
    a.join("upgrade")
    b.join()  # c's JoinGroup never arrived
    new = failover(bench, a, b, c)
    assert new.state() == cg.STABLE and new.describe().generation_id == 1
    assert c.heartbeat().error_code == Errors.NONE
    assert b.heartbeat().error_code == Errors.NONE
    # a's JoinGroup died with the old coordinator; it sends it again.
    assert a.join("upgrade") is None
    assert new.state() == cg.PREPARING_REBALANCE
    rejoin(b, c)
    assert {x.join_reply.generation_id for x in (a, b, c)} == {2}


def test_after_a_failover_mid_join_phase_a_member_with_new_metadata_makes_it_rebalance():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    b.protocols = [("range", subscription("foo", "bar"))]
    b.join()
    new = failover(bench, a, b)
    assert new.state() == cg.STABLE
    assert b.join() is None and new.state() == cg.PREPARING_REBALANCE


# ====================================== 4: the new generation was persisted, replies lost


def _generation_two_persisted(bench: Bench, a: Consumer, b: Consumer) -> None:
    form(bench, a, b)
    rejoin(a, b, reason="upgrade")
    assert bench.group_records()[-1].generation == 2
    assert bench.group_records()[-1].state == cg.COMPLETING_REBALANCE


def test_a_member_whose_join_reply_was_lost_gets_illegal_generation_and_rejoins():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    _generation_two_persisted(bench, a, b)
    new = failover(bench, a, b)
    assert new.describe().generation_id == 2
    a.generation = b.generation = 1  # neither saw the generation-2 reply
    assert a.heartbeat().error_code == Errors.ILLEGAL_GENERATION
    assert a.join() is None  # the reloaded group rebalances
    assert new.state() == cg.PREPARING_REBALANCE
    assert b.heartbeat().error_code == Errors.ILLEGAL_GENERATION
    b.join()
    assert a.join_reply.generation_id == b.join_reply.generation_id == 3
    complete_sync(a, b)
    assert new.state() == cg.STABLE


# ========================================= 5: some members got the JoinGroup reply, some not


def test_a_member_that_got_the_join_reply_heartbeats_and_syncs_with_the_new_generation():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    _generation_two_persisted(bench, a, b)
    leader = a if a.is_leader else b
    other = b if leader is a else a
    new = failover(bench, a, b)
    other.generation = 1  # its reply was lost
    assert leader.heartbeat().error_code == Errors.NONE
    assert leader.sync({leader: b"L", other: b"O"}).error_code == Errors.NONE
    assert leader.assignment == b"L" and new.state() == cg.STABLE


def test_a_member_that_did_not_get_the_join_reply_rejoins_and_the_group_rebalances():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    _generation_two_persisted(bench, a, b)
    leader = a if a.is_leader else b
    follower = b if leader is a else a
    new = failover(bench, a, b)
    leader.generation = 1  # the leader's reply was lost; the follower's arrived
    assert follower.heartbeat().error_code == Errors.NONE
    assert follower.sync() is None  # waits for a leader that will never sync generation 2
    assert leader.join() is None
    assert new.state() == cg.PREPARING_REBALANCE
    assert follower.synced.error_code == Errors.REBALANCE_IN_PROGRESS
    follower.join()
    assert leader.join_reply.generation_id == follower.join_reply.generation_id == 3


def test_a_reloaded_group_in_the_sync_phase_still_enforces_the_sync_deadline():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    _generation_two_persisted(bench, a, b)
    new = failover(bench, a, b)
    keep_alive(new, REBALANCE_MS, a, b)  # heartbeats, but nobody syncs
    assert new.state() in (cg.PREPARING_REBALANCE, cg.EMPTY)
    assert "SyncGroup" in history_reasons(new)[-1]


def test_a_reloaded_group_admits_the_joiners_the_original_admitted():
    """The design's replay rule ("replaying the records gives the same state") for what a
    group accepts: a member offering two protocols must be loaded offering both (Kafka's
    loader keeps only the chosen one), or a joiner sharing only the other is refused after
    a failover though the original coordinator admits it."""
    bench = Bench()
    a = bench.consumer("a", protocols=[("cooperative-sticky", FOO), ("range", FOO)])
    form(bench, a)
    assert bench.describe().protocol_data == "cooperative-sticky"
    joiner = bench.consumer("b", protocols=[("range", FOO)])
    assert joiner.send_join().response.error_code == Errors.MEMBER_ID_REQUIRED
    new = failover(bench, a)
    late = new.consumer("c", protocols=[("range", FOO)])
    assert late.send_join().response.error_code == Errors.MEMBER_ID_REQUIRED


# ================================================================== replay equivalence


def replayed(bench: Bench, group_id: str = "g") -> m.DescribeGroupsResponseGroup:
    fresh = GroupCoordinatorShard(CONFIG, bench.image, now_ms=bench.now_ms)
    for r in bench.records:
        fresh.replay(decode_record(encode_record(r)))
    return fresh.handle(m.DescribeGroupsRequest([group_id])).response.groups[0]


def assert_replays(bench: Bench, group_id: str = "g") -> None:
    live = bench.describe(group_id)
    assert live.group_state in (cg.STABLE, cg.EMPTY), live.group_state
    assert replayed(bench, group_id) == live


def test_replaying_the_records_rebuilds_a_stable_group():
    bench = Bench()
    a = bench.consumer("a", instance_id="a-1")
    b, c = bench.consumer("b"), bench.consumer("c")
    form(bench, a, b, c)
    assert_replays(bench)


def test_replaying_the_records_rebuilds_the_group_after_each_kind_of_change():
    bench = Bench()
    a = bench.consumer("a", instance_id="a-1")
    b = bench.consumer("b", instance_id="b-1")
    c = bench.consumer("c")
    form(bench, a, b, c)
    # A static restart without a rebalance.
    b2 = Consumer(bench, "b", instance_id="b-1")
    b2.join("restart")
    b2.sync()
    assert_replays(bench)
    # An upgrade rebalance.
    rejoin(a, b2, c, reason="upgrade")
    complete_sync(a, b2, c)
    assert_replays(bench)
    # A leave.
    c.leave()
    rejoin(a, b2)
    complete_sync(a, b2)
    assert_replays(bench)
    # A session expiry.
    keep_alive(bench, SESSION_MS, a)
    a.join()
    complete_sync(a)
    assert_replays(bench)
    # A leader that does not sync in time.
    d = bench.consumer("d")
    d.join()
    a.join()
    assert a.is_leader and d.sync() is None
    keep_alive(bench, REBALANCE_MS, d)
    d.join()
    complete_sync(d)
    assert_replays(bench)
    # Everyone leaves.
    d.leave()
    assert_replays(bench)


def test_a_group_created_by_a_first_join_survives_a_failover():
    """The first JoinGroup creates the group (MEMBER_ID_REQUIRED, Empty); Kafka writes it at
    once, so a reload finds the same Empty group."""
    bench = Bench()
    assert bench.consumer("a").send_join().response.error_code == Errors.MEMBER_ID_REQUIRED
    assert bench.state() == cg.EMPTY
    assert_replays(bench)


def test_replaying_the_records_rebuilds_a_members_changed_subscription():
    """A member's metadata changes with every generation (owned partitions, generation, new
    topics): the replayed group must describe the latest, as the live one does."""
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    b.protocols = [("range", subscription("foo", "bar"))]
    b.join()
    a.join()
    complete_sync(a, b)
    assert_replays(bench)


def test_a_reloaded_group_checks_the_topics_of_the_latest_subscriptions():
    """Seed 003, point 1, after a subscription change: bar grew while the coordinator was
    down, and b subscribes to it since generation 2."""
    bench = Bench(metadata=image(foo=4, bar=2))
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    b.protocols = [("range", subscription("foo", "bar"))]
    b.join()
    a.join()
    complete_sync(a, b)
    new = failover(bench, a, b, metadata=image(foo=4, bar=5))
    assert new.state() == cg.PREPARING_REBALANCE


def test_a_reloaded_group_whose_topics_did_not_change_stays_stable_after_a_resubscription():
    bench = Bench(metadata=image(foo=4, bar=2))
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    b.protocols = [("range", subscription("foo", "bar"))]
    b.join()
    a.join()
    complete_sync(a, b)
    new = failover(bench, a, b)
    assert new.state() == cg.STABLE
    assert a.heartbeat().error_code == Errors.NONE


def test_replaying_the_records_rebuilds_a_group_emptied_by_its_sessions():
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a, b)
    bench.advance(SESSION_MS)
    assert bench.state() == cg.EMPTY
    assert_replays(bench)


def test_a_reloaded_stable_group_answers_as_the_original_did():
    bench = Bench()
    a, b = bench.consumer("a", instance_id="a-1"), bench.consumer("b")
    form(bench, a, b)
    new = failover(bench, a, b)
    assert new.describe() == bench.describe()
    assert a.sync().assignment == assignment_of(a)
    assert b.heartbeat().error_code == Errors.NONE
    assert Consumer(new, "a", instance_id="a-1").join("restart").generation_id == 1
