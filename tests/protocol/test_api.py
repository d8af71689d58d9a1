"""protocol.api: one table says what each API is, and everything else reads it. (What the wire
derives from it, ApiVersions, the codec and the gateway's dispatch, is tested in
``tests/gateway/test_api_table.py``.)"""

import dataclasses

import pytest

from protocol import messages as m
from protocol.api import (
    APIS,
    BY_API_KEY,
    ROWS,
    Api,
    Versions,
    _check,
    api_of,
    error_response,
    group_ids_of,
    reply_error_codes,
)
from protocol.errors import Errors
from protocol.shard import GroupCoordinatorShard


def test_every_request_the_shard_answers_has_one_row_with_its_reply_type():
    shard = GroupCoordinatorShard()
    for request_type, api in APIS.items():
        required = {
            f.name: None
            for f in dataclasses.fields(request_type)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        reply = shard.handle(request_type(**required)).response  # refused, but typed
        assert type(reply) is api.response, request_type.__name__


def test_kafka_api_keys_are_unique_and_kafkas():
    assert BY_API_KEY[11].request is m.JoinGroupRequest
    assert BY_API_KEY[68].request is m.ConsumerGroupHeartbeatRequest
    assert BY_API_KEY[69].request is m.ConsumerGroupDescribeRequest
    assert BY_API_KEY[42].request is m.DeleteGroupsRequest
    keys = [a.api_key for a in ROWS if a.api_key is not None]
    assert len(keys) == len(set(keys)) == len(BY_API_KEY)


def test_every_row_kafka_clients_speak_names_its_wire_translation_and_cohorts_own_do_not():
    for api in ROWS:
        assert (api.api_key is None) == (api.versions is None), api.name
        if api.request is not None and api.api_key is not None:
            assert callable(api.decode) and callable(api.encode), api.name
        if api.api_key is None:  # seed 000's and seed 004's requests: Kafka never shipped them
            assert api.request is not None and api.decode is None, api.name
    assert BY_API_KEY[3].name == "Metadata" and BY_API_KEY[3].request is None  # gateway-only


@pytest.mark.parametrize(
    "rows",
    [
        (Api("Metadata", 3, None),),  # a key without versions
        (Api("ShareGroupHeartbeat", None, Versions(0, 1)),),  # versions without a key
        (Api("Metadata", 3, Versions(0, 12)), Api("Metadata", 4, Versions(0, 1))),
        (Api("Metadata", 3, Versions(0, 12)), Api("Other", 3, Versions(0, 1))),
        (Api("Backwards", 3, Versions(5, 1)),),
        (Api("JoinGroup", 11, Versions(0, 9), m.JoinGroupRequest, m.JoinGroupResponse),),
    ],
    ids=["key-without-versions", "versions-without-key", "name-twice", "key-twice",
         "empty-range", "wire-row-without-translation"],
)
def test_a_table_that_breaks_an_invariant_is_refused(rows):
    with pytest.raises(AssertionError):
        _check(rows)


@pytest.mark.parametrize(
    ("request_", "ids"),
    [
        (m.JoinGroupRequest(group_id="g", session_timeout_ms=10), ["g"]),
        (m.ConsumerGroupDescribeRequest(group_ids=["a", 3, "b"]), ["a", "b"]),
        (m.DescribeGroupsRequest(groups="not a list"), []),
        (m.DeleteGroupsRequest(groups_names=["x"]), ["x"]),
        (m.ListGroupsRequest(), []),
        (m.OffsetCommitRequest(group_id=None), []),
    ],
)
def test_group_ids_of_names_only_well_formed_ids(request_, ids):
    assert group_ids_of(request_) == ids


def test_an_error_reply_to_a_many_group_request_has_an_entry_per_group():
    reply = error_response(
        m.DeleteGroupsRequest(groups_names=["a", "b"]), Errors.NOT_COORDINATOR, "moved"
    )
    assert [(r.group_id, r.error_code) for r in reply.results] == [
        ("a", Errors.NOT_COORDINATOR),
        ("b", Errors.NOT_COORDINATOR),
    ]


def test_something_that_is_not_a_request_gets_an_error_response():
    assert api_of("hello") is None
    reply = error_response("hello", Errors.INVALID_REQUEST, "what is this")
    assert isinstance(reply, m.ErrorResponse) and reply.error_code == Errors.INVALID_REQUEST


def test_a_per_group_reply_carries_one_error_code_per_group_for_a_retrying_caller():
    loading = error_response(m.DescribeGroupsRequest(groups=["a", "b"]),
                             Errors.COORDINATOR_LOAD_IN_PROGRESS, "loading")
    assert reply_error_codes(loading) == [Errors.COORDINATOR_LOAD_IN_PROGRESS] * 2
    deleted = m.DeleteGroupsResponse(results=[m.DeletableGroupResult(group_id="a")])
    assert reply_error_codes(deleted) == [Errors.NONE]
    assert reply_error_codes(m.OffsetFetchResponse(error_code=Errors.NOT_COORDINATOR)) == [
        Errors.NOT_COORDINATOR]
    assert reply_error_codes(None) == [Errors.NONE]
