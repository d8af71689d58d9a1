"""The limits every request is held to (protocol/types.py), in Kafka's terms: strings of at most
32,767 UTF-8 bytes, arrays of at most a million entries, a million entries in all, and exactly
the types the schema names."""

from __future__ import annotations

import pytest

from protocol import messages as m
from protocol.api import routing_error
from protocol.errors import CoordinatorError, Errors
from protocol.types import MAX_ARRAY_LEN, MAX_REQUEST_ENTRIES, MAX_STRING_BYTES
from protocol.validation import check_types


def refused(request) -> str:
    with pytest.raises(CoordinatorError) as e:
        check_types(request)
    assert e.value.error == Errors.INVALID_REQUEST
    return e.value.message


def commit(group_id: str = "g", topics: int = 1, partitions: int = 1) -> m.OffsetCommitRequest:
    return m.OffsetCommitRequest(group_id=group_id, topics=[
        m.OffsetCommitRequestTopic(f"t{i}", [m.OffsetCommitRequestPartition(p, 1)
                                             for p in range(partitions)])
        for i in range(topics)])


def test_a_string_is_bounded_by_its_utf8_bytes_as_kafka_bounds_it():
    check_types(commit("g" * MAX_STRING_BYTES))
    assert "longer than 32767 bytes" in refused(commit("g" * (MAX_STRING_BYTES + 1)))
    wide = "é" * (MAX_STRING_BYTES // 2 + 1)  # 16,384 characters, 32,768 bytes
    assert len(wide) <= MAX_STRING_BYTES
    assert "OffsetCommitRequest.group_id: longer than 32767 bytes" in refused(commit(wide))


def test_a_request_of_more_entries_in_all_than_the_bound_is_refused():
    per_topic = MAX_REQUEST_ENTRIES // 4
    check_types(commit(topics=3, partitions=per_topic))  # 3 + 750,000 entries
    message = refused(commit(topics=5, partitions=per_topic))  # 5 + 1,250,000
    assert f"more than {MAX_REQUEST_ENTRIES} entries" in message
    assert MAX_ARRAY_LEN <= MAX_REQUEST_ENTRIES


def test_subclasses_of_the_schema_types_are_refused():
    class Str(str):
        pass

    class Int(int):
        pass

    assert "expected a string, got Str" in refused(commit(Str("g")))
    request = commit()
    request.topics[0].partitions[0].committed_offset = Int(3)
    assert "expected an int, got Int" in refused(request)
    request = commit()
    request.generation_id_or_member_epoch = True
    assert "expected an int, got bool" in refused(request)
    request.generation_id_or_member_epoch = Errors.NONE  # Cohort's own enum is an int
    check_types(request)


def test_the_runtime_refuses_before_routing_what_it_should_not_hash():
    assert routing_error(commit("g")) is None
    assert routing_error(m.ListGroupsRequest()) is None
    assert routing_error(None) == "unknown request type NoneType"
    assert routing_error(m.ErrorResponse()) == "unknown request type ErrorResponse"
    assert "group_id: longer than 32767 bytes" in routing_error(commit("g" * (1 << 20)))
    assert "groups: expected a list, got tuple" in routing_error(
        m.DescribeGroupsRequest(groups=("g",)))
    assert "expected a string, got int" in routing_error(m.DescribeGroupsRequest(groups=["g", 7]))
