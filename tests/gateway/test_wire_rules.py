"""The pure translation between Kafka's wire messages and Cohort's (``protocol/wire``)."""

from __future__ import annotations

import itertools
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.record import MemoryRecords

from protocol import messages as m
from protocol.errors import Errors
from protocol.metadata import TopicMetadata
from protocol.wire import classic, configs, consumer, offsets, stream, topics
from protocol.wire.coordinator import find_coordinator_response
from protocol.wire.framing import FrameError, FrameReader, frame
from protocol.wire.ids import kafka_client_host, kafka_error, topic_uuid, uuid_topic_id
from protocol.wire.topics import Node, TopicIndex

NODE = Node(0, "127.0.0.1", 9092)
FOO = TopicMetadata("GXCmfjCPSEefsQqgR0oNjw", "foo", 3)
BAR = TopicMetadata("hand-made-id", "bar", 1)
INDEX = TopicIndex([FOO, BAR])


def everyone(_name: str) -> bool:
    return True


# ------------------------------------------------------------------------------ framing


def test_frames_come_out_whole_however_the_bytes_are_split():
    data = frame(b"one") + frame(b"") + frame(b"three")
    reader = FrameReader()
    got = [f for i in range(len(data)) for f in reader.feed(data[i:i + 1])]
    assert got == [b"one", b"", b"three"] and reader.buffered == 0


@given(st.lists(st.binary(max_size=40), max_size=6),
       st.lists(st.integers(0, 300), max_size=8))
def test_frames_come_out_whole_and_in_order_for_any_split_of_the_stream(payloads, cuts):
    data = b"".join(frame(p) for p in payloads)
    points = sorted({0, len(data), *(c for c in cuts if c < len(data))})
    reader = FrameReader()
    got = [f for a, b in itertools.pairwise(points) for f in reader.feed(data[a:b])]
    assert got == payloads and reader.buffered == 0
    assert all(type(f) is bytes for f in got)


def test_a_whole_frame_over_the_maximum_in_one_read_ends_the_stream():
    with pytest.raises(FrameError):
        list(FrameReader(max_bytes=100).feed(frame(b"x" * 101)))
    assert list(FrameReader(max_bytes=100).feed(frame(b"x" * 100))) == [b"x" * 100]


@pytest.mark.parametrize("size", [-1, -(2**31), 101])
def test_a_frame_size_outside_the_stated_maximum_ends_the_stream(size):
    with pytest.raises(FrameError):
        list(FrameReader(max_bytes=100).feed(size.to_bytes(4, "big", signed=True)))


# ---------------------------------------------------------------------------------- ids


@given(st.uuids())
def test_a_wire_uuid_and_cohorts_topic_id_are_one_id_written_two_ways(u):
    assert topic_uuid(uuid_topic_id(u)) == u


def test_a_hand_made_topic_id_maps_to_a_stable_uuid_the_index_maps_back():
    u = topic_uuid("hand-made-id")
    assert u == topic_uuid("hand-made-id") and INDEX.topic_id_of(u) == "hand-made-id"


def test_cohorts_own_error_codes_reach_a_kafka_client_as_unknown_server_error():
    assert kafka_error(Errors.COMPUTE_ASSIGNMENT) == -1
    assert kafka_error(Errors.FENCED_MEMBER_EPOCH) == 110


# ------------------------------------------------------------------------------ classic


@pytest.mark.parametrize(("text", "reason"), [
    ("restart", "restart"), ("Topic metadata change", "topic_metadata_change"),
    ("UPGRADE", "upgrade"), (None, None), ("", None),
    ("rebalance failed due to 'The group member needs a member id' (MemberIdRequired)", None),
])
def test_free_text_join_reasons_become_no_reason_and_kip_800_names_pass(text, reason):
    assert classic.join_reason(text) == reason


def test_a_v0_join_uses_the_session_timeout_as_rebalance_timeout():
    req = classic.join_request({"group_id": "g", "session_timeout": 6000, "member_id": "",
                                "protocol_type": "consumer",
                                "protocols": [{"name": "range", "metadata": b"x"}]},
                               "client", "10.0.0.1")
    assert req.rebalance_timeout_ms == 6000 and req.reason is None
    assert req.client_host == "/10.0.0.1" and req.protocols[0].name == "range"  # as Kafka shows


def test_only_joins_from_v4_handle_member_id_required_themselves():
    assert not classic.needs_member_id_round_trip(3)
    assert classic.needs_member_id_round_trip(4)


def test_a_leave_before_v3_reports_its_one_members_error_at_the_top():
    resp = m.LeaveGroupResponse(members=[m.LeaveGroupResponseMember(
        "a", error_code=Errors.UNKNOWN_MEMBER_ID)])
    assert classic.leave_response(resp, 0)["error_code"] == Errors.UNKNOWN_MEMBER_ID
    assert classic.leave_response(resp, 3)["error_code"] == 0
    assert classic.leave_request({"group_id": "g", "member_id": "a"}).members[0].member_id == "a"


def test_group_states_are_spelled_as_kafka_spells_them():
    g = m.DescribeGroupsResponseGroup(group_id="g", group_state="completing_rebalance")
    assert classic.describe_group_entry(g)["group_state"] == "CompletingRebalance"


# ----------------------------------------------------------------------------- consumer


@pytest.mark.parametrize(("names", "regex", "expected"), [
    (["t"], "", (["t"], None)),        # librdkafka: names, regex cleared
    ([], "^t.*", (None, "^t.*")),      # librdkafka: regex, names cleared
    (None, None, (None, None)),        # unchanged
    (["t"], "^t", (["t"], "^t")),      # both set: Cohort refuses it (INVALID_REQUEST)
])
def test_an_empty_subscription_field_beside_a_set_one_means_not_this_kind(names, regex, expected):
    assert consumer.subscription(names, regex) == expected


def test_a_heartbeat_names_topics_by_uuid_on_the_wire_and_by_id_in_cohort():
    body = {"group_id": "g", "member_id": "m", "member_epoch": 3, "rebalance_timeout": 1000,
            "subscribed_topic_names": None, "subscribed_topic_regex": None,
            "topic_partitions": [{"topic_id": topic_uuid(FOO.topic_id), "partitions": [0, 2]}]}
    req = consumer.heartbeat_request(body, INDEX, "rdkafka", "h")
    assert req.topic_partitions == [m.TopicPartitions(FOO.topic_id, [0, 2])]
    resp = m.ConsumerGroupHeartbeatResponse(member_id="m", member_epoch=4, assignment=(
        m.HeartbeatAssignment(assigned_topic_partitions=[m.TopicPartitions(FOO.topic_id, [1])],
                              pending_topic_partitions=[m.TopicPartitions(FOO.topic_id, [2])])))
    wire = consumer.heartbeat_response(resp)
    assert wire["assignment"] == {"topic_partitions": [
        {"topic_id": topic_uuid(FOO.topic_id), "partitions": [1]}]}  # pending ones wait


# ------------------------------------------------------------------------------ offsets


def test_a_request_level_commit_error_is_given_to_every_partition():
    body = {"group_id": "g", "topics": [{"name": "foo", "partitions": [
        {"partition_index": 0, "committed_offset": 5}, {"partition_index": 1,
                                                         "committed_offset": 7}]}]}
    resp = offsets.commit_response(m.OffsetCommitResponse(
        error_code=Errors.FENCED_MEMBER_EPOCH), body)
    assert [p["error_code"] for p in resp["topics"][0]["partitions"]] == [110, 110]


def test_a_batched_offset_fetch_asks_each_group_and_answers_in_the_batched_shape():
    body = {"groups": [{"group_id": "a", "member_id": None, "member_epoch": -1,
                        "topics": None}, {"group_id": "b", "topics": [
                            {"name": "foo", "partition_indexes": [0]}]}],
            "require_stable": True}
    reqs = offsets.fetch_requests(body, 8)
    assert [r.group_id for r in reqs] == ["a", "b"] and reqs[1].require_stable
    entries = [offsets.fetch_refused(r, Errors.GROUP_AUTHORIZATION_FAILED) for r in reqs]
    assert [g["error_code"] for g in offsets.fetch_response(entries, 8)["groups"]] == [30, 30]
    single = offsets.fetch_response([entries[0]], 7)
    assert single["error_code"] == 30 and "groups" not in single


# ---------------------------------------------------------------- coordinator, metadata


def test_find_coordinator_names_each_groups_own_coordinator_in_a_batch():
    coordinators = {"a": Node(1003, "127.0.0.1", 40001), "c": Node(1001, "10.0.0.2", 40002)}
    resp = find_coordinator_response({"key_type": 0, "coordinator_keys": ["a", "b", "c"]}, 4,
                                     coordinators.get, lambda g: g != "b")
    a, b, c = resp["coordinators"]
    assert (a["key"], a["node_id"], a["port"], a["error_code"]) == ("a", 1003, 40001, 0)
    assert b["error_code"] == 30 and b["node_id"] == -1  # GROUP_AUTHORIZATION_FAILED
    assert (c["node_id"], c["host"], c["port"]) == (1001, "10.0.0.2", 40002)
    v0 = find_coordinator_response({"key": "a"}, 0, coordinators.get, everyone)
    assert (v0["node_id"], v0["host"], v0["error_code"]) == (1003, "127.0.0.1", 0)
    txn = find_coordinator_response({"key": "t", "key_type": 1}, 3, coordinators.get, everyone)
    assert txn["error_code"] == 15 and "groups only" in txn["error_message"]


def test_find_coordinator_says_not_available_while_the_groups_partition_does_not_listen():
    moving = find_coordinator_response({"key": "g"}, 3, lambda g: None, everyone)
    assert moving["error_code"] == 15  # COORDINATOR_NOT_AVAILABLE: clients retry
    assert (moving["node_id"], moving["host"], moving["port"]) == (-1, "", -1)


def test_metadata_lists_the_coordinators_as_brokers_that_lead_nothing():
    coordinators = [Node(1000, "127.0.0.1", 40000), Node(1001, "127.0.0.1", 40001)]
    resp = topics.metadata_response({"topics": None}, 12, INDEX, NODE, everyone, coordinators)
    assert [b["node_id"] for b in resp["brokers"]] == [0, 1000, 1001]
    assert resp["controller_id"] == 0
    leaders = {p["leader_id"] for t in resp["topics"] for p in t["partitions"]}
    assert leaders == {0}


def test_metadata_by_name_and_by_id_agree_and_unknown_topics_say_so():
    by_name = topics.metadata_response({"topics": [{"name": "foo", "topic_id": None}]}, 12,
                                       INDEX, NODE, everyone)["topics"][0]
    by_id = topics.metadata_response({"topics": [{"name": None,
                                                  "topic_id": topic_uuid(FOO.topic_id)}]},
                                     12, INDEX, NODE, everyone)["topics"][0]
    assert by_name == by_id and len(by_name["partitions"]) == 3
    unknown = topics.metadata_response({"topics": [{"name": "nope"}, {
        "name": None, "topic_id": uuid.uuid4()}]}, 12, INDEX, NODE, everyone)["topics"]
    assert [t["error_code"] for t in unknown] == [3, 100]


def test_metadata_for_all_topics_shows_only_what_the_principal_may_describe():
    resp = topics.metadata_response({"topics": None}, 12, INDEX, NODE, lambda t: t == "bar")
    assert [t["name"] for t in resp["topics"]] == ["bar"]
    v0_all = topics.metadata_response({"topics": []}, 0, INDEX, NODE, everyone)
    assert sorted(t["name"] for t in v0_all["topics"]) == ["bar", "foo"]


def test_create_topics_refuses_duplicates_and_more_replicas_than_one_broker():
    plans = topics.plan_create_topics({"topics": [
        {"name": "a", "num_partitions": -1, "replication_factor": -1, "assignments": []},
        {"name": "b", "num_partitions": 2, "replication_factor": 3, "assignments": []},
        {"name": "c", "num_partitions": 1, "replication_factor": 1, "assignments": []},
        {"name": "c", "num_partitions": 1, "replication_factor": 1, "assignments": []},
    ]})
    assert [(p.name, p.count, p.error) for p in plans] == [
        ("a", 1, 0), ("b", 2, 38), ("c", 0, 42)]  # a duplicated name is answered once


# ------------------------------------------------------------------------------ configs


def test_group_configs_alter_by_set_and_delete_and_refuse_list_operations():
    from protocol.config import GroupConfig

    cur = GroupConfig(consumer_session_timeout_ms=6000)
    new = configs.altered_group_config(cur, [
        {"name": "consumer.heartbeat.interval.ms", "config_operation": configs.SET,
         "value": "1000"},
        {"name": "consumer.session.timeout.ms", "config_operation": configs.DELETE}])
    assert new == GroupConfig(None, 1000)
    for op in ({"name": "nope", "config_operation": 0, "value": "1"},
               {"name": "consumer.session.timeout.ms", "config_operation": 0, "value": "x"},
               {"name": "consumer.session.timeout.ms", "config_operation": configs.APPEND}):
        with pytest.raises(configs.ConfigRefused):
            configs.altered_group_config(cur, [op])


# ------------------------------------------------------------------------------- stream

STREAM = stream.SyntheticStream(anchor_ms=1_000, records_per_s=50, batch_interval_ms=200)


@given(st.integers(0, 10**7))
def test_record_n_arrives_with_the_first_batch_that_holds_it(n):
    t = STREAM.timestamp_of(n)
    assert STREAM.end_offset(t) > n >= STREAM.end_offset(t - 1)


def test_the_stream_grows_in_batches_from_its_anchor():
    assert [STREAM.end_offset(t) for t in (0, 1_000, 1_199, 1_200, 2_000)] == [0, 0, 0, 10, 50]


def test_list_offsets_earliest_latest_and_by_time():
    body = {"topics": [{"name": "foo", "partitions": [
        {"partition_index": 0, "timestamp": -2}, {"partition_index": 1, "timestamp": -1},
        {"partition_index": 2, "timestamp": 1_201}, {"partition_index": 9, "timestamp": -1}]}]}
    parts = stream.list_offsets_response(body, INDEX, STREAM, 2_000, everyone)[
        "topics"][0]["partitions"]
    assert [(p["offset"], p["error_code"]) for p in parts] == [(0, 0), (50, 0), (10, 0),
                                                                (-1, 3)]


def test_a_fetch_returns_a_real_v2_batch_where_record_n_holds_n():
    body = {"max_bytes": 1 << 20, "topics": [{"topic": "foo", "partitions": [
        {"partition": 0, "fetch_offset": 7, "partition_max_bytes": 1 << 20},
        {"partition": 1, "fetch_offset": 51, "partition_max_bytes": 1 << 20}]}]}
    reply, count = stream.fetch_response(body, INDEX, STREAM, 2_000, everyone)
    first, past_end = reply["responses"][0]["partitions"]
    batch = MemoryRecords(first["records"]).next_batch()
    assert batch.validate_crc()
    assert [(r.offset, r.value) for r in batch] == [(o, str(o).encode()) for o in range(7, 50)]
    assert count == 43 and past_end["error_code"] == 1  # OFFSET_OUT_OF_RANGE


def test_a_fetch_is_refused_per_topic_without_read_access():
    body = {"topics": [{"topic": "foo", "partitions": [{"partition": 0, "fetch_offset": 0}]}]}
    reply, count = stream.fetch_response(body, INDEX, STREAM, 2_000, lambda t: False)
    assert reply["responses"][0]["partitions"][0]["error_code"] == 29 and count == 0


def test_produce_is_answered_with_a_clear_error_per_partition():
    resp = stream.produce_response({"topic_data": [{"name": "foo", "partition_data": [
        {"index": 0, "records": b""}]}]})
    part = resp["responses"][0]["partition_responses"][0]
    assert part["error_code"] == 42 and "synthetic" in part["error_message"]


def test_a_client_host_is_shown_as_kafka_shows_an_inet_address():
    assert kafka_client_host("127.0.0.1") == "/127.0.0.1"
    assert kafka_client_host("::1") == "/0:0:0:0:0:0:0:1"
    assert kafka_client_host("fe80::1%eth0") == "/fe80:0:0:0:0:0:0:1"
    assert kafka_client_host("") == ""
