"""The upstream's Metadata renamed without decoding its topics (``upstream_metadata``): the
same bytes as decoding it, renaming its brokers (``rewrite_body``) and writing it again, in
every version Cohort relays."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.wire.codec import encode_body
from protocol.wire.upstream import (
    METADATA,
    UpstreamReplyError,
    decode_reply,
    encode_reply,
    rewrite_body,
)
from protocol.wire.upstream_metadata import renamed_metadata

_names = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF), min_size=1, max_size=12)
_brokers = st.lists(st.builds(lambda n, h, p, r: {"node_id": n, "host": h, "port": p, "rack": r},
                              st.integers(0, 5), _names, st.integers(1, 65535),
                              st.none() | _names), max_size=5)
_topics = st.lists(st.builds(
    lambda name, parts, tid: {
        "error_code": 0, "name": name, "topic_id": tid, "is_internal": False,
        "topic_authorized_operations": -2147483648,
        "partitions": [{"error_code": 0, "partition_index": p, "leader_id": p % 3,
                        "leader_epoch": 2, "replica_nodes": [p % 3], "isr_nodes": [p % 3],
                        "offline_replicas": []} for p in range(parts)]},
    _names, st.integers(0, 6), st.none() | st.uuids()), max_size=3)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 12), _brokers, _topics, st.dictionaries(st.integers(0, 5),
       st.tuples(_names, st.integers(1, 65535)), max_size=4))
def test_renaming_the_brokers_alone_writes_what_decoding_and_rewriting_would(
        version, brokers, topics, listeners):
    if version < 10:
        for t in topics:
            t["topic_id"] = None
    body = {"throttle_time": 3, "brokers": brokers, "cluster_id": "up", "controller_id": 1,
            "topics": topics, "cluster_authorized_operations": -2147483648}
    frame = encode_reply(METADATA, version, 77, body)
    extra = [(1000, "127.0.0.1", 9093)]
    fast = b"".join(renamed_metadata(version, frame, listeners.get, extra))
    slow = encode_body(METADATA, version, rewrite_body(
        METADATA, version, decode_reply(METADATA, version, frame), listeners.get, extra))
    assert fast == b"".join(slow.parts)


def test_a_metadata_reply_cut_inside_its_brokers_is_the_upstreams_fault():
    body = {"throttle_time": 0, "cluster_id": "up", "controller_id": 1, "topics": [],
            "brokers": [{"node_id": 1, "host": "up-a", "port": 9092, "rack": None}]}
    frame = encode_reply(METADATA, 12, 1, body)
    with pytest.raises(UpstreamReplyError):
        renamed_metadata(12, frame[:12], {1: ("h", 1)}.get)


def test_topics_are_copied_not_decoded():
    tid = uuid.uuid4()
    body = {"throttle_time": 0, "cluster_id": "up", "controller_id": 1,
            "brokers": [{"node_id": 1, "host": "up-a", "port": 9092, "rack": None}],
            "topics": [{"error_code": 0, "name": "t", "topic_id": tid, "is_internal": False,
                        "topic_authorized_operations": -2147483648, "partitions": []}]}
    frame = encode_reply(METADATA, 12, 1, body)
    head, rest = renamed_metadata(12, frame, {1: ("127.0.0.1", 9101)}.get)
    assert frame.endswith(rest) and tid.bytes in rest
    assert decode_reply(METADATA, 12, frame[:4] + b"\x00" + head + rest)["brokers"] == [
        {"node_id": 1, "host": "127.0.0.1", "port": 9101, "rack": None}]
