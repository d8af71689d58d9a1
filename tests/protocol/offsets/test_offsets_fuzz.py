"""Invariant 6 for the offsets requests: any OffsetCommit, OffsetFetch, OffsetDelete or
DeleteGroups, well-typed or not, is answered; a malformed one is INVALID_REQUEST; a refused
one writes nothing; what is accepted can be persisted and replays to the same state.

Requests come from the generic strategies of ``test_request_fuzz`` (every field drawn from its
annotation, some replaced by garbage) and from requests the shard accepts with up to two
fields spoiled, aimed at a live shard: a stable KIP-848 group ``g`` with committed offsets, an
assigning group ``c`` and a simple group ``s``.
"""

from __future__ import annotations

import copy
import dataclasses
import typing
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import messages as m
from protocol.errors import Errors
from protocol.shard import GroupCoordinatorShard
from tests.protocol.offsets.test_offsets import commit_request, partition_errors
from tests.protocol.test_request_fuzz import (
    GARBAGE,
    SERVER_GROUP,
    A,
    _typed,
    assert_persistable,
    live_shard,
    malformed_path,
    message_of,
)

SIMPLE_GROUP = "s"
OFFSET_TYPES = (
    m.OffsetCommitRequest,
    m.OffsetFetchRequest,
    m.OffsetDeleteRequest,
    m.DeleteGroupsRequest,
)


def _member_commit(shard: GroupCoordinatorShard, offset: int = 7) -> m.OffsetCommitRequest:
    member = shard.groups[SERVER_GROUP].members[A]
    owned = member.assigned_partitions["foo-id"]
    return commit_request(
        {("foo", p): offset for p in owned},
        group=SERVER_GROUP,
        epoch=member.member_epoch,
        member=A,
    )


def offsets_shard() -> GroupCoordinatorShard:
    shard = live_shard()
    assert shard.handle(_member_commit(shard, 5)).response.error_code == Errors.NONE
    res = shard.handle(commit_request({("foo", 0): 1, ("foo", 5): 2}, group=SIMPLE_GROUP))
    assert set(partition_errors(res.response).values()) == {Errors.NONE}
    return shard


_TEMPLATE = offsets_shard()
_EPOCH_A = _TEMPLATE.groups[SERVER_GROUP].members[A].member_epoch


def _bases() -> list[Callable[[], object]]:
    """Requests the template shard accepts as they are."""
    topics = [m.OffsetFetchRequestTopic("foo", [0, 1, 9])]
    return [
        lambda: _member_commit(_TEMPLATE),
        lambda: commit_request({("foo", 1): 3, ("foo", 9): 3}, group=SIMPLE_GROUP, metadata="x"),
        lambda: commit_request({("foo", 0): 4}, group="new", retention_ms=1_000),
        lambda: m.OffsetFetchRequest(SERVER_GROUP),
        lambda: m.OffsetFetchRequest(SERVER_GROUP, A, _EPOCH_A, copy.deepcopy(topics)),
        lambda: m.OffsetFetchRequest(SIMPLE_GROUP, topics=copy.deepcopy(topics)),
        lambda: m.OffsetDeleteRequest(
            SIMPLE_GROUP, [m.OffsetDeleteRequestTopic("foo", [m.OffsetDeleteRequestPartition(0)])]
        ),
        lambda: m.DeleteGroupsRequest([SIMPLE_GROUP, SERVER_GROUP, "nope"]),
    ]


_BASES = _bases()


@st.composite
def near_valid(draw: st.DrawFn) -> object:
    """An accepted request with up to two fields redrawn, well-typed or garbage."""
    req = draw(st.sampled_from(_BASES))()
    hints = typing.get_type_hints(type(req), include_extras=True)
    names = [f.name for f in dataclasses.fields(req)]
    for name in draw(st.sets(st.sampled_from(names), max_size=2)):
        garbage = draw(st.booleans())
        setattr(req, name, draw(GARBAGE if garbage else _typed(hints[name], name)))
    return req


REQUESTS = st.one_of(st.sampled_from(OFFSET_TYPES).flatmap(message_of), near_valid())


def _codes(resp: object) -> list[int]:
    if isinstance(resp, m.DeleteGroupsResponse):
        return [r.error_code for r in resp.results]
    return [resp.error_code]  # type: ignore[attr-defined]


@settings(max_examples=300, deadline=None)
@given(REQUESTS)
def test_any_offsets_request_is_answered_and_a_refusal_changes_nothing(req):
    shard = copy.deepcopy(_TEMPLATE)
    before_offsets = copy.deepcopy(shard.offsets.offsets)
    before_groups = copy.deepcopy(shard.groups)
    result = shard.handle(req)  # must not raise
    resp = result.response
    assert type(resp).__name__ == type(req).__name__.replace("Request", "Response")
    codes = _codes(resp)
    assert Errors.UNKNOWN_SERVER_ERROR not in codes, resp
    assert codes or req == m.DeleteGroupsRequest([])  # nothing asked, nothing answered
    if malformed_path(req) is not None:
        assert set(codes) == {Errors.INVALID_REQUEST}, (malformed_path(req), resp)
    if Errors.NONE not in codes:  # (DeleteGroups: refused for every group)
        assert result.records == []
        assert shard.offsets.offsets == before_offsets and shard.groups == before_groups
    assert_persistable(result)
    fresh = copy.deepcopy(_TEMPLATE)
    for r in result.records:
        fresh.replay(r)
    assert fresh.offsets.offsets == shard.offsets.offsets
    assert fresh.groups == shard.groups


def test_the_fuzz_bases_are_accepted():
    for base in _BASES:
        resp = copy.deepcopy(_TEMPLATE).handle(base()).response
        assert Errors.NONE in _codes(resp), resp
