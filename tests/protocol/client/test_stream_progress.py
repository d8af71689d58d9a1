"""The synthetic stream's bookkeeping: fetch before processing, commit as it goes, a last
commit for revoked partitions, none for lost ones."""

from __future__ import annotations

from protocol import messages as m
from protocol.client.stream_progress import StreamProgress
from protocol.errors import Errors

TP = ("foo", 0)


def fetched(progress: StreamProgress, offset: int, now_s: float = 0.0) -> None:
    (req,) = progress.requests("m1", 3, now_s)
    assert isinstance(req, m.OffsetFetchRequest) and req.member_epoch == 3
    reply = m.OffsetFetchResponse(topics=[m.OffsetFetchResponseTopic("foo", [
        m.OffsetFetchResponsePartition(0, committed_offset=offset)])])
    progress.on_reply(req, reply, now_s)


def ack(req: m.OffsetCommitRequest, error: Errors = Errors.NONE) -> m.OffsetCommitResponse:
    return m.OffsetCommitResponse(topics=[
        m.OffsetCommitResponseTopic(t.name, [
            m.OffsetCommitResponsePartition(p.partition_index, error) for p in t.partitions])
        for t in req.topics])


def test_an_assigned_partition_is_processed_from_its_committed_offset_only_once_fetched():
    p = StreamProgress("g", records_per_s=10, commit_interval_s=1.0)
    p.assigned([TP])
    p.advance(0.0)
    p.advance(5.0)
    assert p.partitions[TP].position is None  # nothing before the fetch answers
    fetched(p, 120, now_s=5.0)
    p.advance(6.0)
    assert p.partitions[TP].position == 130


def test_progress_is_committed_with_the_member_epoch_when_due():
    p = StreamProgress("g", records_per_s=10, commit_interval_s=1.0)
    p.assigned([TP])
    fetched(p, -1)  # nothing committed yet: start at 0
    p.advance(0.0)
    p.advance(2.0)
    (commit,) = p.requests("m1", 3, now_s=2.0)
    assert commit.generation_id_or_member_epoch == 3 and commit.member_id == "m1"
    assert commit.topics[0].partitions[0].committed_offset == 20
    p.on_reply(commit, ack(commit), 2.0)
    assert [e["event"] for e in p.events] == ["processed", "committed"]
    assert p.events[0]["from"] == 0 and p.events[0]["to"] == 20
    assert p.requests("m1", 3, now_s=2.5) == []  # not due again yet, nothing new


def test_a_revoked_partition_owes_a_last_commit_and_a_lost_one_owes_none():
    p = StreamProgress("g", records_per_s=10, commit_interval_s=100.0)
    p.assigned([TP, ("foo", 1)])
    fetched_req = p.requests("m1", 3, 0.0)[0]
    p.on_reply(fetched_req, m.OffsetFetchResponse(topics=[m.OffsetFetchResponseTopic("foo", [
        m.OffsetFetchResponsePartition(0, 5), m.OffsetFetchResponsePartition(1, 7)])]), 0.0)
    p.advance(0.0)
    p.advance(1.0)
    p.revoked([TP], now_s=1.0)
    p.lost([("foo", 1)], now_s=1.0)
    (commit,) = p.requests("m1", 3, now_s=1.0)
    assert [(t.name, [(q.partition_index, q.committed_offset) for q in t.partitions])
            for t in commit.topics] == [("foo", [(0, 15)])]
    p.on_reply(commit, ack(commit, Errors.STALE_MEMBER_EPOCH), 1.0)
    assert p.final == {}  # refused for good: not retried forever
    assert not any(e["event"] == "committed" for e in p.events)


def test_a_failed_fetch_is_sent_again():
    p = StreamProgress("g")
    p.assigned([TP])
    (req,) = p.requests("m1", 3, 0.0)
    assert p.requests("m1", 3, 0.1) == []  # in flight
    p.on_failure(req)
    assert isinstance(p.requests("m1", 3, 0.2)[0], m.OffsetFetchRequest)


def test_nothing_is_fetched_or_committed_before_the_member_has_an_epoch():
    p = StreamProgress("g")
    p.assigned([TP])
    assert p.requests("m1", 0, 0.0) == []


def test_real_records_advance_only_as_far_as_the_users_function_got_and_commit_from_there():
    p = StreamProgress("g", commit_interval_s=1.0)
    p.assigned([TP])
    fetched(p, 40)
    assert p.positions() == {TP: 40}
    p.processed(TP, 47, now_s=0.5, records=6)  # offset 45 was a transaction marker
    p.processed(TP, 47, now_s=0.6)  # nothing new: no event
    assert p.positions() == {TP: 47}
    (commit,) = p.requests("m1", 3, now_s=1.0)
    assert commit.topics[0].partitions[0].committed_offset == 47
    assert [(e["event"], e["from"], e["to"], e["records"]) for e in p.events] == [
        ("processed", 40, 47, 6)]


def test_records_of_a_partition_revoked_meanwhile_move_nothing_and_the_last_commit_stays():
    p = StreamProgress("g", commit_interval_s=100.0)
    p.assigned([TP])
    fetched(p, 10)
    p.processed(TP, 12, now_s=0.1, records=2)
    p.revoked([TP], now_s=0.2)
    p.processed(TP, 20, now_s=0.3, records=8)  # a read that was in flight: not ours now
    (commit,) = p.requests("m1", 3, now_s=0.4)
    assert commit.topics[0].partitions[0].committed_offset == 12


def test_a_position_the_log_no_longer_holds_resets_to_the_logs_start():
    p = StreamProgress("g")
    p.assigned([TP])
    fetched(p, -1)  # nothing committed: from 0, as earliest
    p.reset(TP, 300, now_s=1.0)
    assert p.positions() == {TP: 300}
    assert p.events[-1] == {"t": 1.0, "event": "reset", "partitions": [TP], "from": 0, "to": 300}
