"""Invariant 6 for the Connect requests: any field, any type -> an error code, nothing changed.

The style of ``tests/protocol/test_request_fuzz.py`` (whose strategies and type oracle this
reuses), aimed at a shard hosting two live Connect groups: ``g`` on the coordinator's
assignor, stable; ``c`` on a client-side assignor, waiting for its chosen worker. Every
ConnectGroupHeartbeat / PrepareAssignment / InstallAssignment / Describe, well-formed or not,
must get a Kafka error code (never UNKNOWN_SERVER_ERROR); a refusal must leave groups, timers
and clock exactly as they were (FENCED_MEMBER_EPOCH removes that worker, by design); a
malformed field is INVALID_REQUEST naming its path; whatever is accepted must be persistable.
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import messages as m
from protocol.codec import decode_record, encode_record
from protocol.connect import units as u
from protocol.connect.sessions import (
    AssignmentDeadline,
    ScheduledRebalance,
    WorkerRevocationDeadline,
    WorkerSession,
)
from protocol.errors import Errors
from protocol.metadata import ConnectorMetadata, MetadataImage
from protocol.shard import GroupCoordinatorShard
from tests.protocol.connect.workers import Worker, client_assignor, settle
from tests.protocol.test_request_fuzz import (
    CA,
    CB,
    CC,
    GARBAGE,
    POOLS,
    UNRELATED,
    A,
    B,
    _typed,
    malformed_path,
)

SERVER_GROUP, CLIENT_GROUP = "g", "c"
REQUEST_TYPES = (
    m.ConnectGroupHeartbeatRequest,
    m.ConnectGroupPrepareAssignmentRequest,
    m.ConnectGroupInstallAssignmentRequest,
    m.ConnectGroupDescribeRequest,
)
FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def live_shard() -> GroupCoordinatorShard:
    image = MetadataImage(
        [],
        [
            ConnectorMetadata(SERVER_GROUP, "sink", 3),
            ConnectorMetadata(CLIENT_GROUP, "sink", 2),
            ConnectorMetadata(CLIENT_GROUP, "src", 1),
        ],
    )
    shard = GroupCoordinatorShard(metadata=image)
    server = [Worker(shard, A, SERVER_GROUP, instance_id="inst-1"), Worker(shard, B, SERVER_GROUP)]
    for w in server:
        w.join()
    settle(server)
    clients = [Worker(shard, mid, CLIENT_GROUP, assignors=[client_assignor()]) for mid in (CA, CB)]
    for w in clients:
        w.join()
    settle(clients)
    Worker(shard, CC, CLIENT_GROUP, assignors=[client_assignor()]).join()  # now assigning
    return shard


_TEMPLATE = live_shard()
_CHOSEN = _TEMPLATE.connect.compute.chosen(_TEMPLATE.groups[CLIENT_GROUP])


def fresh_shard() -> GroupCoordinatorShard:
    return copy.deepcopy(_TEMPLATE)


def state_of(shard: GroupCoordinatorShard) -> tuple:
    groups = copy.deepcopy(shard.groups)
    described = shard.handle(m.ConnectGroupDescribeRequest(sorted(shard.groups))).response
    keys = [ScheduledRebalance(gid) for gid in shard.groups]
    for gid, group in shard.groups.items():
        for mid in group.members:
            keys += [
                WorkerSession(gid, mid),
                WorkerRevocationDeadline(gid, mid),
                AssignmentDeadline(gid, mid),
            ]
    timers = {(key, shard.timers.deadline(key)) for key in keys}
    return groups, described, timers, len(shard.timers), shard.next_deadline_ms(), shard.now_ms


def error_codes(response: object) -> list[int]:
    if isinstance(response, m.ConnectGroupDescribeResponse):
        return [g.error_code for g in response.groups]
    return [response.error_code]  # type: ignore[attr-defined]


def error_messages(response: object) -> list[str]:
    if isinstance(response, m.ConnectGroupDescribeResponse):
        return [g.error_message or "" for g in response.groups]
    return [getattr(response, "error_message", None) or ""]


# ------------------------------------------------------------------------ strategies

_CONNECTORS = st.sampled_from(["sink", "src", "ghost", "", "\ud800"])
CONNECT_POOLS: dict[str, st.SearchStrategy[Any]] = {
    **POOLS,
    "connector": _CONNECTORS,
    "connectors": st.lists(_CONNECTORS, max_size=3),
    "task": st.integers(-2, 4),
    "server_assignor": st.none() | st.sampled_from(["incremental-cooperative", "uniform", ""]),
    "name": st.sampled_from(["incremental-cooperative", "other", ""]),
    "group_ids": st.lists(st.sampled_from([SERVER_GROUP, CLIENT_GROUP, "nope", ""]), max_size=3),
}


def _field(hint: Any, name: str) -> st.SearchStrategy[Any]:
    if name in CONNECT_POOLS:
        return CONNECT_POOLS[name]
    if dataclasses.is_dataclass(hint):
        return connect_message(hint)
    origin = typing.get_origin(hint)
    if origin is list and dataclasses.is_dataclass(typing.get_args(hint)[0]):
        return st.lists(connect_message(typing.get_args(hint)[0]), max_size=3)
    if origin is not None and type(None) in typing.get_args(hint):
        (inner,) = [a for a in typing.get_args(hint) if a is not type(None)]
        return st.none() | _field(inner, name)
    return _typed(hint, name)


@st.composite
def connect_message(draw: st.DrawFn, cls: type) -> Any:
    """An instance of ``cls``: well-typed fields aimed at the live groups, sometimes one or
    two of them garbage."""
    hints = typing.get_type_hints(cls, include_extras=True)
    names = [f.name for f in dataclasses.fields(cls)]
    spoiled: set[str] = set()
    if draw(st.booleans()):
        spoiled = draw(st.sets(st.sampled_from(names), min_size=1, max_size=2))
    return cls(
        **{name: draw(GARBAGE if name in spoiled else _field(hints[name], name)) for name in names}
    )


def _near_valid_bases() -> list:
    """Requests the live shard accepts as they are."""
    t = _TEMPLATE

    def beat(gid: str, mid: str):
        mem = t.groups[gid].members[mid]
        return lambda: m.ConnectGroupHeartbeatRequest(
            gid, mid, mem.member_epoch, connectors_and_tasks=u.to_wire(mem.assigned)
        )

    chosen_epoch = t.groups[CLIENT_GROUP].members[_CHOSEN].member_epoch
    group_epoch = t.groups[CLIENT_GROUP].group_epoch
    return [
        lambda: m.ConnectGroupHeartbeatRequest(
            SERVER_GROUP, "new", 0, rebalance_timeout_ms=60_000,
            connectors_and_tasks=m.ConnectorsAndTasks(),
        ),
        lambda: m.ConnectGroupHeartbeatRequest(
            CLIENT_GROUP, "new", 0, rebalance_timeout_ms=60_000,
            client_assignors=[client_assignor()],
        ),
        beat(SERVER_GROUP, A),
        beat(CLIENT_GROUP, CB),
        lambda: m.ConnectGroupHeartbeatRequest(SERVER_GROUP, B, -1),
        lambda: m.ConnectGroupHeartbeatRequest(SERVER_GROUP, A, -2, instance_id="inst-1"),
        lambda: m.ConnectGroupPrepareAssignmentRequest(CLIENT_GROUP, _CHOSEN, chosen_epoch),
        lambda: m.ConnectGroupInstallAssignmentRequest(
            CLIENT_GROUP, _CHOSEN, chosen_epoch, group_epoch,
            members=[
                m.ConnectInstallAssignmentMember(
                    CA, connectors_and_tasks=m.ConnectorsAndTasks(
                        ["sink"], [m.ConnectorTaskId("src", 0)]
                    ),
                )
            ],
        ),
        lambda: m.ConnectGroupDescribeRequest([SERVER_GROUP, CLIENT_GROUP]),
    ]


_NEAR_VALID = _near_valid_bases()


@st.composite
def near_valid(draw: st.DrawFn) -> object:
    req = draw(st.sampled_from(_NEAR_VALID))()
    hints = typing.get_type_hints(type(req), include_extras=True)
    names = [f.name for f in dataclasses.fields(req)]
    for name in draw(st.sets(st.sampled_from(names), max_size=3)):
        garbage = draw(st.integers(0, 3), label="garbage?") == 0
        setattr(req, name, draw(GARBAGE if garbage else _field(hints[name], name)))
    return req


@st.composite
def requests(draw: st.DrawFn) -> object:
    if draw(st.integers(0, 2), label="from scratch?") == 0:
        return draw(st.sampled_from(REQUEST_TYPES).flatmap(connect_message))
    return draw(near_valid())


# ------------------------------------------------------------------------ checks


def assert_only_fenced(before_groups: dict, shard, req) -> None:
    gid, mid = req.group_id, req.member_id
    new, old = shard.groups[gid], before_groups[gid]
    assert mid not in new.members and new.group_epoch == old.group_epoch + 1
    assert {g: v for g, v in shard.groups.items() if g != gid} == {
        g: v for g, v in before_groups.items() if g != gid
    }


def check_one(shard: GroupCoordinatorShard, req: object) -> object:
    before = state_of(shard)
    result = shard.handle(req)
    resp = result.response
    if not isinstance(req, REQUEST_TYPES):
        assert isinstance(resp, m.ErrorResponse) and resp.error_code == Errors.INVALID_REQUEST
        assert result.records == []
        return resp
    codes = error_codes(resp)
    for code in codes:
        assert code in Errors.__members__.values()
        assert code != Errors.UNKNOWN_SERVER_ERROR, error_messages(resp)
    if isinstance(req, m.ConnectGroupDescribeRequest):
        assert result.records == [] and state_of(shard) == before
    elif codes == [Errors.FENCED_MEMBER_EPOCH] and isinstance(req, m.ConnectGroupHeartbeatRequest):
        assert_only_fenced(before[0], shard, req)
    elif codes not in ([Errors.NONE], [Errors.COMPUTE_ASSIGNMENT]):
        assert result.records == [], result.records
        assert state_of(shard) == before
    for record in result.records:
        assert decode_record(encode_record(record)) == record
    return resp


# ------------------------------------------------------------------------ tests


@FUZZ
@given(requests())
def test_no_connect_request_crashes_the_shard_and_a_refused_one_changes_nothing(req):
    check_one(fresh_shard(), req)


@settings(max_examples=40, deadline=None)
@given(UNRELATED)
def test_an_object_that_is_not_a_request_gets_invalid_request(obj):
    check_one(fresh_shard(), obj)


@FUZZ
@given(requests())
def test_a_malformed_connect_request_is_invalid_request_naming_the_field(req):
    path = malformed_path(req)
    shard = fresh_shard()
    before = state_of(shard)
    result = shard.handle(req)
    if path is None:
        return
    codes = error_codes(result.response)
    assert codes and set(codes) == {Errors.INVALID_REQUEST}
    for message in error_messages(result.response):
        assert f"{path}:" in message
    assert result.records == [] and state_of(shard) == before


def _valid(cls: type) -> object:
    return {
        m.ConnectGroupHeartbeatRequest: m.ConnectGroupHeartbeatRequest(
            SERVER_GROUP, A, 1, connectors_and_tasks=m.ConnectorsAndTasks(["sink"])
        ),
        m.ConnectGroupPrepareAssignmentRequest: m.ConnectGroupPrepareAssignmentRequest(
            CLIENT_GROUP, CA, 1
        ),
        m.ConnectGroupInstallAssignmentRequest: m.ConnectGroupInstallAssignmentRequest(
            CLIENT_GROUP, CA, 1, 1, members=[m.ConnectInstallAssignmentMember(CA)]
        ),
        m.ConnectGroupDescribeRequest: m.ConnectGroupDescribeRequest([SERVER_GROUP]),
    }[cls]


_WRONG = [None, 1.5, 7, True, 2**31, b"x", "x" * 40_000, [[1]], {"a": 1}, ("a",),
          m.ConnectorTaskId("sink", 0)]


@pytest.mark.parametrize("cls", REQUEST_TYPES, ids=lambda c: c.__name__)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_one_wrong_typed_field_is_refused_naming_its_path(cls, data):
    req = _valid(cls)
    assert malformed_path(req) is None
    name = data.draw(st.sampled_from([f.name for f in dataclasses.fields(cls)]), label="field")
    wrong = data.draw(
        st.sampled_from(_WRONG).filter(
            lambda v: malformed_path(dataclasses.replace(req, **{name: v})) is not None
        ),
        label="value",
    )
    bad = dataclasses.replace(req, **{name: wrong})
    shard = fresh_shard()
    before = state_of(shard)
    result = shard.handle(bad)
    assert set(error_codes(result.response)) == {Errors.INVALID_REQUEST}
    for message in error_messages(result.response):
        assert f"{cls.__name__}.{name}" in message
    assert result.records == [] and state_of(shard) == before
