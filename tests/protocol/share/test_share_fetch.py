"""ShareFetch and ShareAcknowledge through the shard: who may fetch, per-partition errors,
piggybacked acknowledgements, the request's record budget, share.auto.offset.reset, locks
expiring on the shard's timers, members leaving or closing their session, and every change
written as a record before the reply."""

from __future__ import annotations

from protocol import messages as m
from protocol.errors import Errors
from protocol.share.messages import ACK_ACCEPT, ACK_RELEASE, RECORD_LIMIT, AcknowledgementBatch
from protocol.share.records import SharePartitionStateKey
from tests.protocol.share.helpers import (
    GROUP,
    ack_error,
    acknowledge,
    acquired,
    fetch,
    fetch_request,
    heartbeat,
    join,
    new_shard,
    tid,
)


def batch(first: int, last: int, *types: int) -> AcknowledgementBatch:
    return AcknowledgementBatch(first, last, list(types))


def two_members():
    shard = new_shard()
    join(shard, "a")
    join(shard, "b")
    return shard


def test_a_fetch_acquires_records_and_writes_the_share_partition_state():
    shard = two_members()
    result = shard.handle(fetch_request("a", ("orders", 0), end=10, max_records=4))
    assert acquired(result.response) == [(0, 3, 1)]
    assert result.response.acquisition_lock_timeout_ms == 30_000
    assert [type(r.key) for r in result.records] == [SharePartitionStateKey]
    assert shard.groups[GROUP].partitions[(tid("orders"), 0)].acquired_by("a") == [0, 1, 2, 3]


def test_two_members_reading_one_partition_never_get_the_same_record():
    shard = two_members()
    a = acquired(fetch(shard, "a", ("orders", 0), end=10, max_records=6))
    b = acquired(fetch(shard, "b", ("orders", 0), end=10, max_records=6))
    assert a == [(0, 5, 1)] and b == [(6, 9, 1)]


def test_max_records_bounds_the_whole_request():
    shard = two_members()
    resp = fetch(shard, "a", ("orders", 0), ("orders", 1), end=10, max_records=12)
    counts = [sum(x.last_offset - x.first_offset + 1 for x in p.acquired)
              for p in resp.topics[0].partitions]
    assert counts == [10, 2]
    result = shard.handle(fetch_request("a", ("orders", 2), end=10, max_records=0))
    assert acquired(result.response) == [] and result.records == []


def test_max_records_is_soft_a_fetch_takes_the_rest_of_the_batch_holding_its_last_record():
    # Kafka's default acquire mode (KIP-1206 batch_optimized): whole log batches.
    shard = two_members()
    a = acquired(fetch(shard, "a", ("orders", 0), end=5_000, max_records=500,
                       batch_records=1_000))
    b = acquired(fetch(shard, "b", ("orders", 0), end=5_000, max_records=1_000,
                       batch_records=1_000))
    assert a == [(0, 999, 1)] and b == [(1_000, 1_999, 1)]


def test_a_batchs_rest_stops_at_the_log_end_and_a_spent_budget_takes_no_more_partitions():
    shard = two_members()
    resp = fetch(shard, "a", ("orders", 0), ("orders", 1), end=700, max_records=500,
                 batch_records=1_000)
    assert [[(x.first_offset, x.last_offset) for x in p.acquired]
            for p in resp.topics[0].partitions] == [[(0, 699)], []]


def test_record_limit_mode_acquires_exactly_max_records():
    # KIP-1206's record_limit (ShareFetch v2's ShareAcquireMode 1).
    shard = two_members()
    resp = fetch(shard, "a", ("orders", 0), end=5_000, max_records=500, batch_records=1_000,
                 acquire_mode=RECORD_LIMIT)
    assert acquired(resp) == [(0, 499, 1)]


def test_latest_starts_a_new_share_partition_at_the_stream_end():
    shard = new_shard(earliest=False)
    join(shard, "a")
    assert acquired(fetch(shard, "a", ("orders", 0), end=50)) == []
    assert acquired(fetch(shard, "a", ("orders", 0), end=53)) == [(50, 52, 1)]


def test_earliest_starts_a_new_share_partition_at_the_log_start_the_request_carries():
    shard = new_shard(earliest=True)
    join(shard, "a")
    req = fetch_request("a", ("orders", 0), end=50, max_records=3)
    req.topics[0].partitions[0].log_start_offset = 40  # the upstream deleted 0..39
    assert acquired(shard.handle(req).response) == [(40, 42, 1)]


def test_acknowledgements_on_a_fetch_apply_before_it_acquires():
    shard = two_members()
    fetch(shard, "a", ("orders", 0), end=4)
    acks = {("orders", 0): [batch(0, 1, ACK_ACCEPT), batch(2, 3, ACK_RELEASE)]}
    resp = fetch(shard, "a", ("orders", 0), end=4, acks=acks)
    assert resp.topics[0].partitions[0].acknowledge_error_code == 0
    assert acquired(resp) == [(2, 3, 2)]
    assert shard.groups[GROUP].partitions[(tid("orders"), 0)].start_offset == 2


def test_a_bad_piggybacked_acknowledgement_still_lets_the_fetch_acquire():
    shard = two_members()
    fetch(shard, "a", ("orders", 0), end=2)
    acks = {("orders", 0): [batch(0, 0, ACK_ACCEPT), batch(0, 1, ACK_ACCEPT)]}
    resp = fetch(shard, "a", ("orders", 0), end=4, acks=acks)
    part = resp.topics[0].partitions[0]
    assert part.acknowledge_error_code == Errors.INVALID_REQUEST
    assert acquired(resp) == [(2, 3, 1)]
    assert shard.groups[GROUP].partitions[(tid("orders"), 0)].start_offset == 0  # no ack applied


def test_share_acknowledge_answers_per_partition():
    shard = two_members()
    fetch(shard, "a", ("orders", 0), end=3)
    assert ack_error(acknowledge(shard, "a", "orders", 0, batch(0, 2, ACK_ACCEPT))) == 0
    assert ack_error(acknowledge(shard, "a", "orders", 0, batch(0, 0, ACK_ACCEPT))) == (
        Errors.INVALID_RECORD_STATE)
    assert ack_error(acknowledge(shard, "b", "orders", 1, batch(0, 0, ACK_ACCEPT))) == (
        Errors.INVALID_RECORD_STATE)  # never fetched
    assert ack_error(acknowledge(shard, "a", "orders", 7, batch(0, 0, 1))) == (
        Errors.UNKNOWN_TOPIC_OR_PARTITION)


def test_a_member_cannot_acknowledge_another_members_records():
    shard = two_members()
    fetch(shard, "a", ("orders", 0), end=3)
    result = shard.handle(m.ShareAcknowledgeRequest(GROUP, "b", [m.ShareAcknowledgeTopic(
        tid("orders"), [m.ShareAcknowledgePartition(0, [batch(0, 0, ACK_ACCEPT)])])]))
    assert result.response.topics[0].partitions[0].error_code == Errors.INVALID_RECORD_STATE
    assert result.records == []


def test_unknown_topics_and_partitions_are_per_partition_errors():
    shard = two_members()
    req = m.ShareFetchRequest(GROUP, "a", [
        m.ShareFetchTopic("T-none", [m.ShareFetchPartition(0, log_end_offset=5)]),
        m.ShareFetchTopic(tid("orders"), [m.ShareFetchPartition(9, log_end_offset=5),
                                          m.ShareFetchPartition(1, log_end_offset=5)]),
    ])
    resp = shard.handle(req).response
    assert resp.topics[0].partitions[0].error_code == Errors.UNKNOWN_TOPIC_ID
    assert resp.topics[1].partitions[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert [(a.first_offset, a.last_offset) for a in resp.topics[1].partitions[1].acquired] == [
        (0, 4)]


def test_fetches_from_strangers_are_refused_whole():
    shard = two_members()
    shard.handle(m.ConsumerGroupHeartbeatRequest("cg", "", 0, rebalance_timeout_ms=5000,
                                                 subscribed_topic_names=["orders"]))
    cases = [
        (Errors.UNKNOWN_MEMBER_ID, fetch_request("zz", ("orders", 0))),
        (Errors.GROUP_ID_NOT_FOUND, fetch_request("a", ("orders", 0), group="nope")),
        (Errors.GROUP_ID_NOT_FOUND, fetch_request("a", ("orders", 0), group="cg")),
    ]
    for expected, req in cases:
        result = shard.handle(req)
        assert result.response.error_code == expected, req
        assert result.records == []


def test_malformed_fetches_are_invalid_request_and_change_nothing():
    shard = two_members()
    bad = [
        fetch_request("a", ("orders", 0), ("orders", 0)),  # a partition twice
        fetch_request("a", ("orders", 0), max_records=-1),
        fetch_request("a", ("orders", 0), acquire_mode=2),  # neither of KIP-1206's modes
        fetch_request("a", ("orders", 0), end=-5),
        m.ShareFetchRequest(GROUP, "a", [m.ShareFetchTopic(tid("orders"), [
            m.ShareFetchPartition(0, log_end_offset=5, log_start_offset=6)])]),
        fetch_request("", ("orders", 0)),
        m.ShareFetchRequest(GROUP, "a", [m.ShareFetchTopic(tid("orders"), [
            m.ShareFetchPartition(0, [AcknowledgementBatch(0, 1, "x")])])]),  # type: ignore
    ]
    for req in bad:
        result = shard.handle(req)
        assert result.response.error_code == Errors.INVALID_REQUEST, req
        assert result.records == []


def test_an_expired_lock_makes_records_available_to_another_member():
    shard = two_members()
    fetch(shard, "a", ("orders", 0), end=3)
    assert shard.next_deadline_ms() == 30_000
    result = shard.tick(30_000)
    assert [type(r.key) for r in result.records] == [SharePartitionStateKey]
    assert acquired(fetch(shard, "b", ("orders", 0), end=3)) == [(0, 2, 2)]
    assert ack_error(acknowledge(shard, "a", "orders", 0, batch(0, 0, ACK_ACCEPT))) == (
        Errors.INVALID_RECORD_STATE)


def test_a_record_past_the_delivery_limit_is_never_delivered_again():
    shard = new_shard(share_delivery_count_limit=2)
    join(shard, "a")
    for delivery in (1, 2):
        assert acquired(fetch(shard, "a", ("orders", 0), end=1)) == [(0, 0, delivery)]
        acknowledge(shard, "a", "orders", 0, batch(0, 0, ACK_RELEASE))
    assert acquired(fetch(shard, "a", ("orders", 0), end=1)) == []
    assert shard.groups[GROUP].partitions[(tid("orders"), 0)].start_offset == 1


def test_leaving_releases_every_record_the_member_held():
    shard = two_members()
    fetch(shard, "b", ("orders", 0), ("orders", 1), end=2)
    heartbeat(shard, "b", -1)
    assert acquired(fetch(shard, "a", ("orders", 0), ("orders", 1), end=2)) == [
        (0, 1, 2), (0, 1, 2)]


def test_a_session_timeout_releases_the_members_records():
    shard = two_members()
    fetch(shard, "b", ("orders", 0), end=2)
    shard.tick(29_000)
    heartbeat(shard, "a", shard.groups[GROUP].members["a"].member_epoch)
    shard.tick(45_000)  # b's session ends before its lock
    assert "b" not in shard.groups[GROUP].members
    assert acquired(fetch(shard, "a", ("orders", 0), end=2)) == [(0, 1, 2)]


def test_closing_the_session_acknowledges_then_releases_the_rest():
    shard = two_members()
    fetch(shard, "a", ("orders", 0), ("orders", 1), end=3)
    resp = acknowledge(shard, "a", "orders", 0, batch(0, 0, ACK_ACCEPT), close=True)
    assert ack_error(resp) == 0
    parts = shard.groups[GROUP].partitions
    assert parts[(tid("orders"), 0)].acquired_by("a") == []
    assert parts[(tid("orders"), 1)].acquired_by("a") == []
    assert parts[(tid("orders"), 0)].start_offset == 1
    closed = fetch(shard, "b", ("orders", 0), end=3, close=True)
    assert acquired(closed) == []  # a closing fetch acquires nothing


def test_deleting_the_group_deletes_its_share_partitions():
    shard = two_members()
    fetch(shard, "a", ("orders", 0), end=3)
    heartbeat(shard, "a", -1)
    heartbeat(shard, "b", -1)
    result = shard.handle(m.DeleteGroupsRequest([GROUP]))
    keys = [r.key for r in result.records if r.value is None]
    assert SharePartitionStateKey(GROUP, tid("orders"), 0) in keys
    assert GROUP not in shard.groups and shard.next_deadline_ms() is None


def test_acknowledgements_from_strangers_or_malformed_are_refused_whole():
    shard = two_members()
    fetch(shard, "a", ("orders", 0), end=3)
    part = [m.ShareAcknowledgeTopic(tid("orders"), [m.ShareAcknowledgePartition(
        0, [batch(0, 0, ACK_ACCEPT)])])]
    twice = [m.ShareAcknowledgeTopic(tid("orders"), [
        m.ShareAcknowledgePartition(0, [batch(0, 0, ACK_ACCEPT)]),
        m.ShareAcknowledgePartition(0, [batch(1, 1, ACK_ACCEPT)])])]
    cases = [
        (Errors.UNKNOWN_MEMBER_ID, m.ShareAcknowledgeRequest(GROUP, "zz", part)),
        (Errors.GROUP_ID_NOT_FOUND, m.ShareAcknowledgeRequest("nope", "a", part)),
        (Errors.INVALID_REQUEST, m.ShareAcknowledgeRequest(GROUP, "a", twice)),
        (Errors.INVALID_REQUEST, m.ShareAcknowledgeRequest(GROUP, "", part)),
        (Errors.INVALID_REQUEST, m.ShareAcknowledgeRequest(GROUP, "a", part, close_session=1)),
    ]
    for expected, req in cases:
        result = shard.handle(req)
        assert result.response.error_code == expected, req
        assert result.records == []
    assert shard.groups[GROUP].partitions[(tid("orders"), 0)].acquired_by("a") == [0, 1, 2]


def test_deleting_a_topic_deletes_its_share_partitions():
    shard = two_members()
    fetch(shard, "a", ("orders", 0), ("audit", 0), end=3)
    from protocol.metadata import MetadataImage, TopicMetadata

    result = shard.update_metadata(MetadataImage([TopicMetadata(tid("audit"), "audit", 1)]))
    tombstones = [r.key for r in result.records if r.value is None]
    assert tombstones == [SharePartitionStateKey(GROUP, tid("orders"), 0)]
    assert list(shard.groups[GROUP].partitions) == [(tid("audit"), 0)]
    assert shard.next_deadline_ms() is not None  # audit's lock and the sessions remain


def test_closing_a_session_that_names_its_partitions_releases_only_those():
    shard = new_shard()
    join(shard, "a")
    got = fetch(shard, "a", ("orders", 0), ("orders", 1), end=10, max_records=8)
    assert acquired(got) == [(0, 7, 1)]  # partition 0's first 8; then one more of 1
    assert acquired(fetch(shard, "a", ("orders", 1), end=10, max_records=2)) == [(0, 1, 1)]
    req = fetch_request("a", end=10, close=True)
    req.released = [m.TopicPartitions(tid("orders"), [0])]  # the session at one broker
    assert shard.handle(req).response.error_code == 0
    group = shard.groups[GROUP]
    assert not group.partitions[(tid("orders"), 0)].acquired_by("a")
    assert group.partitions[(tid("orders"), 1)].acquired_by("a")  # still its, elsewhere
