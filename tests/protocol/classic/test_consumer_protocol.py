"""Classic consumers' subscription and assignment bytes are Kafka's ConsumerProtocol schemas, so
a Java or librdkafka classic consumer and a Cohort one are read alike (and migrate alike)."""

from __future__ import annotations

import contextlib

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocol.classic.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    answer_version,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

# Bytes Apache Kafka 4.4's coordinator wrote (tests/conformance saw them): a v0 assignment of
# cf-foo partition 2 to a classic member of a consumer group, and an empty one.
KAFKA_V0_ASSIGNMENT = b"\x00\x00\x00\x00\x00\x01\x00\x06cf-foo\x00\x00\x00\x01\x00\x00\x00\x02" \
                      b"\xff\xff\xff\xff"
KAFKA_V0_EMPTY_ASSIGNMENT = b"\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"
# What a v0 classic client subscribes with: topics [cf-foo], no user data.
KAFKA_V0_SUBSCRIPTION = b"\x00\x00\x00\x00\x00\x01\x00\x06cf-foo\xff\xff\xff\xff"


def test_kafkas_v0_bytes_read_and_write_exactly():
    assert decode_subscription(KAFKA_V0_SUBSCRIPTION) == Subscription(["cf-foo"], version=0)
    assert decode_assignment(KAFKA_V0_ASSIGNMENT) == Assignment([("cf-foo", [2])])
    assert encode_assignment(Assignment([("cf-foo", [2])]), version=0) == KAFKA_V0_ASSIGNMENT
    assert encode_assignment(Assignment(), version=0) == KAFKA_V0_EMPTY_ASSIGNMENT
    assert encode_subscription(Subscription(["cf-foo"], version=0)) == KAFKA_V0_SUBSCRIPTION


def test_a_v3_subscription_carries_owned_partitions_generation_and_rack():
    sub = Subscription(["a", "b"], [("a", [0, 2])], 7, "r1", b"user")
    assert decode_subscription(encode_subscription(sub)) == sub


def test_a_member_is_answered_in_its_subscriptions_version():
    protocols = [("range", encode_subscription(Subscription(["t"], version=1)))]
    assert answer_version(protocols, "range") == 1
    assert answer_version(protocols, "other") == 1  # its first protocol's
    assert answer_version([], None) == 3


def test_the_msgpack_form_cohorts_consumers_once_wrote_is_still_read():
    old_sub = msgpack.packb([1, ["t"], [["t", [1]]], 4, None, b""], use_bin_type=True)
    assert decode_subscription(old_sub) == Subscription(["t"], [("t", [1])], 4, None, b"", 3)
    old_assignment = msgpack.packb([1, [["t", [0, 1]]], b"x"], use_bin_type=True)
    assert decode_assignment(old_assignment) == Assignment([("t", [0, 1])], b"x")


@given(st.binary(max_size=64))
def test_any_bytes_decode_or_are_refused_with_a_consumer_protocol_error(data):
    for decode in (decode_subscription, decode_assignment):
        with contextlib.suppress(ConsumerProtocolError):
            decode(data)


def test_truncated_bytes_are_refused():
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(KAFKA_V0_SUBSCRIPTION[:-3])
