"""Refused classic requests: each gets a precise Kafka error code and changes nothing.

Design invariant 6: bad input (any field, any type) gets a clear error code, emits no
records, completes no other request and leaves the group as it was (compared through
DescribeGroups, ListGroups and the shard's next timer).
"""

from __future__ import annotations

import copy
import dataclasses
import typing

import pytest

from protocol import messages as m
from protocol.classic import group as cg
from protocol.errors import Errors
from tests.protocol.classic.test_classic_group import (
    CONFIG,
    FOO,
    REBALANCE_MS,
    SESSION_MS,
    Bench,
    Consumer,
    assert_refused,
    form,
    snapshot,
)


def valid_requests(a: Consumer) -> dict[str, object]:
    return {
        "join": a.join_request(),
        "sync": m.SyncGroupRequest("g", a.generation, a.member_id, None, "consumer", "range"),
        "heartbeat": m.HeartbeatRequest("g", a.generation, a.member_id),
        "leave": m.LeaveGroupRequest("g", [m.MemberIdentity(a.member_id)]),
    }


@pytest.mark.parametrize("kind", ["join", "sync", "heartbeat", "leave"])
def test_empty_group_id_is_invalid_group_id(kind):
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    req = valid_requests(a)[kind]
    req.group_id = ""
    assert_refused(bench, req, Errors.INVALID_GROUP_ID)


@pytest.mark.parametrize(
    ("session_ms", "error"),
    [
        (CONFIG.group_min_session_timeout_ms - 1, Errors.INVALID_SESSION_TIMEOUT),
        (CONFIG.group_max_session_timeout_ms + 1, Errors.INVALID_SESSION_TIMEOUT),
        (0, Errors.INVALID_SESSION_TIMEOUT),
        (CONFIG.group_min_session_timeout_ms, Errors.MEMBER_ID_REQUIRED),
        (CONFIG.group_max_session_timeout_ms, Errors.MEMBER_ID_REQUIRED),
    ],
)
def test_session_timeout_must_lie_within_the_brokers_bounds(session_ms, error):
    bench = Bench()
    a = bench.consumer("a", session_timeout_ms=session_ms)
    resp = a.send_join().response
    assert resp.error_code == error


def test_session_timeout_outside_the_bounds_is_refused_for_a_known_member_too():
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    assert_refused(bench, a.join_request(session_timeout_ms=1), Errors.INVALID_SESSION_TIMEOUT)


@pytest.mark.parametrize(
    "overrides",
    [{"protocols": []}, {"protocol_type": ""}],
    ids=["no-protocols", "empty-protocol-type"],
)
def test_join_without_protocols_or_protocol_type_is_inconsistent_group_protocol(overrides):
    bench = Bench()
    a = bench.consumer("a")
    assert_refused(bench, a.join_request(**overrides), Errors.INCONSISTENT_GROUP_PROTOCOL)
    b = bench.consumer("b")
    form(bench, b)
    assert_refused(bench, a.join_request(**overrides), Errors.INCONSISTENT_GROUP_PROTOCOL)


def test_joiner_sharing_no_protocol_with_the_members_is_inconsistent_group_protocol():
    bench = Bench()
    a = bench.consumer("a", protocols=[("range", FOO), ("roundrobin", FOO)])
    b = bench.consumer("b", protocols=[("roundrobin", FOO)])
    form(bench, a, b)
    c = bench.consumer("c", protocols=[("cooperative-sticky", FOO), ("range", FOO)])
    assert_refused(bench, c.join_request(), Errors.INCONSISTENT_GROUP_PROTOCOL)
    # ... and a known member may not switch to protocols the others lack either.
    req = a.join_request(protocols=[m.JoinGroupRequestProtocol("range", FOO)])
    assert_refused(bench, req, Errors.INCONSISTENT_GROUP_PROTOCOL)


def test_joiner_with_another_protocol_type_is_inconsistent_group_protocol():
    bench = Bench()
    a = bench.consumer("a")
    form(bench, a)
    c = bench.consumer("c")
    assert_refused(
        bench, c.join_request(protocol_type="connect"), Errors.INCONSISTENT_GROUP_PROTOCOL
    )


def test_a_protocol_shared_with_every_member_is_enough_to_join():
    bench = Bench()
    a = bench.consumer("a", protocols=[("range", FOO), ("roundrobin", FOO)])
    b = bench.consumer("b", protocols=[("roundrobin", FOO)])
    form(bench, a, b)
    c = bench.consumer("c", protocols=[("cooperative-sticky", FOO), ("roundrobin", FOO)])
    assert c.send_join().response.error_code == Errors.MEMBER_ID_REQUIRED
    assert c.send_join().response is None  # admitted: the group rebalances


@pytest.mark.parametrize("reason", ["", "Restart", "because", "rebalance"])
def test_unknown_join_reason_is_invalid_request(reason):
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b")
    form(bench, a)
    assert_refused(bench, a.join_request(reason), Errors.INVALID_REQUEST)
    assert_refused(bench, b.join_request(reason), Errors.INVALID_REQUEST)


def test_known_join_reasons_are_accepted():
    for reason in (*cg.JOIN_REASONS, None):
        bench = Bench()
        assert bench.consumer("a").send_join(reason).response.error_code == (
            Errors.MEMBER_ID_REQUIRED
        )


def test_a_rebalance_timeout_below_minus_one_is_invalid_request():
    bench = Bench()
    req = bench.consumer("a").join_request(rebalance_timeout_ms=-2)
    assert_refused(bench, req, Errors.INVALID_REQUEST)


def test_an_empty_group_instance_id_is_invalid_request():
    bench = Bench()
    form(bench, bench.consumer("a"))
    req = bench.consumer("s", instance_id="").join_request()
    assert_refused(bench, req, Errors.INVALID_REQUEST)


WRONG_VALUES = {str: 7, int: "7", bytes: "x", bool: 1}


def _wrong_values(hint) -> list[object]:
    """Values of the wrong type (or out of range) for a field annotated ``hint``."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return ["7", True, 1.5, 2**63]
    if origin is list:
        return ["x", None, {}]
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if args:  # Optional[X]
        return [v for v in _wrong_values(args[0]) if v is not None]
    return [WRONG_VALUES.get(hint, "x"), None, b"\x00" if hint is not bytes else 0]


def mutations(req: object, path: str = "") -> list[tuple[str, object]]:
    """(path, copy of ``req`` with the field at ``path`` replaced by a wrongly typed value),
    for every field, nested structs in lists included."""
    out = []
    hints = typing.get_type_hints(type(req), include_extras=True)
    for f in dataclasses.fields(req):
        value = getattr(req, f.name)
        for wrong in _wrong_values(hints[f.name]):
            bad = copy.deepcopy(req)
            setattr(bad, f.name, wrong)
            out.append((f"{path}{f.name}={wrong!r}", bad))
        if isinstance(value, list) and value and dataclasses.is_dataclass(value[0]):
            for sub_path, sub_bad in mutations(value[0], f"{path}{f.name}[0]."):
                bad = copy.deepcopy(req)
                getattr(bad, f.name)[0] = sub_bad
                out.append((sub_path, bad))
            bad = copy.deepcopy(req)
            getattr(bad, f.name)[0] = "not a struct"
            out.append((f"{path}{f.name}[0]=str", bad))
    return out


def _typed_requests() -> list[tuple[str, str, object]]:
    protos = [m.JoinGroupRequestProtocol("range", FOO)]
    reqs = {
        "join": m.JoinGroupRequest("g", SESSION_MS, REBALANCE_MS, "m", "i", "consumer", protos),
        "sync": m.SyncGroupRequest(
            "g", 1, "m", "i", "consumer", "range", [m.SyncGroupRequestAssignment("m", b"x")]
        ),
        "heartbeat": m.HeartbeatRequest("g", 1, "m", "i"),
        "leave": m.LeaveGroupRequest("g", [m.MemberIdentity("m", "i", "bye")]),
        "describe": m.DescribeGroupsRequest(["g"]),
    }
    return [(kind, path, bad) for kind, req in reqs.items() for path, bad in mutations(req)]


@pytest.mark.parametrize(
    ("kind", "path", "bad"), _typed_requests(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_any_field_of_the_wrong_type_is_invalid_request_and_changes_nothing(kind, path, bad):
    bench = Bench()
    a, b = bench.consumer("a"), bench.consumer("b", instance_id="i")
    form(bench, a, b)
    before = snapshot(bench)
    res = bench.send(bad)
    if kind == "describe":
        assert all(g.error_code == Errors.INVALID_REQUEST for g in res.response.groups)
    else:
        assert res.response.error_code == Errors.INVALID_REQUEST, res.response
    assert res.records == [] and [q for q, _ in res.replies] == [bad]
    assert snapshot(bench) == before
