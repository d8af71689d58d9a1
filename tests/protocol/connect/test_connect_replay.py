"""Replaying a shard's Connect records rebuilds the shard: the load path of a restarted
partition, for Connect groups.

Random runs of the events of ``test_connect_stateful`` (joins, heartbeats, slow stops, lost
replies, leaves, static leaves and returns, kills, assignor switches, client-side computations
on time, late or never, connector changes, time jumps) collect every record the shard wrote.
The records go through the codec and into a fresh shard with the same config and the final
metadata image, which must hold equal ``ConnectGroup`` state, describe and list the same
groups, and answer the workers' next heartbeats exactly as the original does; the same holds
when the first part of the log is compacted (the latest record of each key, no tombstones).
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis.stateful import run_state_machine_as_test

from protocol import messages as m
from protocol.connect import units as u
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard
from tests.protocol.connect.test_connect_stateful import GROUP, IN, ConnectGroupEvents
from tests.protocol.test_replay import compacted, loaded, through_the_codec

SETTINGS = settings(
    max_examples=120,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def assert_same_connect_groups(
    original: GroupCoordinatorShard, replayed: GroupCoordinatorShard
) -> None:
    assert sorted(replayed.groups) == sorted(original.groups)
    for gid, group in original.groups.items():
        assert replayed.groups[gid] == group, f"group {gid}:\n{replayed.groups[gid]}\n!=\n{group}"
    assert replayed.history.causes == original.history.causes
    describe = m.ConnectGroupDescribeRequest([*sorted(original.groups), "unknown"])
    assert replayed.handle(describe).response == original.handle(describe).response
    listing = m.ListGroupsRequest()
    assert replayed.handle(listing).response == original.handle(listing).response


class ReplayedConnectEvents(ConnectGroupEvents):
    """The events of the Connect state machine; only what the log rebuilds is judged."""

    def records(self) -> list[Record]:
        return [r for batch in self.journal for r in batch]

    def answer_alike(self, replayed: GroupCoordinatorShard) -> None:
        for w in self.workers:
            if w.status == IN and w.epoch > 0:
                req = m.ConnectGroupHeartbeatRequest(
                    GROUP, w.member_id, w.epoch, connectors_and_tasks=u.to_wire(w.runs)
                )
                a, b = self.shard.handle(req), replayed.handle(req)
                assert (b.response, b.records) == (a.response, a.records), w.member_id

    def teardown(self) -> None:
        records = through_the_codec(self.records())
        replayed = loaded(self.shard, records)
        assert_same_connect_groups(self.shard, replayed)
        n = len(records)
        for k in sorted({n // 3, 2 * n // 3}):
            from_snapshot = loaded(self.shard, compacted(records[:k]) + records[k:])
            assert_same_connect_groups(self.shard, from_snapshot)
        self.answer_alike(replayed)


def test_connect_records_survive_the_codec_and_rebuild_the_same_groups():
    run_state_machine_as_test(ReplayedConnectEvents, settings=SETTINGS)
