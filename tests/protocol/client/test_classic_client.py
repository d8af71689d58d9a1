"""ClassicMemberClient alone: every rule, with hand-made coordinator replies.

Times are seconds; the client never reads a clock. ``through_sync`` walks a member through one
JoinGroup/SyncGroup round; the replies carry what a coordinator would (see
``test_classic_client_vs_shard.py`` for the same client against the real coordinator).
"""

from __future__ import annotations

import math

import pytest

from protocol import messages as m
from protocol.classic.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.client.classic import LEAVE_REASON, ClassicMemberClient
from protocol.errors import Errors

GROUP = "g"
SESSION_S, REBALANCE_S, HEARTBEAT_S = 10.0, 20.0, 1.0
COUNTS = {"foo": 4, "bar": 2}


def client(**kwargs) -> ClassicMemberClient:
    kwargs = {
        "topics": ["foo"],
        "session_timeout_ms": int(SESSION_S * 1000),
        "rebalance_timeout_ms": int(REBALANCE_S * 1000),
        "heartbeat_interval_ms": int(HEARTBEAT_S * 1000),
        "partitions_per_topic": COUNTS,
        **kwargs,
    }
    return ClassicMemberClient(GROUP, **kwargs)


def join_reply(
    member_id: str = "m1",
    generation: int = 1,
    leader: str = "other",
    protocol: str = "range",
    members: list[m.JoinGroupResponseMember] | None = None,
    skip: bool = False,
) -> m.JoinGroupResponse:
    return m.JoinGroupResponse(
        generation_id=generation,
        protocol_type="consumer",
        protocol_name=protocol,
        leader=leader,
        skip_assignment=skip,
        member_id=member_id,
        members=members or [],
    )


def sync_reply(*parts: tuple[str, int]) -> m.SyncGroupResponse:
    grouped: dict[str, list[int]] = {}
    for t, p in parts:
        grouped.setdefault(t, []).append(p)
    return m.SyncGroupResponse(
        protocol_type="consumer",
        protocol_name="range",
        assignment=encode_assignment(Assignment(sorted(grouped.items()))),
    )


def error(cls, code: Errors, **fields):
    return cls(error_code=code, **fields)


def member_meta(member_id: str, topics: list[str], owned=(), generation=-1, instance_id=None):
    grouped: dict[str, list[int]] = {}
    for t, p in owned:
        grouped.setdefault(t, []).append(p)
    meta = encode_subscription(Subscription(topics, sorted(grouped.items()), generation))
    return m.JoinGroupResponseMember(member_id, instance_id, meta)


def through_sync(
    c: ClassicMemberClient, now: float, *parts: tuple[str, int], generation: int = 1
) -> None:
    """One JoinGroup/SyncGroup round as a follower, answered at ``now``, granting ``parts``."""
    join = c.poll(now)
    assert isinstance(join, m.JoinGroupRequest), join
    c.on_response(now, join_reply(c.member_id or "m1", generation))
    sync = c.poll(now)
    assert isinstance(sync, m.SyncGroupRequest), sync
    c.on_response(now, sync_reply(*parts))
    assert c.state in ("stable", "unjoined")


def heartbeat(c: ClassicMemberClient, now: float, reply=None) -> m.HeartbeatRequest:
    req = c.poll(now)
    assert isinstance(req, m.HeartbeatRequest), req
    c.on_response(now, reply or m.HeartbeatResponse())
    return req


FOO = [("foo", p) for p in range(4)]


# ---------------------------------------------------------------------------- joining


def test_join_names_every_assignor_in_order_with_the_eager_subscription():
    c = client(assignors=["range", "roundrobin"], rack_id="r1")
    join = c.poll(0.0)
    assert isinstance(join, m.JoinGroupRequest)
    assert (join.group_id, join.member_id, join.group_instance_id) == (GROUP, "", None)
    assert (join.session_timeout_ms, join.rebalance_timeout_ms) == (10_000, 20_000)
    assert join.protocol_type == "consumer" and join.reason is None
    assert [p.name for p in join.protocols] == ["range", "roundrobin"]
    for p in join.protocols:
        assert decode_subscription(p.metadata) == Subscription(["foo"], [], -1, "r1")
    assert c.state == "joining" and c.poll(0.0) is None, "one request in flight at a time"


def test_rebalance_protocol_is_cooperative_only_if_every_assignor_is():
    assert client(assignors=["cooperative-sticky"]).rebalance_protocol == "cooperative"
    assert client(assignors=["cooperative-sticky", "range"]).rebalance_protocol == "eager"
    assert client(assignors=["range", "roundrobin"]).rebalance_protocol == "eager"
    with pytest.raises(KeyError):
        client(assignors=["no-such-assignor"])
    with pytest.raises(ValueError):
        client(assignors=[])


def test_dynamic_member_rejoins_at_once_with_the_member_id_the_coordinator_requires():
    c = client(join_reason="restart")
    c.poll(0.0)
    c.on_response(0.0, error(m.JoinGroupResponse, Errors.MEMBER_ID_REQUIRED, member_id="m-7"))
    assert (c.member_id, c.state, c.next_due()) == ("m-7", "unjoined", 0.0)
    again = c.poll(0.0)
    assert isinstance(again, m.JoinGroupRequest)
    assert (again.member_id, again.reason) == ("m-7", "restart")


def test_static_member_joins_with_its_instance_id_and_its_join_reason():
    c = client(instance_id="i-1", join_reason="restart")
    join = c.poll(0.0)
    assert (join.group_instance_id, join.member_id, join.reason) == ("i-1", "", "restart")


def test_join_reason_is_sent_on_the_first_join_only():
    c = client(instance_id="i-1", join_reason="restart")
    through_sync(c, 0.0, ("foo", 0))
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    rejoin = c.poll(1.0)
    assert isinstance(rejoin, m.JoinGroupRequest)
    assert (rejoin.member_id, rejoin.reason) == ("m1", None)


def test_follower_syncs_without_assignments_and_owns_what_the_reply_carries():
    assigned = []
    c = client(on_assign=assigned.append)
    c.poll(0.0)
    c.on_response(0.5, join_reply("m1", generation=3, leader="m2"))
    assert (c.state, c.generation, c.member_id, c.is_leader) == ("syncing", 3, "m1", False)
    sync = c.poll(0.5)
    assert isinstance(sync, m.SyncGroupRequest)
    assert (sync.generation_id, sync.member_id, sync.protocol_name) == (3, "m1", "range")
    assert sync.protocol_type == "consumer" and sync.assignments == []
    c.on_response(0.6, sync_reply(("foo", 1), ("foo", 0)))
    assert c.state == "stable" and c.assignment == [("foo", 0), ("foo", 1)]
    assert assigned == [[("foo", 0), ("foo", 1)]]
    assert c.timeline == [
        {
            "t": 0.6,
            "event": "assigned",
            "partitions": [("foo", 0), ("foo", 1)],
            "epoch": 3,
            "member_id": "m1",
        }
    ]


def test_leader_runs_the_chosen_assignor_over_every_members_subscription():
    c = client(assignors=["range", "roundrobin"], topics=["foo", "bar"])
    c.poll(0.0)
    members = [
        member_meta("m1", ["foo", "bar"]),
        member_meta("m2", ["foo"]),
        m.JoinGroupResponseMember("m3", None, b"garbage"),  # subscribes to nothing
    ]
    c.on_response(0.0, join_reply("m1", leader="m1", protocol="roundrobin", members=members))
    assert c.is_leader and c.leader_metadata == {"bar": 2, "foo": 4}
    sync = c.poll(0.0)
    plan = {
        a.member_id: decode_assignment(a.assignment).assigned_partitions for a in sync.assignments
    }
    assert set(plan) == {"m1", "m2", "m3"}
    flat = sorted((t, p) for parts in plan.values() for t, ps in parts for p in ps)
    assert flat == sorted([*FOO, ("bar", 0), ("bar", 1)])
    assert plan["m3"] == []
    assert dict(plan["m2"]).keys() <= {"foo"}


def test_leader_with_skip_assignment_syncs_nothing_but_watches_the_metadata():
    c = client()
    c.poll(0.0)
    c.on_response(
        0.0, join_reply("m1", leader="m1", members=[member_meta("m1", ["foo"])], skip=True)
    )
    assert c.is_leader and c.leader_metadata == {"foo": 4}
    assert c.poll(0.0).assignments == []


def test_member_of_a_migrated_group_with_no_leader_is_a_follower():
    c = client()
    c.poll(0.0)
    c.on_response(0.0, join_reply("m1", generation=12, leader=""))
    assert not c.is_leader and c.poll(0.0).assignments == []


def test_no_heartbeat_while_the_join_reply_is_delayed():
    c = client()
    through_sync(c, 0.0, ("foo", 0))
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    assert isinstance(c.poll(1.0), m.JoinGroupRequest)  # eager: revoked everything first
    assert c.assignment == [] and c.next_due() is None
    for t in (2.0, 5.0, 30.0, 100.0):
        assert c.poll(t) is None


def test_heartbeats_follow_the_interval_while_stable():
    c = client()
    through_sync(c, 0.0, ("foo", 0), generation=4)
    assert c.next_due() == HEARTBEAT_S
    assert c.poll(0.99) is None
    req = heartbeat(c, 1.0)
    assert (req.generation_id, req.member_id, req.group_instance_id) == (4, "m1", None)
    assert c.next_due() == 2.0


# ----------------------------------------------------------------------- eager / cooperative


def test_eager_member_revokes_everything_before_it_sends_the_join():
    calls = []
    c = client(on_revoke=lambda ps: calls.append(("revoke", ps)))
    through_sync(c, 0.0, ("foo", 0), ("foo", 1))
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    assert c.assignment == [("foo", 0), ("foo", 1)], "nothing is revoked before the join"
    join = c.poll(1.0)
    assert calls == [("revoke", [("foo", 0), ("foo", 1)])] and c.assignment == []
    assert decode_subscription(join.protocols[0].metadata).owned_partitions == []
    assert c.timeline[-1]["event"] == "revoked" and c.timeline[-1]["t"] == 1.0


def test_cooperative_member_keeps_its_partitions_and_reports_them_when_rejoining():
    c = client(assignors=["cooperative-sticky"])
    through_sync(c, 0.0, ("foo", 0), ("foo", 1), generation=5)
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    join = c.poll(1.0)
    sub = decode_subscription(join.protocols[0].metadata)
    assert (sub.owned_partitions, sub.generation_id) == ([("foo", [0, 1])], 5)
    assert c.assignment == [("foo", 0), ("foo", 1)]


def test_cooperative_revocation_then_rejoins_at_once_to_hand_the_partitions_over():
    calls = []
    c = client(
        assignors=["cooperative-sticky"],
        on_revoke=lambda ps: calls.append(("revoke", ps)),
        on_assign=lambda ps: calls.append(("assign", ps)),
    )
    through_sync(c, 0.0, ("foo", 0), ("foo", 1), generation=5)
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    c.poll(1.0)
    c.on_response(1.5, join_reply("m1", generation=6))
    c.poll(1.5)
    c.on_response(1.5, sync_reply(("foo", 1), ("foo", 2)))
    assert calls == [
        ("assign", [("foo", 0), ("foo", 1)]),
        ("revoke", [("foo", 0)]),
        ("assign", [("foo", 2)]),
    ]
    assert [e["event"] for e in c.timeline] == ["assigned", "revoked", "assigned"]
    rejoin = c.poll(1.5)
    assert isinstance(rejoin, m.JoinGroupRequest)
    sub = decode_subscription(rejoin.protocols[0].metadata)
    assert (sub.owned_partitions, sub.generation_id) == ([("foo", [1, 2])], 6)


def test_cooperative_member_with_nothing_revoked_stays_stable():
    c = client(assignors=["cooperative-sticky"])
    through_sync(c, 0.0, ("foo", 0), generation=5)
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    c.poll(1.0)
    c.on_response(1.0, join_reply("m1", generation=6))
    c.poll(1.0)
    c.on_response(1.0, sync_reply(("foo", 0), ("foo", 3)))
    assert c.state == "stable" and isinstance(c.poll(2.0), m.HeartbeatRequest)


def test_cooperative_leader_refuses_an_assignment_that_moves_an_owned_partition_at_once():
    from assignors.classic import ClassicSubscription
    from protocol.client.classic_leader import _check_cooperative

    subs = {
        "a": ClassicSubscription(["foo"], [("foo", 0)], 3),
        "b": ClassicSubscription(["foo"], [], 3),
    }
    _check_cooperative({"a": [], "b": [("foo", 1)]}, subs)
    with pytest.raises(AssertionError):
        _check_cooperative({"a": [], "b": [("foo", 0)]}, subs)


# ---------------------------------------------------------------------------- errors


def test_illegal_generation_loses_everything_keeps_the_member_id_and_rejoins():
    lost = []
    c = client(assignors=["cooperative-sticky"], on_lost=lost.append)
    through_sync(c, 0.0, ("foo", 0), generation=5)
    heartbeat(c, 1.0)
    c.poll(2.0)
    c.on_response(2.5, error(m.HeartbeatResponse, Errors.ILLEGAL_GENERATION))
    assert lost == [[("foo", 0)]] and c.assignment == []
    assert c.timeline[-1] | {"t": c.timeline[-1]["t"]} == {
        "t": 2.0,  # the coordinator may have acted on it as soon as it arrived
        "event": "lost",
        "partitions": [("foo", 0)],
        "epoch": 5,
        "member_id": "m1",
    }
    assert (c.generation, c.member_id, c.state) == (-1, "m1", "unjoined")
    join = c.poll(2.5)
    sub = decode_subscription(join.protocols[0].metadata)
    assert (join.member_id, sub.owned_partitions, sub.generation_id) == ("m1", [], -1)


def test_unknown_member_id_loses_everything_and_rejoins_as_a_new_member():
    c = client()
    through_sync(c, 0.0, ("foo", 0))
    c.poll(1.0)
    c.on_response(1.0, error(m.HeartbeatResponse, Errors.UNKNOWN_MEMBER_ID))
    assert c.timeline[-1]["event"] == "lost" and c.assignment == []
    assert (c.member_id, c.generation) == ("", -1)
    assert c.poll(1.0).member_id == ""


def test_fenced_instance_id_loses_everything_and_stops_for_good():
    c = client(instance_id="i-1")
    through_sync(c, 0.0, ("foo", 0))
    c.poll(1.0)
    c.on_response(1.0, error(m.HeartbeatResponse, Errors.FENCED_INSTANCE_ID))
    assert (c.state, c.error, c.assignment) == ("fenced", Errors.FENCED_INSTANCE_ID, [])
    assert c.timeline[-1]["event"] == "lost"
    assert c.poll(100.0) is None and c.next_due() is None


@pytest.mark.parametrize(
    ("reply", "owned_after"),
    [
        (error(m.SyncGroupResponse, Errors.REBALANCE_IN_PROGRESS), [("foo", 0)]),
        (error(m.SyncGroupResponse, Errors.ILLEGAL_GENERATION), []),
        (error(m.SyncGroupResponse, Errors.UNKNOWN_MEMBER_ID), []),
        (error(m.JoinGroupResponse, Errors.REBALANCE_IN_PROGRESS), [("foo", 0)]),
        (error(m.JoinGroupResponse, Errors.ILLEGAL_GENERATION), []),
        (error(m.JoinGroupResponse, Errors.UNKNOWN_MEMBER_ID), []),
    ],
)
def test_join_and_sync_errors_mean_what_they_mean_for_heartbeats(reply, owned_after):
    c = client(assignors=["cooperative-sticky"])
    through_sync(c, 0.0, ("foo", 0), generation=5)
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    c.poll(1.0)
    if isinstance(reply, m.SyncGroupResponse):
        c.on_response(1.0, join_reply("m1", generation=6))
        c.poll(1.0)
    c.on_response(1.0, reply)
    assert c.assignment == owned_after and c.state == "unjoined"
    assert c.member_id == ("" if reply.error_code == Errors.UNKNOWN_MEMBER_ID else "m1")
    assert isinstance(c.poll(1.0), m.JoinGroupRequest), "rejoins at once"


@pytest.mark.parametrize(
    "code",
    [
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_COORDINATOR,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.UNKNOWN_SERVER_ERROR,
    ],
)
def test_retriable_heartbeat_errors_back_off_exponentially_and_keep_the_assignment(code):
    c = client()
    through_sync(c, 0.0, ("foo", 0))
    delays = []
    for _ in range(5):
        t = c.next_due()
        assert c.poll(t - 0.001) is None
        assert isinstance(c.poll(t), m.HeartbeatRequest)
        c.on_response(t, error(m.HeartbeatResponse, code))
        delays.append(round(c.next_due() - t, 6))
    assert delays == [0.1, 0.2, 0.4, 0.8, 1.0]
    assert (c.assignment, c.state) == ([("foo", 0)], "stable")
    heartbeat(c, c.next_due())
    assert c.next_due() == pytest.approx(c.timeline[0]["t"] + 1.0 + sum(delays) + 1.0)


@pytest.mark.parametrize("kind", ["join", "sync"])
def test_retriable_join_and_sync_errors_back_off_then_join_again(kind):
    c = client()
    c.poll(0.0)
    if kind == "sync":
        c.on_response(0.0, join_reply())
        c.poll(0.0)
        c.on_response(0.0, error(m.SyncGroupResponse, Errors.COORDINATOR_NOT_AVAILABLE))
    else:
        c.on_response(0.0, error(m.JoinGroupResponse, Errors.COORDINATOR_LOAD_IN_PROGRESS))
    assert c.state == "unjoined" and c.next_due() == pytest.approx(0.1)
    assert c.poll(0.05) is None
    assert isinstance(c.poll(0.1), m.JoinGroupRequest)


@pytest.mark.parametrize("kind", ["join", "sync", "heartbeat"])
def test_failed_call_is_retried_with_backoff(kind):
    c = client()
    if kind == "heartbeat":
        through_sync(c, 0.0, ("foo", 0))
        c.poll(1.0)
        c.on_failure(1.2)
        assert (c.state, c.next_due()) == ("stable", pytest.approx(1.3))
        assert isinstance(c.poll(1.3), m.HeartbeatRequest)
        return
    c.poll(0.0)
    if kind == "sync":
        c.on_response(0.0, join_reply())
        c.poll(0.0)
    c.on_failure(0.0)
    assert (c.state, c.next_due()) == ("unjoined", pytest.approx(0.1))
    assert isinstance(c.poll(0.1), m.JoinGroupRequest)


@pytest.mark.parametrize(
    "code",
    [Errors.INCONSISTENT_GROUP_PROTOCOL, Errors.GROUP_MAX_SIZE_REACHED, Errors.INVALID_REQUEST],
)
def test_fatal_error_fails_the_member_and_stops_its_requests(code):
    c = client()
    through_sync(c, 0.0, ("foo", 0))
    c.poll(1.0)
    c.on_response(1.0, error(m.HeartbeatResponse, code))
    assert (c.state, c.error, c.assignment) == ("failed", code, [])
    assert c.poll(10.0) is None and c.next_due() is None


# -------------------------------------------------------------------- ownership deadline


def test_silent_member_gives_up_its_partitions_a_session_after_its_last_answered_heartbeat():
    lost = []
    c = client(on_lost=lost.append)
    through_sync(c, 0.0, ("foo", 0))
    heartbeat(c, 1.0)
    assert c.ownership_deadline == 1.0 + SESSION_S
    c.poll(2.0)  # sent; the reply never comes
    assert c.next_due() == 11.0
    assert c.poll(10.99) is None and c.assignment == [("foo", 0)]
    c.poll(11.5)
    assert lost == [[("foo", 0)]] and c.timeline[-1]["t"] == 11.0
    assert c.assignment == [] and c.next_due() is None
    c.on_response(11.6, m.HeartbeatResponse())  # the late reply means nothing now
    assert isinstance(c.poll(11.6), m.JoinGroupRequest)


def test_late_heartbeat_reply_does_not_stretch_the_deadline_past_its_send_time():
    c = client()
    through_sync(c, 0.0, ("foo", 0))
    c.poll(1.0)
    c.on_response(9.0, m.HeartbeatResponse())  # answered, but read 8 s later
    assert c.ownership_deadline == 11.0
    c.poll(10.0)
    c.on_response(12.0, m.HeartbeatResponse())  # read after the deadline: not trusted
    assert c.timeline[-1]["event"] == "lost" and c.timeline[-1]["t"] == 11.0
    assert c.state == "unjoined" and c.generation == -1


def test_a_rebalance_timeout_shorter_than_the_session_bounds_the_deadline():
    c = client(rebalance_timeout_ms=4_000)  # a rebalance it misses would remove it sooner
    through_sync(c, 0.0, ("foo", 0))
    assert c.ownership_deadline == 4.0


def test_cooperative_member_waiting_for_its_join_reply_keeps_its_partitions_until_the_bound():
    c = client(assignors=["cooperative-sticky"])
    through_sync(c, 0.0, ("foo", 0), generation=5)
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    c.poll(1.5)  # the JoinGroup: the coordinator holds it, and does not expire us meanwhile
    assert c.ownership_deadline == 1.5 + REBALANCE_S + SESSION_S
    assert c.poll(25.0) is None and c.assignment == [("foo", 0)]  # past the session: kept
    c.poll(31.5)
    assert c.timeline[-1]["event"] == "lost" and c.timeline[-1]["t"] == 31.5
    c.on_response(32.0, join_reply("m1", generation=6))  # too late: ignored, start over
    assert isinstance(c.poll(32.0), m.JoinGroupRequest)


def test_long_join_phase_then_sync_keeps_cooperative_partitions():
    c = client(assignors=["cooperative-sticky"])
    through_sync(c, 0.0, ("foo", 0), generation=5)
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    c.poll(1.0)
    c.on_response(18.0, join_reply("m1", generation=6))  # the join phase lasted 17 s
    c.poll(18.0)
    c.on_response(18.1, sync_reply(("foo", 0)))
    assert c.assignment == [("foo", 0)] and c.ownership_deadline == 18.0 + SESSION_S
    assert [e["event"] for e in c.timeline] == ["assigned"]


def test_member_stalled_between_its_join_reply_and_its_sync_gives_up_a_session_later():
    c = client(assignors=["cooperative-sticky"])
    through_sync(c, 0.0, ("foo", 0), generation=5)
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    c.poll(1.0)
    c.on_response(18.0, join_reply("m1", generation=6))  # the join phase ended just now
    assert c.ownership_deadline == 18.0 + SESSION_S
    rejoin = c.poll(28.0)  # not the SyncGroup: its claims are void now
    assert isinstance(rejoin, m.JoinGroupRequest) and c.assignment == []
    assert c.timeline[-1] == {
        "t": 28.0,
        "event": "lost",
        "partitions": [("foo", 0)],
        "epoch": 6,
        "member_id": "m1",
    }


def test_a_repeated_join_reply_of_the_same_generation_restarts_no_clock():
    c = client(assignors=["cooperative-sticky"])
    through_sync(c, 0.0, ("foo", 0), generation=5)
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    c.poll(1.0)
    c.on_response(2.0, join_reply("m1", generation=6))
    c.poll(2.0)
    c.on_failure(2.0)  # the SyncGroup never arrived; the rebalance timeout runs on
    c.poll(2.1)
    c.on_response(2.1, join_reply("m1", generation=6))  # the coordinator repeats its reply
    assert c.ownership_deadline == 2.0 + SESSION_S


def test_failed_join_falls_back_to_the_last_proven_session():
    c = client(assignors=["cooperative-sticky"])
    through_sync(c, 0.0, ("foo", 0), generation=5)
    heartbeat(c, 1.0, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    c.poll(1.0)
    c.on_failure(12.0)  # the last answered heartbeat or sync was sent at 0.0
    assert c.timeline[-1]["event"] == "lost" and c.timeline[-1]["t"] == SESSION_S
    assert c.assignment == []


def test_sync_reply_read_after_the_session_could_have_ended_is_not_trusted():
    c = client()
    c.poll(0.0)
    c.on_response(0.0, join_reply())
    c.poll(0.0)
    c.on_response(SESSION_S + 1, sync_reply(("foo", 0)))
    assert c.assignment == [] and c.timeline == [] and c.state == "unjoined"


def test_backoff_never_waits_past_the_ownership_deadline():
    c = client(session_timeout_ms=1_000, heartbeat_interval_ms=100)
    through_sync(c, 0.0, ("foo", 0))
    for _ in range(4):
        t = c.next_due()
        c.poll(t)
        c.on_failure(t)
    assert c.next_due() == c.ownership_deadline == 1.0
    assert isinstance(c.poll(1.0), m.JoinGroupRequest)
    assert c.timeline[-1]["event"] == "lost" and c.timeline[-1]["t"] == 1.0


# ---------------------------------------------------------------------------- leaving


def test_dynamic_member_leaves_with_a_reason_after_revoking_everything():
    revoked = []
    c = client(on_revoke=revoked.append)
    through_sync(c, 0.0, ("foo", 0))
    c.leave()
    assert c.state == "leaving"
    req = c.poll(0.5)
    assert req == m.LeaveGroupRequest(GROUP, [m.MemberIdentity("m1", None, LEAVE_REASON)])
    assert revoked == [[("foo", 0)]] and c.timeline[-1]["event"] == "revoked"
    c.on_response(0.5, m.LeaveGroupResponse())
    assert c.state == "stopped" and c.poll(10.0) is None and c.next_due() is None


def test_static_member_closes_without_leaving_the_group_unless_forced():
    c = client(instance_id="i-1")
    through_sync(c, 0.0, ("foo", 0))
    c.leave()
    assert c.poll(0.5) is None and c.state == "stopped" and c.assignment == []
    forced = client(instance_id="i-1")
    through_sync(forced, 0.0, ("foo", 0))
    forced.leave(force=True)
    req = forced.poll(0.5)
    assert req.members == [m.MemberIdentity("m1", "i-1", LEAVE_REASON)]
    forced.on_failure(0.6)  # even unanswered, the member is done
    assert forced.state == "stopped"


def test_leave_before_joining_sends_nothing():
    c = client()
    c.leave()
    assert c.poll(0.0) is None and c.state == "stopped"


def test_leave_while_a_join_is_in_flight_takes_nothing_from_the_reply():
    c = client()
    c.poll(0.0)
    c.leave()
    assert c.poll(0.0) is None
    c.on_response(0.1, join_reply("m9", generation=2))
    req = c.poll(0.1)
    assert req.members[0].member_id == "m9" and c.assignment == []


# ---------------------------------------------------------------------------- metadata


def test_leader_seeing_a_partition_count_change_rejoins_saying_why():
    counts = dict(COUNTS)
    c = client(partitions_per_topic=lambda: counts)
    c.poll(0.0)
    c.on_response(0.0, join_reply("m1", leader="m1", members=[member_meta("m1", ["foo"])]))
    c.poll(0.0)
    c.on_response(0.0, sync_reply(*FOO))
    assert c.check_metadata() is False
    counts["bar"] = 8  # not subscribed by anyone: no reason to rebalance
    assert c.check_metadata() is False
    counts["foo"] = 6
    assert c.check_metadata() is True
    assert c.next_due() == -math.inf
    join = c.poll(0.2)
    assert join.reason == "topic_metadata_change" and c.assignment == []
    c.on_response(
        0.3, join_reply("m1", generation=2, leader="m1", members=[member_meta("m1", ["foo"])])
    )
    sync = c.poll(0.3)
    assert decode_assignment(sync.assignments[0].assignment).assigned_partitions == [
        ("foo", list(range(6)))
    ]
    c.on_response(0.3, sync_reply(*[("foo", p) for p in range(6)]))
    heartbeat(c, 1.3, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
    assert c.poll(1.3).reason is None


def test_followers_do_not_watch_the_metadata():
    c = client()
    through_sync(c, 0.0, ("foo", 0))
    assert c.leader_metadata is None and c.check_metadata() is False


# ---------------------------------------------------------------------------- bookkeeping


def test_timeline_keeps_only_the_newest_events_and_counts_them_all():
    c = client(assignors=["cooperative-sticky"], timeline_max_events=3)
    for i in range(4):
        t = float(i)
        if c.state == "stable":
            heartbeat(c, t, error(m.HeartbeatResponse, Errors.REBALANCE_IN_PROGRESS))
        c.poll(t)
        c.on_response(t, join_reply("m1", generation=i + 1))
        c.poll(t)
        c.on_response(t, sync_reply(("foo", i)))  # takes i, revokes i - 1
    assert c.events_recorded == 7
    assert [(e["event"], e["epoch"]) for e in c.timeline] == [
        ("assigned", 3),
        ("revoked", 4),
        ("assigned", 4),
    ]


def test_reply_without_a_request_is_a_caller_bug():
    with pytest.raises(RuntimeError):
        client().on_response(0.0, m.HeartbeatResponse())
