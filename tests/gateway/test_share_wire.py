"""KIP-932 on the wire, without Ray: the share APIs' translation (``protocol.wire.share``)
through kio and kafka-python, and the gateway's share sessions (``protocol.wire.share_session``).
"""

from __future__ import annotations

import io
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record import MemoryRecords
from kio.schema.errors import ErrorCode as E
from kio.serial import entity_reader, entity_writer

import tests.gateway.kip932 as kip932
from protocol import messages as m
from protocol.metadata import TopicMetadata
from protocol.wire import share, share_admin
from protocol.wire.codec import (
    RequestHeader,
    _skip_tagged_fields,
    decode_request,
    encode_response,
    read_header,
)
from protocol.wire.codec import request_schema as load_request_schema
from protocol.wire.codec import response_schema as load_response_schema
from protocol.wire.entities import build, plain
from protocol.wire.ids import topic_uuid
from protocol.wire.share_session import MAX_EPOCH, ShareSessions, next_epoch
from protocol.wire.stream import SyntheticStream
from protocol.wire.topics import TopicIndex
from tests.gateway.schema_strategies import plain_values

SHARE_CASES = [(76, 1), (77, 1), (78, 1), (78, 2), (79, 1), (79, 2)]
KAFKA_PYTHON = {
    (76, "request"): kip932.ShareGroupHeartbeatRequest,
    (76, "response"): kip932.ShareGroupHeartbeatResponse,
    (77, "request"): kip932.ShareGroupDescribeRequest,
    (77, "response"): kip932.ShareGroupDescribeResponse,
    (78, "request"): kip932.ShareFetchRequest,
    (78, "response"): kip932.ShareFetchResponse,
    (79, "request"): kip932.ShareAcknowledgeRequest,
    (79, "response"): kip932.ShareAcknowledgeResponse,
}
TOPIC = TopicMetadata("Zm9vLXRvcGljLWlkLTAwMQ", "orders", 3)
INDEX = TopicIndex([TOPIC])
STREAM = SyntheticStream(anchor_ms=0, records_per_s=100.0, batch_interval_ms=100)


def _kio_bytes(schema: type, data: dict) -> bytes:
    buf = io.BytesIO()
    entity_writer(schema)(buf, build(schema, data))
    return buf.getvalue()


# ------------------------------------------------------------- two codecs, one encoding


@pytest.mark.parametrize(("api_key", "version"), SHARE_CASES)
@settings(max_examples=5)
@given(data=st.data())
def test_a_share_request_kafka_python_wrote_decodes_as_kio_wrote_it(api_key, version, data):
    schema = load_request_schema(api_key, version)
    values = data.draw(plain_values(schema))
    theirs = KAFKA_PYTHON[(api_key, "request")].decode(_kio_bytes(schema, values),
                                                        version=version)
    theirs.with_header(correlation_id=3, client_id="share")
    raw = bytes(theirs.encode(header=True))
    # decode_request admits only advertised APIs: read the header and body as it does.
    got, offset = read_header(raw)
    assert got == RequestHeader(api_key, version, 3, "share")
    body, _ = entity_reader(schema)(raw, _skip_tagged_fields(raw, offset))
    assert plain(body) == plain(build(schema, values))


@pytest.mark.parametrize(("api_key", "version"), SHARE_CASES)
@settings(max_examples=5)
@given(data=st.data())
def test_a_share_response_the_gateway_wrote_reads_back_through_kafka_python(
        api_key, version, data):
    schema = load_response_schema(api_key, version)
    values = data.draw(plain_values(schema))
    framed = encode_response(RequestHeader(api_key, version, 11, None), values)
    theirs = KAFKA_PYTHON[(api_key, "response")].decode(framed[4:], version=version,
                                                         header=True)
    assert theirs.header.correlation_id == 11
    back, _ = entity_reader(schema)(bytes(theirs.encode()), 0)
    assert plain(back) == plain(build(schema, values))


# ------------------------------------------------------------------------ translation


@settings(max_examples=25)
@given(body=plain_values(load_request_schema(78, 2)))
def test_a_share_fetch_keeps_every_partition_and_acknowledgement_it_names(body):
    req = share.fetch_request(body, INDEX)
    assert [t.topic_id for t in req.topics] == [INDEX.topic_id_of(t["topic_id"])
                                                for t in body["topics"]]
    for t, wt in zip(req.topics, body["topics"], strict=True):
        assert [p.partition for p in t.partitions] == [p["partition_index"]
                                                       for p in wt["partitions"]]
        for p, wp in zip(t.partitions, wt["partitions"], strict=True):
            assert [(a.first_offset, a.last_offset, a.acknowledge_types)
                    for a in p.acknowledgements] == [
                (b["first_offset"], b["last_offset"], b["acknowledge_types"])
                for b in wp["acknowledgement_batches"]]
    assert share.forgotten(body, INDEX) == [
        (INDEX.topic_id_of(t["topic_id"]), p)
        for t in body["forgotten_topics_data"] for p in t["partitions"]]


def test_a_share_request_naming_topics_many_times_names_each_as_the_index_does():
    unknown = uuid.UUID(int=7)
    named = [topic_uuid(TOPIC.topic_id), unknown] * 500
    entries = [{"topic_id": u, "partitions": [{"partition_index": i % 3,
                                              "acknowledgement_batches": []}]}
               for i, u in enumerate(named)]
    body = {"group_id": "g", "member_id": "m", "share_session_epoch": 0,
            "topics": entries, "forgotten_topics_data": [
                {"topic_id": u, "partitions": [0, 1]} for u in named]}
    expected = [INDEX.topic_id_of(u) for u in named]
    assert expected[0] == TOPIC.topic_id and expected[1] != TOPIC.topic_id
    assert [t.topic_id for t in share.fetch_request(body, INDEX).topics] == expected
    assert [t.topic_id for t in share.acknowledge_request(body, INDEX).topics] == expected
    assert share.forgotten(body, INDEX) == [(t, p) for t in expected for p in (0, 1)]


def test_a_share_fetch_names_a_known_topic_by_cohorts_id():
    body = {"group_id": "g", "member_id": "m", "share_session_epoch": 0, "max_records": 7,
            "topics": [{"topic_id": topic_uuid(TOPIC.topic_id),
                        "partitions": [{"partition_index": 2, "acknowledgement_batches": []}]}],
            "forgotten_topics_data": []}
    req = share.fetch_request(body, INDEX)
    assert req.topics[0].topic_id == TOPIC.topic_id
    assert req.max_records == 7


@pytest.mark.parametrize("version", [1, 2])
@settings(max_examples=20)
@given(ranges=st.lists(st.tuples(st.integers(0, 5_000), st.integers(0, 40),
                                 st.integers(1, 5)), max_size=4))
def test_acquired_offsets_go_out_as_records_holding_exactly_those_offsets(version, ranges):
    acquired, at = [], 0
    for gap, length, count in ranges:  # disjoint, increasing, as a share-partition acquires
        first = at + gap
        acquired.append(m.AcquiredRecords(first, first + length, count))
        at = first + length + 1
    resp = m.ShareFetchResponse(acquisition_lock_timeout_ms=30_000, topics=[
        m.ShareFetchResponseTopic(TOPIC.topic_id, [
            m.ShareFetchResponsePartition(1, acquired=acquired)])])
    body = share.fetch_response(resp, lambda t, p, acquired: b"".join(
        STREAM.records(a.first_offset, a.last_offset + 1) for a in acquired), node_id=0)
    frame = encode_response(RequestHeader(78, version, 9, "c"), body)
    schema = load_response_schema(78, version)
    decoded, _ = entity_reader(schema)(frame[4:], 5)  # size, correlation id, no tags
    (topic,) = decoded.responses
    assert topic.topic_id == topic_uuid(TOPIC.topic_id)
    (part,) = topic.partitions
    assert [(a.first_offset, a.last_offset, a.delivery_count) for a in part.acquired_records] == [
        (a.first_offset, a.last_offset, a.delivery_count) for a in acquired]
    offsets, records = [], MemoryRecords(part.records or b"")
    while (batch := records.next_batch()) is not None:
        offsets += [(r.offset, r.value) for r in batch]
    want = [o for a in acquired for o in range(a.first_offset, a.last_offset + 1)]
    assert offsets == [(o, str(o).encode()) for o in want]


def test_a_heartbeat_reply_names_the_assignment_by_wire_uuid():
    resp = m.ShareGroupHeartbeatResponse(member_id="m1", member_epoch=3,
                                         heartbeat_interval_ms=5000,
                                         assignment=m.ShareGroupAssignment(
                                             [m.TopicPartitions(TOPIC.topic_id, [0, 2])]))
    body = share.heartbeat_response(resp)
    assert body["assignment"] == {"topic_partitions": [
        {"topic_id": topic_uuid(TOPIC.topic_id), "partitions": [0, 2]}]}
    frame = encode_response(RequestHeader(76, 1, 1, "c"), body)
    decoded, _ = entity_reader(load_response_schema(76, 1))(frame[4:], 5)
    assert decoded.member_epoch == 3 and decoded.assignment.topic_partitions[0].partitions == (0, 2)


def test_a_heartbeat_request_keeps_an_absent_subscription_absent():
    req = share.heartbeat_request({"group_id": "g", "member_id": "m", "member_epoch": 4,
                                   "rack_id": None, "subscribed_topic_names": None}, "cid", "h")
    assert req.subscribed_topic_names is None and req.client_id == "cid"
    req = share.heartbeat_request({"group_id": "g", "member_id": "m", "member_epoch": 0,
                                   "subscribed_topic_names": ["a"]})
    assert req.subscribed_topic_names == ["a"]


def test_a_refused_share_fetch_encodes_its_error_and_nothing_else():
    body = share.refused(E.share_session_not_found.value, "no session")
    frame = encode_response(RequestHeader(78, 1, 1, "c"), body)
    decoded, _ = entity_reader(load_response_schema(78, 1))(frame[4:], 5)
    assert decoded.error_code == E.share_session_not_found and decoded.responses == ()


def test_a_share_request_of_an_unadvertised_version_is_refused_by_the_codec():
    raw = (78).to_bytes(2, "big") + (7).to_bytes(2, "big") + b"\x00\x00\x00\x01\xff\xff\x00"
    with pytest.raises(Exception):  # noqa: B017 - UnsupportedVersion or UnknownApi
        decode_request(raw)


# --------------------------------------------------------------------------- sessions

A, B = ("t", 0), ("t", 1)


def test_a_first_fetch_opens_a_session_for_the_partitions_it_names():
    s = ShareSessions()
    step = s.fetch("g", "m", 0, [A, B], [], acknowledges=False)
    assert step.error_code == 0 and step.partitions == (A, B)
    assert s.get("g", "m").epoch == 1


def test_a_first_fetch_carrying_acknowledgements_is_invalid_and_opens_nothing():
    s = ShareSessions()
    step = s.fetch("g", "m", 0, [A], [], acknowledges=True)
    assert step.error_code == E.invalid_request.value and s.get("g", "m") is None


def test_an_incremental_fetch_adds_named_partitions_and_drops_forgotten_ones():
    s = ShareSessions()
    s.fetch("g", "m", 0, [A], [], acknowledges=False)
    step = s.fetch("g", "m", 1, [B], [A], acknowledges=True)
    assert step.partitions == (B,) and s.get("g", "m").epoch == 2


def test_a_fetch_at_the_wrong_epoch_is_refused_and_changes_nothing():
    s = ShareSessions()
    s.fetch("g", "m", 0, [A], [], acknowledges=False)
    step = s.fetch("g", "m", 5, [B], [A], acknowledges=False)
    assert step.error_code == E.invalid_share_session_epoch.value
    assert s.get("g", "m").epoch == 1 and list(s.get("g", "m").partitions) == [A]


def test_a_request_without_a_session_is_share_session_not_found():
    s = ShareSessions()
    assert s.fetch("g", "m", 3, [A], [], False).error_code == E.share_session_not_found.value
    assert s.acknowledge("g", "m", 3).error_code == E.share_session_not_found.value
    assert s.acknowledge("g", "m", -1).error_code == E.share_session_not_found.value


def test_acknowledge_cannot_open_a_session_but_moves_an_open_one_on():
    s = ShareSessions()
    assert s.acknowledge("g", "m", 0).error_code == E.invalid_share_session_epoch.value
    s.fetch("g", "m", 0, [A], [], False)
    assert s.acknowledge("g", "m", 1).error_code == 0
    assert s.get("g", "m").epoch == 2


@pytest.mark.parametrize("kind", ["fetch", "acknowledge"])
def test_the_final_epoch_closes_the_session_and_says_to_release(kind):
    s = ShareSessions()
    s.fetch("g", "m", 0, [A], [], False)
    step = (s.fetch("g", "m", -1, [], [], True) if kind == "fetch"
            else s.acknowledge("g", "m", -1))
    # What the session held comes back with its close: what the member's release covers.
    assert step.close and step.partitions == (A,) and s.get("g", "m") is None


def test_sessions_beyond_the_limit_are_refused_but_a_member_may_reopen_its_own():
    s = ShareSessions(max_sessions=2)
    s.fetch("g", "m1", 0, [A], [], False)
    s.fetch("g", "m2", 0, [A], [], False)
    assert s.fetch("g", "m3", 0, [A], [], False).error_code == (
        E.share_session_limit_reached.value)
    assert s.fetch("g", "m1", 0, [B], [], False).error_code == 0
    assert len(s) == 2 and list(s.get("g", "m1").partitions) == [B]


def test_the_session_epoch_wraps_to_one():
    assert next_epoch(MAX_EPOCH) == 1 and next_epoch(0) == 1


@settings(max_examples=50)
@given(ops=st.lists(st.tuples(st.sampled_from(["fetch", "ack"]), st.sampled_from(["m1", "m2"]),
                              st.integers(-1, 4)), max_size=30))
def test_a_session_epoch_only_moves_on_a_request_it_accepted(ops):
    s = ShareSessions(max_sessions=1)
    for kind, member, epoch in ops:
        before = s.get("g", member)
        before = None if before is None else (before.epoch, dict(before.partitions))
        step = (s.fetch("g", member, epoch, [A], [], False) if kind == "fetch"
                else s.acknowledge("g", member, epoch))
        after = s.get("g", member)
        after = None if after is None else (after.epoch, dict(after.partitions))
        if step.error_code:
            assert after == before
        elif epoch == -1:
            assert after is None
        else:
            assert after is not None and after[0] == next_epoch(epoch)
        assert len(s) <= 1


def test_uuid_of_an_unknown_topic_reaches_the_shard_as_its_spelling():
    u = uuid.uuid4()
    body = {"group_id": "g", "member_id": "m", "topics": [
        {"topic_id": u, "partitions": [{"partition_index": 0, "acknowledgement_batches": []}]}]}
    req = share.acknowledge_request(body, INDEX)
    assert topic_uuid(req.topics[0].topic_id) == u


# ------------------------------------------------------------------ share-offset admin


def test_describe_share_group_offsets_asks_each_group_on_its_own():
    body = {"groups": [{"group_id": "g1", "topics": None},
                       {"group_id": "g2", "topics": [{"topic_name": "orders",
                                                      "partitions": [0, 2]}]}]}
    r1, r2 = share_admin.describe_offsets_requests(body)
    assert (r1.group_id, r1.topics) == ("g1", None)
    assert r2.group_id == "g2" and [(t.topic_name, t.partitions) for t in r2.topics] == [
        ("orders", [0, 2])]


@pytest.mark.parametrize("version", [0, 1])
def test_described_share_offsets_carry_start_offset_and_lag_where_the_version_has_it(version):
    reply = m.DescribeShareGroupOffsetsResponse(group_id="g1", topics=[
        m.DescribeShareGroupOffsetsTopic("orders", TOPIC.topic_id, [
            m.DescribeShareGroupOffsetsPartition(1, start_offset=42, lag=7)])])
    frame = encode_response(RequestHeader(90, version, 1, "c"),
                            share_admin.describe_offsets_response([reply]))
    decoded, _ = entity_reader(load_response_schema(90, version))(frame[4:], 5)
    (p,) = decoded.groups[0].topics[0].partitions
    assert decoded.groups[0].topics[0].topic_id == topic_uuid(TOPIC.topic_id)
    assert p.start_offset == 42 and getattr(p, "lag", 7) == 7


def test_alter_and_delete_share_group_offsets_name_topics_by_name():
    alter = share_admin.alter_offsets_request({"group_id": "g", "topics": [
        {"topic_name": "orders", "partitions": [{"partition_index": 1, "start_offset": 9}]}]})
    assert [(t.topic_name, [(p.partition, p.start_offset) for p in t.partitions])
            for t in alter.topics] == [("orders", [(1, 9)])]
    delete = share_admin.delete_offsets_request({"group_id": "g",
                                                 "topics": [{"topic_name": "orders"}]})
    assert delete.topic_names == ["orders"]
