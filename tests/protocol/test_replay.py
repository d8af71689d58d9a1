"""Replaying a shard's records rebuilds the shard: the load path of a restarted partition.

Random runs of the events of ``test_stateful`` (joins, heartbeats acknowledged or not, lost
replies, leaves, static leaves and returns, subscription changes, time jumps, metadata
changes, batched turns) collect every record the shard wrote. The records then go through
the codec (msgpack bytes and back) and into a fresh shard with the same config and the final
metadata image, which must describe the same groups, hold equal ``ConsumerGroup`` state and
answer the next heartbeats exactly as the original does.

A log is also loaded the way a restart after a snapshot loads it: the first part compacted
(only the latest record of each key, tombstones dropped), then the records written after.
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from protocol import messages as m
from protocol.codec import decode_record, encode_record
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard
from tests.protocol.consumer.test_stateful import JOINED, GroupEvents

SETTINGS = settings(
    max_examples=150,
    stateful_step_count=50,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def through_the_codec(records: list[Record]) -> list[Record]:
    out = []
    for r in records:
        decoded = decode_record(encode_record(r))
        assert decoded == r, f"{r} came back as {decoded}"
        out.append(decoded)
    return out


def compacted(records: list[Record]) -> list[Record]:
    """What log compaction leaves: the latest record of each key, in log order, no tombstones."""
    last = {r.key: i for i, r in enumerate(records)}
    return [r for i, r in enumerate(records) if last[r.key] == i and r.value is not None]


def loaded(original: GroupCoordinatorShard, records: list[Record]) -> GroupCoordinatorShard:
    fresh = GroupCoordinatorShard(
        config=original.config, metadata=original.image, now_ms=original.now_ms
    )
    for r in records:
        fresh.replay(r)
    return fresh


def assert_same_groups(original: GroupCoordinatorShard, replayed: GroupCoordinatorShard) -> None:
    assert sorted(replayed.groups) == sorted(original.groups)
    for gid, group in original.groups.items():
        assert replayed.groups[gid] == group, f"group {gid}:\n{replayed.groups[gid]}\n!=\n{group}"
    describe = m.ConsumerGroupDescribeRequest(group_ids=[*sorted(original.groups), "unknown"])
    assert replayed.handle(describe).response == original.handle(describe).response
    listing = m.ListGroupsRequest()
    assert replayed.handle(listing).response == original.handle(listing).response


class ReplayedEvents(GroupEvents):
    """The events of test_stateful; replies are not judged here, only what the log rebuilds."""

    strict = False

    def records(self) -> list[Record]:
        return [r for batch in self.journal for r in batch]

    def answer_alike(self, replayed: GroupCoordinatorShard) -> None:
        """The next heartbeat of every client gets the same reply and records from both. A
        client the live shard owes its assignment again (``protocol/consumer/unconfirmed.py``)
        asks as a client that finds its coordinator restarted does, whole: the set of such
        members lives beside the log, so a load starts it empty, and librdkafka sends a full
        heartbeat after a lost connection or NOT_COORDINATOR (its ``SEND_FULL_REQUEST``)."""
        for c in self.clients:
            if c.status == JOINED:
                if (c.group_id, c.member_id) in self.shard.consumer.unconfirmed:
                    c.send_full = True
                req = c.heartbeat_request(acknowledge=False)
                a, b = self.shard.handle(req), replayed.handle(req)
                assert (b.response, b.records) == (a.response, a.records), c.name


class FullLogReplay(ReplayedEvents):
    def teardown(self) -> None:
        replayed = loaded(self.shard, through_the_codec(self.records()))
        assert_same_groups(self.shard, replayed)
        self.answer_alike(replayed)


class CompactedPrefixReplay(ReplayedEvents):
    def teardown(self) -> None:
        records = through_the_codec(self.records())
        boundaries = [0]
        for batch in self.journal:
            boundaries.append(boundaries[-1] + len(batch))
        n = len(records)
        # Record halves (possibly inside one event's records) and event boundaries.
        splits = {n // 4, n // 2, 3 * n // 4, boundaries[len(boundaries) // 2]}
        for k in sorted(splits):
            replayed = loaded(self.shard, compacted(records[:k]) + records[k:])
            try:
                assert_same_groups(self.shard, replayed)
            except AssertionError as e:
                raise AssertionError(f"compacted the first {k} of {n} records: {e}") from e


def test_every_record_survives_the_codec_and_rebuilds_the_same_groups():
    run_state_machine_as_test(FullLogReplay, settings=SETTINGS)


def test_a_compacted_prefix_then_the_rest_rebuilds_the_same_groups():
    run_state_machine_as_test(CompactedPrefixReplay, settings=SETTINGS)
