"""The client actors' timeline file: every event a member records reaches it, past the bound.

Pure: a ``ConsumerMemberClient`` fed hand-made replies and the ``TimelineSink`` both client
actors flush through, as ``ConsumerClient._flush_timeline`` does after each exchange; no Ray.
"""

from __future__ import annotations

import json

from actors.clients.timeline import TimelineSink
from protocol import messages as m
from protocol import partitions as pm
from protocol.client.consumer import ConsumerMemberClient

GROUP = "g"
CAP = 3  # the member keeps its newest 3 events


def reply(epoch: int, assigned: list[int]) -> m.ConsumerGroupHeartbeatResponse:
    return m.ConsumerGroupHeartbeatResponse(
        member_id="a", member_epoch=epoch, heartbeat_interval_ms=200,
        assignment=m.HeartbeatAssignment(
            assigned_topic_partitions=pm.to_wire(pm.normalize({"foo": assigned})),
            pending_topic_partitions=[],
        ),
    )


def read(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def flush(sink: TimelineSink, member: ConsumerMemberClient) -> None:
    sink.collect("member", member.events_recorded, lambda: member.timeline, group_id=GROUP)
    sink.write()


def test_events_recorded_after_the_timeline_is_full_still_reach_the_file(tmp_path):
    path = tmp_path / "consumer.jsonl"
    sink = TimelineSink(path)
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"], timeline_max_events=CAP)
    for i in range(6):  # takes partition i, gives back i - 1: 11 events, far past the cap
        a.poll(float(i))
        a.on_response(float(i), reply(i + 1, [i]))
        flush(sink, a)
    assert a.events_recorded == 11 and len(a.timeline) == CAP
    events = read(path)
    assert [(e["event"], e["epoch"]) for e in events] == [("assigned", 1)] + [
        pair for i in range(2, 7) for pair in (("revoked", i), ("assigned", i))
    ]
    assert all(e["group_id"] == GROUP for e in events)


def test_events_dropped_before_a_flush_are_skipped_not_repeated(tmp_path):
    path = tmp_path / "consumer.jsonl"
    sink = TimelineSink(path)
    a = ConsumerMemberClient(GROUP, "a", topics=["foo"], timeline_max_events=CAP)
    for i in range(3):  # 5 events recorded, the newest 3 kept
        a.poll(float(i))
        a.on_response(float(i), reply(i + 1, [i]))
    flush(sink, a)
    flush(sink, a)  # nothing new: nothing written
    assert [(e["event"], e["epoch"]) for e in read(path)] == [
        ("assigned", 2), ("revoked", 3), ("assigned", 3),
    ]


def test_a_source_that_keeps_everything_is_read_by_its_length(tmp_path):
    path = tmp_path / "progress.jsonl"
    sink = TimelineSink(path)
    events: list[dict] = []
    for n in range(4):
        events.append({"t": float(n), "event": "committed"})
        sink.collect("progress", len(events), lambda: events, member_id="a")
    sink.write()
    assert [e["t"] for e in read(path)] == [0.0, 1.0, 2.0, 3.0]
    assert all(e["member_id"] == "a" for e in read(path))


def test_without_a_path_nothing_is_written(tmp_path):
    sink = TimelineSink(None)
    sink.collect("member", 1, lambda: [{"t": 0.0}])
    sink.write()
    assert list(tmp_path.iterdir()) == []
