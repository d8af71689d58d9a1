"""Invariant 6: bad input gets a clear error code and changes nothing; no request crashes a shard.

A request reaches a partition as Python objects anybody could have built (a Ray client can
send a float for an epoch, a list for a group id, a response for a request). These tests throw
such objects at a shard hosting two live groups, one on a server assignor and one on a
client-side assignor, and check that the shard answers every one, that an error leaves its
state and timers exactly as they were (FENCED_MEMBER_EPOCH excepted: it removes the member by
design), and that whatever it does accept produces records the codec can persist.
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from collections.abc import Callable
from typing import Any, get_args, get_origin

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protocol import messages as m
from protocol import partitions as pm
from protocol.codec import decode_record, encode_record
from protocol.consumer.group import STATES
from protocol.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
)
from protocol.consumer.sessions import MemberSession, RevocationDeadline
from protocol.errors import Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.records import GroupRebalanceHistoryKey
from protocol.shard import CoordinatorResult, GroupCoordinatorShard
from protocol.types import INT_BOUNDS, MAX_STRING_BYTES, MAX_STRING_CHARS

SERVER_GROUP, CLIENT_GROUP = "g", "c"
A, B = "member-a", "member-b"
CA, CB, CC = "client-a", "client-b", "client-c"
REBALANCE_TIMEOUT_MS = 60_000
STICKY = m.Assignor("sticky", 0, 2, 0, 0, b"meta")

REQUEST_TYPES = (
    m.ConsumerGroupHeartbeatRequest,
    m.ConsumerGroupPrepareAssignmentRequest,
    m.ConsumerGroupInstallAssignmentRequest,
    m.ConsumerGroupDescribeRequest,
    m.ListGroupsRequest,
)

FUZZ = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------------ the live shard


def _heartbeat(group_id: str, member_id: str, epoch: int, owned: pm.PartitionMap):
    return m.ConsumerGroupHeartbeatRequest(
        group_id, member_id, epoch, topic_partitions=pm.to_wire(owned)
    )


def _join(shard: GroupCoordinatorShard, group_id: str, member_id: str, **extra) -> None:
    req = m.ConsumerGroupHeartbeatRequest(
        group_id,
        member_id,
        0,
        rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
        subscribed_topic_names=["foo"],
        topic_partitions=[],
        **extra,
    )
    assert shard.handle(req).response.error_code == Errors.NONE


def _settle(shard: GroupCoordinatorShard, group_id: str) -> None:
    """Heartbeat every member as a well-behaved client until the group is stable."""
    group = shard.groups[group_id]
    for _ in range(10):
        for mid in sorted(group.members):
            member = group.members[mid]
            req = _heartbeat(group_id, mid, member.member_epoch, member.assigned_partitions)
            if member.member_epoch == 0:  # not yet given an epoch: a join restates everything
                req.rebalance_timeout_ms = REBALANCE_TIMEOUT_MS
                req.subscribed_topic_names = ["foo"]
            resp = shard.handle(req).response
            assert resp.error_code == Errors.NONE, resp
        if group.state == "stable":
            return
    raise AssertionError(f"group {group_id} did not settle: {group.state}")


def live_shard() -> GroupCoordinatorShard:
    """Group ``g`` (uniform assignor, stable); group ``c`` (client-side ``sticky``, assigning)."""
    shard = GroupCoordinatorShard(metadata=MetadataImage([TopicMetadata("foo-id", "foo", 6)]))
    _join(shard, SERVER_GROUP, A)
    _join(shard, SERVER_GROUP, B)
    _settle(shard, SERVER_GROUP)
    _join(shard, CLIENT_GROUP, CA, client_assignors=[copy.deepcopy(STICKY)])
    _join(shard, CLIENT_GROUP, CB, client_assignors=[copy.deepcopy(STICKY)])
    group = shard.groups[CLIENT_GROUP]
    chosen = group.assignor(shard.config).chosen_member_id
    install = m.ConsumerGroupInstallAssignmentRequest(
        CLIENT_GROUP,
        chosen,
        group.members[chosen].member_epoch,
        group.group_epoch,
        members=[
            m.InstallAssignmentMember(
                CA, topic_partitions=[m.TopicPartitions("foo-id", [0, 1, 2])]
            ),
            m.InstallAssignmentMember(
                CB, topic_partitions=[m.TopicPartitions("foo-id", [3, 4, 5])]
            ),
        ],
    )
    assert shard.handle(install).response.error_code == Errors.NONE
    _settle(shard, CLIENT_GROUP)
    # A third member leaves group c waiting for its chosen member to compute and install.
    _join(shard, CLIENT_GROUP, CC, client_assignors=[copy.deepcopy(STICKY)])
    return shard


_TEMPLATE = live_shard()
_EPOCHS = sorted(
    {mem.member_epoch for g in _TEMPLATE.groups.values() for mem in g.members.values()}
    | {g.group_epoch for g in _TEMPLATE.groups.values()}
)
_CHOSEN = _TEMPLATE.groups[CLIENT_GROUP].assignor(_TEMPLATE.config).chosen_member_id


def state_of(shard: GroupCoordinatorShard) -> tuple:
    """Everything a request could change: groups, what describe shows, timers."""
    groups = copy.deepcopy(shard.groups)
    described = shard.handle(m.ConsumerGroupDescribeRequest(sorted(shard.groups))).response
    timers = {
        (key, shard.timers.deadline(key))
        for gid, group in shard.groups.items()
        for mid in group.members
        for key in (MemberSession(gid, mid), RevocationDeadline(gid, mid))
    }
    return groups, described, timers, len(shard.timers), shard.next_deadline_ms(), shard.now_ms


def error_codes(response: object) -> list[int]:
    if isinstance(response, m.ConsumerGroupDescribeResponse):
        return [g.error_code for g in response.groups]
    return [response.error_code]  # type: ignore[attr-defined]


def error_messages(response: object) -> list[str]:
    if isinstance(response, m.ConsumerGroupDescribeResponse):
        return [g.error_message or "" for g in response.groups]
    return [getattr(response, "error_message", None) or ""]


# ---------------------------------------------------------------------- an oracle of types


def _utf8(text: str) -> bool:
    """Only strings UTF-8 can carry reach a record (a lone surrogate cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_UNION_TYPES = (type(int | None),)  # types.UnionType, as ``X | None`` annotations evaluate


def malformed_path(obj: object) -> str | None:
    """The first field (in declaration order) whose value does not fit its annotation.

    Written from the annotations alone, independently of ``protocol.validation``, so the two
    can be compared: the shard must refuse exactly these requests, naming this path.
    """
    return _first_bad(obj, type(obj), type(obj).__name__)


def _first_bad(value: Any, hint: Any, path: str) -> str | None:
    origin = get_origin(hint)
    if origin is typing.Annotated:
        lo, hi = INT_BOUNDS[get_args(hint)[1]]
        ok = type(value) is int and lo <= value <= hi
        return None if ok else path
    if origin in (typing.Union, *_UNION_TYPES):
        (inner,) = [a for a in get_args(hint) if a is not type(None)]
        return None if value is None else _first_bad(value, inner, path)
    if origin in (list, tuple):  # list[X], or tuple[X, ...]: each entry checked, by index
        if type(value) is not origin:
            return path
        item = get_args(hint)[0]
        for i, v in enumerate(value):
            if (bad := _first_bad(v, item, f"{path}[{i}]")) is not None:
                return bad
        return None
    if dataclasses.is_dataclass(hint):
        if type(value) is not hint:
            return path
        hints = typing.get_type_hints(hint, include_extras=True)
        for f in dataclasses.fields(hint):
            bad = _first_bad(getattr(value, f.name), hints[f.name], f"{path}.{f.name}")
            if bad is not None:
                return bad
        return None
    if hint is str:
        ok = type(value) is str and _utf8(value) and len(value.encode()) <= MAX_STRING_BYTES
        return None if ok else path
    return None if type(value) is hint else path  # bool, int, bytes


# ------------------------------------------------------------------------ strategies


def _fresh(cls: type, *args: Any) -> st.SearchStrategy[Any]:
    """A new object per draw, so no two requests share a mutable argument."""
    return st.builds(copy.deepcopy, st.just(cls(*args)))


GARBAGE = st.one_of(
    st.none(),
    st.booleans(),
    st.floats(),
    st.sampled_from([2**31, -(2**31) - 1, 2**63, -(2**63) - 1, 2**100, 128, 2**15]),
    st.integers(-5, -1),
    st.text(max_size=4),
    st.just("x" * (MAX_STRING_CHARS + 1)),
    st.binary(max_size=4),
    st.builds(bytearray, st.binary(max_size=4)),
    st.just([[1, 2], ["a"]]),
    st.lists(st.none() | st.integers() | st.text(max_size=2), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.tuples(st.text(max_size=2)),
    st.sampled_from(["foo-id", "g", A]).map(lambda s: [s]),
    _fresh(m.ListGroupsRequest),
    _fresh(m.TopicPartitions, "foo-id", [0]),
    _fresh(m.Assignor, "sticky"),
    _fresh(m.ErrorResponse),
    _fresh(m.ConsumerGroupHeartbeatResponse),
)

# Strings a Python client can send that UTF-8 (and so msgpack) cannot carry.
_SURROGATE = "\ud800"
_IDS = st.sampled_from(["foo-id", "bar-id", "", _SURROGATE])
_INT32 = st.integers(*INT_BOUNDS["int32"])
_EPOCH = st.sampled_from([-3, -2, -1, 0, 1, 2, 3, *_EPOCHS]) | _INT32
_VERSION = st.integers(-2, 4) | st.integers(*INT_BOUNDS["int16"])


def _optional(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | s


# Well-typed values aimed at the live shard, by field name, so that many requests get past
# validation and reach the rules (joins, leaves, fencing, installs...).
POOLS: dict[str, st.SearchStrategy[Any]] = {
    "group_id": st.sampled_from([SERVER_GROUP, CLIENT_GROUP, "", "nope", _SURROGATE])
    | st.text(max_size=4),
    "member_id": st.sampled_from([A, B, CA, CB, CC, "", "ghost", _SURROGATE]) | st.text(max_size=4),
    "member_epoch": _EPOCH,
    "group_epoch": _EPOCH,
    "instance_id": _optional(st.sampled_from(["", "inst-1", _SURROGATE])),
    "rack_id": _optional(st.sampled_from(["", "rack-1", _SURROGATE])),
    "rebalance_timeout_ms": st.sampled_from([-1, 0, 1, REBALANCE_TIMEOUT_MS]) | _INT32,
    "subscribed_topic_names": _optional(
        st.lists(st.sampled_from(["foo", "bar", "", _SURROGATE]), max_size=3)
    ),
    "subscribed_topic_regex": _optional(
        st.sampled_from(["foo.*", ".*", "(", "", "[z-a]", "(" * 40, _SURROGATE])
    ),
    "server_assignor": _optional(st.sampled_from(["uniform", "range", "sticky", "", _SURROGATE])),
    "client_id": st.sampled_from(["", "client", _SURROGATE]),
    "client_host": st.sampled_from(["", "/10.0.0.1", _SURROGATE]),
    "topic_id": _IDS,
    "partitions": st.lists(st.integers(-2, 8) | _INT32, max_size=4),
    "name": st.sampled_from(["sticky", "other", "", _SURROGATE]),
    "minimum_version": _VERSION,
    "maximum_version": _VERSION,
    "metadata_version": _VERSION,
    "group_ids": st.lists(st.sampled_from([SERVER_GROUP, CLIENT_GROUP, "nope", ""]), max_size=3),
    "states_filter": st.lists(st.sampled_from([*STATES, "Stable", "bogus"]), max_size=2),
    "types_filter": st.lists(st.sampled_from(["consumer", "classic", "x"]), max_size=2),
}


def _typed(hint: Any, name: str) -> st.SearchStrategy[Any]:
    """A value that fits ``hint`` (drawn from the pools when the field has one)."""
    if name in POOLS:
        return POOLS[name]
    origin = get_origin(hint)
    if origin is typing.Annotated:
        return st.integers(-2, 3) | st.integers(*INT_BOUNDS[get_args(hint)[1]])
    if origin in (typing.Union, *_UNION_TYPES):
        (inner,) = [a for a in get_args(hint) if a is not type(None)]
        return _optional(_typed(inner, name))
    if origin is list:
        return st.lists(_typed(get_args(hint)[0], name), max_size=3)
    if dataclasses.is_dataclass(hint):
        return message_of(hint)
    return {bool: st.booleans(), int: st.integers(), str: st.text(max_size=4)}.get(
        hint, st.binary(max_size=8)
    )


@st.composite
def message_of(draw: st.DrawFn, cls: type) -> Any:
    """An instance of ``cls``: well-typed fields, but sometimes one or two are garbage."""
    hints = typing.get_type_hints(cls, include_extras=True)
    names = [f.name for f in dataclasses.fields(cls)]
    spoiled: set[str] = set()
    if draw(st.booleans()):
        spoiled = draw(st.sets(st.sampled_from(names), min_size=1, max_size=2))
    return cls(
        **{name: draw(GARBAGE if name in spoiled else _typed(hints[name], name)) for name in names}
    )


UNRELATED = st.one_of(
    st.none(),
    st.integers(),
    st.text(max_size=5),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.lists(st.integers(), max_size=2),
    _fresh(m.ConsumerGroupHeartbeatResponse),
    _fresh(m.ListGroupsResponse),
    _fresh(m.TopicPartitions, "foo-id", [0]),
    _fresh(object),
)


def _near_valid_bases() -> list[Callable[[], object]]:
    """Requests the live shard accepts as they are: a join, heartbeats, a leave, the rest."""
    t = _TEMPLATE

    def beat(gid: str, mid: str) -> Callable[[], object]:
        mem = t.groups[gid].members[mid]
        return lambda: _heartbeat(gid, mid, mem.member_epoch, mem.assigned_partitions)

    def join(gid: str, **extra: Any) -> Callable[[], object]:
        return lambda: m.ConsumerGroupHeartbeatRequest(
            gid,
            "member-new",
            0,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            subscribed_topic_names=["foo"],
            topic_partitions=[],
            **copy.deepcopy(extra),
        )

    group_c = t.groups[CLIENT_GROUP]
    chosen_epoch = group_c.members[_CHOSEN].member_epoch
    return [
        join(SERVER_GROUP),
        join(CLIENT_GROUP, client_assignors=[STICKY]),
        join("new-group", instance_id="inst-1", rack_id="rack-1"),
        beat(SERVER_GROUP, A),
        beat(CLIENT_GROUP, CB),
        lambda: m.ConsumerGroupHeartbeatRequest(SERVER_GROUP, B, -1),
        lambda: m.ConsumerGroupPrepareAssignmentRequest(CLIENT_GROUP, _CHOSEN, chosen_epoch),
        lambda: m.ConsumerGroupInstallAssignmentRequest(
            CLIENT_GROUP,
            _CHOSEN,
            chosen_epoch,
            group_c.group_epoch,
            members=[
                m.InstallAssignmentMember(CA, topic_partitions=[m.TopicPartitions("foo-id", [0])])
            ],
        ),
        lambda: m.ConsumerGroupDescribeRequest([SERVER_GROUP, CLIENT_GROUP]),
        lambda: m.ListGroupsRequest(["stable"]),
    ]


_NEAR_VALID = _near_valid_bases()


@st.composite
def near_valid(draw: st.DrawFn) -> object:
    """An accepted request with up to three fields redrawn, well-typed or garbage."""
    req = draw(st.sampled_from(_NEAR_VALID))()
    hints = typing.get_type_hints(type(req), include_extras=True)
    names = [f.name for f in dataclasses.fields(req)]
    for name in draw(st.sets(st.sampled_from(names), max_size=3)):
        garbage = draw(st.integers(0, 3), label="garbage?") == 0
        setattr(req, name, draw(GARBAGE if garbage else _typed(hints[name], name)))
    return req


@st.composite
def requests(draw: st.DrawFn) -> object:
    """Two in three start from an accepted request, so the rules behind validation get
    exercised too (joins, leaves, fencing, installs), not only the type checks."""
    if draw(st.integers(0, 2), label="from scratch?") == 0:
        return draw(st.sampled_from(REQUEST_TYPES).flatmap(message_of))
    return draw(near_valid())


# ------------------------------------------------------------------------- assertions


def assert_unchanged(before: tuple, shard: GroupCoordinatorShard, result: CoordinatorResult):
    assert result.records == [], result.records
    assert state_of(shard) == before


def assert_only_fenced(before_groups: dict, shard, req, result: CoordinatorResult) -> None:
    """FENCED_MEMBER_EPOCH removes that member (tombstones) and bumps its group's epoch."""
    gid, mid = req.group_id, req.member_id
    tombstones = [r.key for r in result.records if r.is_tombstone]
    assert sorted(tombstones, key=repr) == sorted(
        [
            ConsumerGroupCurrentMemberAssignmentKey(gid, mid),
            ConsumerGroupTargetAssignmentMemberKey(gid, mid),
            ConsumerGroupMemberMetadataKey(gid, mid),
        ],
        key=repr,
    )
    group_level = (
        ConsumerGroupMetadataKey,
        ConsumerGroupPartitionMetadataKey,
        ConsumerGroupTargetAssignmentMetadataKey,
        ConsumerGroupTargetAssignmentMemberKey,  # the remaining members' recomputed targets
        GroupRebalanceHistoryKey,  # why the epoch was bumped
    )
    for r in result.records:
        assert r.key.group_id == gid
        if not r.is_tombstone:
            assert isinstance(r.key, group_level), r
            assert getattr(r.key, "member_id", None) != mid
    old = before_groups[gid]
    epochs = [r.value.epoch for r in result.records if isinstance(r.key, ConsumerGroupMetadataKey)]
    assert epochs == [old.group_epoch + 1]
    new = shard.groups[gid]
    assert mid not in new.members
    assert {k: v for k, v in old.members.items() if k != mid} == new.members
    assert {g: v for g, v in shard.groups.items() if g != gid} == {
        g: v for g, v in before_groups.items() if g != gid
    }


def assert_persistable(result: CoordinatorResult) -> None:
    """The runtime must write every record before replying: each must survive the codec."""
    for record in result.records:
        assert decode_record(encode_record(record)) == record


def check_one(shard: GroupCoordinatorShard, req: object) -> object:
    """Send ``req``; check invariant 6 on the reply, the records and the shard's state."""
    before = state_of(shard)
    result = shard.handle(req)  # must not raise
    resp = result.response
    if not isinstance(req, REQUEST_TYPES):
        assert isinstance(resp, m.ErrorResponse)
        assert resp.error_code == Errors.INVALID_REQUEST
        assert type(req).__name__ in (resp.error_message or "")
        assert_unchanged(before, shard, result)
        return resp
    codes = error_codes(resp)
    for code in codes:
        assert type(code) is Errors or type(code) is int
        assert code in Errors.__members__.values()
        assert code != Errors.UNKNOWN_SERVER_ERROR, error_messages(resp)
    if isinstance(req, (m.ConsumerGroupDescribeRequest, m.ListGroupsRequest)):
        assert_unchanged(before, shard, result)  # read-only, whatever the answer
    elif codes == [Errors.FENCED_MEMBER_EPOCH]:
        assert_only_fenced(before[0], shard, req, result)
    elif codes != [Errors.NONE]:
        assert_unchanged(before, shard, result)
    assert_persistable(result)
    return resp


# ------------------------------------------------------------------------------ fuzz


@FUZZ
@given(requests())
def test_no_request_crashes_the_shard_and_a_refused_one_changes_nothing(req):
    check_one(live_shard(), req)


@settings(max_examples=60, deadline=None)
@given(UNRELATED)
def test_an_object_that_is_not_a_request_gets_invalid_request(obj):
    check_one(live_shard(), obj)


@FUZZ
@given(requests())
def test_a_malformed_request_is_refused_with_invalid_request_naming_the_field(req):
    path = malformed_path(req)
    shard = live_shard()
    before = state_of(shard)
    result = shard.handle(req)
    if path is None:
        return
    codes = error_codes(result.response)
    assert codes, f"{path} is malformed but the reply carries no error code at all"
    assert set(codes) == {Errors.INVALID_REQUEST}
    if not isinstance(req, m.ListGroupsRequest):  # Kafka's ListGroups reply has no message
        for message in error_messages(result.response):
            assert f"{path}:" in message
    assert_unchanged(before, shard, result)


@settings(max_examples=40, deadline=None)
@given(st.lists(requests() | UNRELATED, min_size=2, max_size=5))
def test_a_batch_of_fuzzed_requests_gets_one_reply_each(batch):
    shard = live_shard()
    result = shard.handle_batch(batch)
    assert [req for req, _ in result.replies] == batch
    codes: list[int] = []
    for req, resp in result.replies:
        if not isinstance(req, REQUEST_TYPES):
            assert isinstance(resp, m.ErrorResponse)
            assert resp.error_code == Errors.INVALID_REQUEST
            continue
        assert resp is not None
        assert Errors.UNKNOWN_SERVER_ERROR not in error_codes(resp)
        if not isinstance(req, (m.ConsumerGroupDescribeRequest, m.ListGroupsRequest)):
            codes += error_codes(resp)
    if Errors.NONE not in codes and Errors.FENCED_MEMBER_EPOCH not in codes:
        assert result.records == []  # a turn of refusals writes nothing
    assert_persistable(result)


@pytest.mark.parametrize(
    ("group_id", "member_id", "delta"),
    [(SERVER_GROUP, A, 1), (SERVER_GROUP, B, -1), (CLIENT_GROUP, CA, 5)],
)
def test_a_heartbeat_with_a_wrong_epoch_fences_that_member_and_nothing_else(
    group_id, member_id, delta
):
    shard = live_shard()
    member = shard.groups[group_id].members[member_id]
    req = _heartbeat(group_id, member_id, member.member_epoch + delta, member.assigned_partitions)
    resp = check_one(shard, req)
    assert resp.error_code == Errors.FENCED_MEMBER_EPOCH
    assert member_id not in shard.groups[group_id].members


# ------------------------------------------------------------- one wrong field at a time


def _valid(cls: type) -> object:
    """A well-typed request of each kind, aimed at the live shard."""
    return {
        m.ConsumerGroupHeartbeatRequest: m.ConsumerGroupHeartbeatRequest(
            SERVER_GROUP, A, 1, topic_partitions=[m.TopicPartitions("foo-id", [0])]
        ),
        m.ConsumerGroupPrepareAssignmentRequest: m.ConsumerGroupPrepareAssignmentRequest(
            CLIENT_GROUP, _CHOSEN, 1
        ),
        m.ConsumerGroupInstallAssignmentRequest: m.ConsumerGroupInstallAssignmentRequest(
            CLIENT_GROUP, _CHOSEN, 1, 1, members=[m.InstallAssignmentMember(CA)]
        ),
        m.ConsumerGroupDescribeRequest: m.ConsumerGroupDescribeRequest([SERVER_GROUP]),
        m.ListGroupsRequest: m.ListGroupsRequest(["stable"], ["consumer"]),
    }[cls]


# Each is wrong for some field of every request; the test keeps those wrong for its field.
_WRONG = [
    None,
    1.5,
    7,
    True,
    2**31,
    -(2**63) - 1,
    b"x",
    bytearray(b"x"),
    "x" * (MAX_STRING_CHARS + 1),
    [[1]],
    {"a": 1},
    ("a",),
    m.TopicPartitions("foo-id", [0]),
]


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
    path = f"{cls.__name__}.{name}"
    assert (malformed_path(bad) or "").startswith(path)
    shard = live_shard()
    before = state_of(shard)
    result = shard.handle(bad)
    codes = error_codes(result.response)
    assert codes and set(codes) == {Errors.INVALID_REQUEST}, result.response
    if cls is not m.ListGroupsRequest:
        for message in error_messages(result.response):
            assert path in message, message
    assert_unchanged(before, shard, result)


@pytest.mark.parametrize(
    ("req", "path"),
    [
        (
            m.ConsumerGroupHeartbeatRequest(
                SERVER_GROUP, A, 1, topic_partitions=[m.TopicPartitions("foo-id", ["0"])]
            ),
            "ConsumerGroupHeartbeatRequest.topic_partitions[0].partitions[0]",
        ),
        (
            m.ConsumerGroupHeartbeatRequest(
                SERVER_GROUP, A, 1, client_assignors=[m.Assignor("x"), m.Assignor("y", 2**15)]
            ),
            "ConsumerGroupHeartbeatRequest.client_assignors[1].minimum_version",
        ),
        (
            m.ConsumerGroupHeartbeatRequest(SERVER_GROUP, A, 1, subscribed_topic_names=["foo", 1]),
            "ConsumerGroupHeartbeatRequest.subscribed_topic_names[1]",
        ),
        (
            m.ConsumerGroupHeartbeatRequest(
                SERVER_GROUP, A, 1, topic_partitions=[m.Assignor("foo-id")]
            ),
            "ConsumerGroupHeartbeatRequest.topic_partitions[0]",
        ),
        (
            m.ConsumerGroupInstallAssignmentRequest(
                CLIENT_GROUP, CA, 1, 1, members=[m.InstallAssignmentMember(CA, error=128)]
            ),
            "ConsumerGroupInstallAssignmentRequest.members[0].error",
        ),
        (
            m.ConsumerGroupInstallAssignmentRequest(
                CLIENT_GROUP, CA, 1, 1, members=[m.InstallAssignmentMember(CA, metadata_bytes="x")]
            ),
            "ConsumerGroupInstallAssignmentRequest.members[0].metadata_bytes",
        ),
        (
            m.ConsumerGroupDescribeRequest([SERVER_GROUP], include_authorized_operations=1),
            "ConsumerGroupDescribeRequest.include_authorized_operations",
        ),
    ],
    ids=["partition", "int16-range", "topic-name", "struct-class", "int8-range", "bytes", "bool"],
)
def test_a_wrong_nested_field_is_named_by_its_full_path(req, path):
    assert malformed_path(req) == path
    shard = live_shard()
    before = state_of(shard)
    result = shard.handle(req)
    codes = error_codes(result.response)
    assert codes and set(codes) == {Errors.INVALID_REQUEST}, result.response
    for message in error_messages(result.response):
        assert path in message
    assert_unchanged(before, shard, result)


# ------------------------------------------------------------------ the validation rules


def _member_a(**changes: Any) -> Callable[[GroupCoordinatorShard], object]:
    """A heartbeat from live member A, with ``changes`` applied; valid until changed."""

    def make(shard: GroupCoordinatorShard) -> object:
        member = shard.groups[SERVER_GROUP].members[A]
        req = _heartbeat(SERVER_GROUP, A, member.member_epoch, member.assigned_partitions)
        return dataclasses.replace(req, **changes)

    return make


def _new_member(**changes: Any) -> Callable[[GroupCoordinatorShard], object]:
    """A first heartbeat of a new member of group ``g``; valid until changed."""

    def make(shard: GroupCoordinatorShard) -> object:
        req = m.ConsumerGroupHeartbeatRequest(
            SERVER_GROUP,
            "member-new",
            0,
            rebalance_timeout_ms=REBALANCE_TIMEOUT_MS,
            subscribed_topic_names=["foo"],
            topic_partitions=[],
        )
        return dataclasses.replace(req, **changes)

    return make


def _chosen(cls: type, **changes: Any) -> Callable[[GroupCoordinatorShard], object]:
    """Prepare/Install from the member chosen to compute group ``c``'s assignment."""

    def make(shard: GroupCoordinatorShard) -> object:
        group = shard.groups[CLIENT_GROUP]
        epoch = group.members[_CHOSEN].member_epoch
        if cls is m.ConsumerGroupPrepareAssignmentRequest:
            req = cls(CLIENT_GROUP, _CHOSEN, epoch)
        else:
            req = cls(CLIENT_GROUP, _CHOSEN, epoch, group.group_epoch)
        return dataclasses.replace(req, **changes)

    return make


def _assignor(**kw: Any) -> m.Assignor:
    return dataclasses.replace(STICKY, **kw)


INVALID = Errors.INVALID_REQUEST
RULES = [
    ("empty-group", _member_a(group_id=""), INVALID, "GroupId can't be empty"),
    ("epoch-below-minus-two", _member_a(member_epoch=-3), INVALID, "MemberEpoch must be >= -2"),
    ("empty-member-id", _member_a(member_id=""), INVALID, "MemberId can't be empty"),
    ("empty-instance-id", _member_a(instance_id=""), INVALID, "InstanceId can't be empty"),
    ("empty-rack-id", _member_a(rack_id=""), INVALID, "RackId can't be empty"),
    (
        "static-leave-without-instance",
        _member_a(member_epoch=-2),
        INVALID,
        "InstanceId can't be null when MemberEpoch is -2",
    ),
    (
        "join-without-rebalance-timeout",
        _new_member(rebalance_timeout_ms=-1),
        INVALID,
        "RebalanceTimeoutMs must be larger than zero in the first heartbeat",
    ),
    (
        "join-without-subscription",
        _new_member(subscribed_topic_names=None),
        INVALID,
        "SubscribedTopicNames or SubscribedTopicRegex must be set in the first heartbeat",
    ),
    (
        "join-owning-partitions",
        _new_member(topic_partitions=[m.TopicPartitions("foo-id", [0])]),
        INVALID,
        "TopicPartitions must be empty when (re-)joining",
    ),
    (
        "join-with-null-owned-partitions",
        _new_member(topic_partitions=None),
        INVALID,
        "TopicPartitions must be empty when (re-)joining",
    ),
    (
        "names-and-regex",
        _member_a(subscribed_topic_names=["foo"], subscribed_topic_regex="foo.*"),
        INVALID,
        "SubscribedTopicNames and SubscribedTopicRegex cannot be used together",
    ),
    (
        "bad-regex",
        _member_a(subscribed_topic_regex="(foo"),
        INVALID,
        "SubscribedTopicRegex must be a valid regular expression",
    ),
    (
        "server-and-client-assignors",
        _member_a(server_assignor="uniform", client_assignors=[_assignor()]),
        INVALID,
        "ServerAssignor and ClientAssignors cannot be used together",
    ),
    (
        "assignor-without-name",
        _member_a(client_assignors=[_assignor(name="")]),
        INVALID,
        "Assignor.Name must be non-empty",
    ),
    (
        "assignor-twice",
        _member_a(client_assignors=[_assignor(), _assignor()]),
        INVALID,
        "Assignor 'sticky' is listed twice",
    ),
    (
        "assignor-minimum-version",
        _member_a(client_assignors=[_assignor(minimum_version=-2)]),
        INVALID,
        "Assignor.MinimumVersion must be >= -1",
    ),
    (
        "assignor-maximum-negative",
        _member_a(client_assignors=[_assignor(minimum_version=-1, maximum_version=-1)]),
        INVALID,
        "Assignor.MaximumVersion must be >= 0 and >= Assignor.MinimumVersion",
    ),
    (
        "assignor-maximum-below-minimum",
        _member_a(client_assignors=[_assignor(minimum_version=3, maximum_version=2)]),
        INVALID,
        "Assignor.MaximumVersion must be >= 0 and >= Assignor.MinimumVersion",
    ),
    (
        "assignor-version-outside-range",
        _member_a(client_assignors=[_assignor(minimum_version=1, maximum_version=2)]),
        INVALID,
        "Assignor.Version must be >= Assignor.MinimumVersion and <= Assignor.MaximumVersion",
    ),
    (
        "unknown-server-assignor",
        _member_a(server_assignor="sticky"),
        Errors.UNSUPPORTED_ASSIGNOR,
        "ServerAssignor 'sticky' is not supported; supported: uniform, range",
    ),
    (
        "unknown-server-assignor-on-join",
        _new_member(server_assignor="round-robin"),
        Errors.UNSUPPORTED_ASSIGNOR,
        "ServerAssignor 'round-robin' is not supported",
    ),
    (
        "empty-topic-id",
        _member_a(topic_partitions=[m.TopicPartitions("", [0])]),
        INVALID,
        "TopicPartitions.TopicId can't be empty",
    ),
    (
        "prepare-empty-group",
        _chosen(m.ConsumerGroupPrepareAssignmentRequest, group_id=""),
        INVALID,
        "GroupId can't be empty",
    ),
    (
        "prepare-empty-member",
        _chosen(m.ConsumerGroupPrepareAssignmentRequest, member_id=""),
        INVALID,
        "MemberId can't be empty",
    ),
    (
        "prepare-negative-epoch",
        _chosen(m.ConsumerGroupPrepareAssignmentRequest, member_epoch=-1),
        INVALID,
        "MemberEpoch must be >= 0",
    ),
    (
        "install-empty-group",
        _chosen(m.ConsumerGroupInstallAssignmentRequest, group_id=""),
        INVALID,
        "GroupId can't be empty",
    ),
    (
        "install-empty-member",
        _chosen(m.ConsumerGroupInstallAssignmentRequest, member_id=""),
        INVALID,
        "MemberId can't be empty",
    ),
    (
        "install-negative-epoch",
        _chosen(m.ConsumerGroupInstallAssignmentRequest, member_epoch=-1),
        INVALID,
        "MemberEpoch must be >= 0",
    ),
]


def test_the_rule_table_starts_from_requests_the_shard_accepts():
    for make in (_member_a(), _new_member(), _chosen(m.ConsumerGroupPrepareAssignmentRequest)):
        shard = live_shard()
        assert error_codes(shard.handle(make(shard)).response) == [Errors.NONE]


@pytest.mark.parametrize(
    ("make", "code", "fragment"), [r[1:] for r in RULES], ids=[r[0] for r in RULES]
)
def test_each_validation_rule_refuses_with_its_code_and_message_and_changes_nothing(
    make, code, fragment
):
    shard = live_shard()
    req = make(shard)
    assert malformed_path(req) is None, "the rule is about values, not types"
    before = state_of(shard)
    result = shard.handle(req)
    assert error_codes(result.response) == [code], result.response
    if fragment is not None:
        assert fragment in result.response.error_message
    assert_unchanged(before, shard, result)


# ------------------------------------------------------------------- specific findings


def test_a_heartbeat_with_an_unhashable_group_id_is_refused_not_crashed():
    shard = live_shard()
    before = state_of(shard)
    result = shard.handle(m.ConsumerGroupHeartbeatRequest(group_id=[SERVER_GROUP], member_id=A))
    assert result.response.error_code == Errors.INVALID_REQUEST
    assert "ConsumerGroupHeartbeatRequest.group_id" in result.response.error_message
    assert_unchanged(before, shard, result)


@pytest.mark.parametrize(
    "req",
    [
        m.ConsumerGroupDescribeRequest(group_ids=None),
        m.ConsumerGroupDescribeRequest(group_ids=SERVER_GROUP),
        m.ConsumerGroupDescribeRequest(group_ids=[1, 2]),
        m.ConsumerGroupDescribeRequest(group_ids=[], include_authorized_operations="yes"),
    ],
    ids=["none", "str", "ints", "bad-flag"],
)
def test_a_malformed_describe_reply_carries_an_error_code(req):
    shard = live_shard()
    result = shard.handle(req)
    assert Errors.INVALID_REQUEST in error_codes(result.response), result.response


@pytest.mark.parametrize(
    "changes",
    [
        {"member_id": "a\udfffb"},
        {"client_id": _SURROGATE},
        {"rack_id": _SURROGATE},
        {"instance_id": _SURROGATE},
        {"subscribed_topic_names": ["foo", _SURROGATE]},
        {"subscribed_topic_names": None, "subscribed_topic_regex": _SURROGATE},
        {"server_assignor": None, "client_assignors": [_assignor(name=_SURROGATE)]},
    ],
    ids=lambda c: next(iter(c)) if len(c) == 1 else list(c)[-1],
)
def test_a_string_utf8_cannot_carry_is_refused_before_it_reaches_a_record(changes):
    shard = live_shard()
    before = state_of(shard)
    result = shard.handle(_new_member(**changes)(shard))
    assert result.response.error_code == Errors.INVALID_REQUEST, result.response
    assert_unchanged(before, shard, result)


def test_an_installed_assignment_with_a_negative_partition_is_refused():
    shard = live_shard()
    group = shard.groups[CLIENT_GROUP]
    assert group.group_epoch > group.assignment_epoch, "a computation is due"
    chosen = group.assignor(shard.config).chosen_member_id
    before = state_of(shard)
    req = m.ConsumerGroupInstallAssignmentRequest(
        CLIENT_GROUP,
        chosen,
        group.members[chosen].member_epoch,
        group.group_epoch,
        members=[
            m.InstallAssignmentMember(CA, topic_partitions=[m.TopicPartitions("foo-id", [-1])])
        ],
    )
    result = shard.handle(req)
    assert result.response.error_code in (Errors.INVALID_ASSIGNMENT, Errors.INVALID_REQUEST)
    assert_unchanged(before, shard, result)


def test_a_static_leave_naming_an_instance_the_group_does_not_know_is_refused():
    # Kafka (consumerGroupStaticMemberGroupLeave): no static member with that instance id ->
    # UNKNOWN_MEMBER_ID; here a dynamic member parks itself at epoch -2 keeping its partitions.
    shard = live_shard()
    before = state_of(shard)
    req = m.ConsumerGroupHeartbeatRequest(SERVER_GROUP, A, -2, instance_id="never-joined")
    result = shard.handle(req)
    assert result.response.error_code == Errors.UNKNOWN_MEMBER_ID, result.response
    assert_unchanged(before, shard, result)
