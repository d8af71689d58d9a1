"""protocol.api: one table says what each request is, and everything else reads it."""

import dataclasses

import pytest

from protocol import messages as m
from protocol.api import (
    APIS,
    BY_API_KEY,
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
    keys = [a.api_key for a in APIS.values() if a.api_key is not None]
    assert len(keys) == len(set(keys))


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
