"""Seed 004's rebalance triggers: each bumps the group epoch once, with its cause remembered;
what is not a trigger leaves the epoch alone."""

from __future__ import annotations

from protocol import messages as m
from protocol.config import GroupConfig
from protocol.connect import units as u
from protocol.errors import Errors
from protocol.metadata import ConnectorMetadata, MetadataImage
from protocol.shard import GroupCoordinatorShard
from tests.protocol.connect.workers import (
    GROUP,
    Worker,
    advance,
    client_assignor,
    compute,
    connectors,
    settle,
)


def epoch(shard: GroupCoordinatorShard) -> int:
    return shard.groups[GROUP].group_epoch


def last_cause(shard: GroupCoordinatorShard) -> str:
    return shard.history.of(GROUP)[-1].reason


def server_group(**tasks: int) -> tuple[GroupCoordinatorShard, list[Worker]]:
    shard = GroupCoordinatorShard(metadata=connectors(**(tasks or {"a": 2})))
    ws = [Worker(shard, "w1"), Worker(shard, "w2")]
    for w in ws:
        w.join()
    settle(ws)
    return shard, ws


def client_group() -> tuple[GroupCoordinatorShard, list[Worker]]:
    shard = GroupCoordinatorShard(metadata=connectors(a=2))
    ws = [Worker(shard, f"w{i}", assignors=[client_assignor()]) for i in (1, 2)]
    for w in ws:
        w.join()
    settle(ws)
    return shard, ws


# ---------------------------------------------------------------- worker-side triggers


def test_a_new_worker_joining_bumps_the_epoch():
    shard, _ = server_group()
    before = epoch(shard)
    Worker(shard, "w3").join()
    assert epoch(shard) == before + 1 and last_cause(shard) == "new worker joined"


def test_a_quiet_heartbeat_does_not_bump():
    shard, ws = server_group()
    before = epoch(shard)
    for w in ws:
        assert w.heartbeat().assignment is None  # nothing changed: no Assignment either
    assert epoch(shard) == before


def test_a_worker_changing_its_assignors_bumps_the_epoch():
    shard, ws = client_group()
    before = epoch(shard)
    ws[0].heartbeat(client_assignors=[client_assignor(0, 2)])
    assert epoch(shard) == before + 1 and last_cause(shard) == "worker changed its assignors"
    ws[1].heartbeat(server_assignor="incremental-cooperative")
    assert epoch(shard) == before + 2


def test_an_assignor_asking_for_a_rebalance_by_its_reason_bumps_the_epoch_once():
    shard, ws = client_group()
    before = epoch(shard)
    target = shard.groups[GROUP].target["w1"]
    due = client_assignor(
        reason=1, metadata_version=target.metadata_version, metadata_bytes=target.metadata_bytes
    )
    ws[0].heartbeat(client_assignors=[due])
    assert epoch(shard) == before + 1
    assert last_cause(shard) == (
        "worker's assignor incremental-cooperative asked for a rebalance (reason 1)"
    )
    ws[0].heartbeat(client_assignors=[due])  # the same request again: nothing new
    assert epoch(shard) == before + 1
    calm = client_assignor(
        reason=0, metadata_version=target.metadata_version, metadata_bytes=target.metadata_bytes
    )
    ws[0].heartbeat(client_assignors=[calm])  # withdrawing the request is not a new one
    assert epoch(shard) == before + 1


def test_new_assignor_metadata_bumps_but_echoing_the_targets_metadata_does_not():
    shard, ws = client_group()
    before = epoch(shard)
    target = shard.groups[GROUP].target["w2"]
    echo = client_assignor(
        metadata_version=target.metadata_version, metadata_bytes=target.metadata_bytes
    )
    ws[1].heartbeat(client_assignors=[echo])
    assert epoch(shard) == before
    ws[1].heartbeat(client_assignors=[client_assignor(metadata_bytes=b"something else")])
    assert epoch(shard) == before + 1
    assert last_cause(shard) == "worker's assignor incremental-cooperative metadata changed"


def test_a_worker_removed_by_the_coordinator_bumps_the_epoch():
    shard, ws = server_group()
    before = epoch(shard)
    ws[0].heartbeat()
    shard.tick(10_000)  # w2 never heartbeated again
    assert epoch(shard) == before + 1 and last_cause(shard) == "worker session timed out"


def test_a_worker_leaving_bumps_the_epoch():
    shard, ws = server_group()
    before = epoch(shard)
    ws[1].leave()
    assert epoch(shard) == before + 1 and last_cause(shard) == "worker left the group"


def test_a_static_worker_leaving_for_a_while_does_not_bump():
    shard = GroupCoordinatorShard(metadata=connectors(a=2))
    w = Worker(shard, "w1", instance_id="i1")
    w.join()
    before = epoch(shard)
    w.static_leave()
    assert epoch(shard) == before


# ----------------------------------------------------------- connector-side triggers


def test_adding_a_connector_bumps_the_epoch_and_it_gets_run():
    shard, ws = server_group(a=2)
    before = epoch(shard)
    shard.update_metadata(connectors(a=2, b=1))
    assert epoch(shard) == before + 1 and last_cause(shard) == "connectors changed: added b"
    settle(ws)
    assert u.configured({"a": 2, "b": 1}) == ws[0].runs | ws[1].runs


def test_removing_a_connector_bumps_the_epoch_and_its_work_stops():
    shard, ws = server_group(a=2, b=2)
    before = epoch(shard)
    shard.update_metadata(connectors(a=2))
    assert epoch(shard) == before + 1 and last_cause(shard) == "connectors changed: removed b"
    settle(ws)
    assert ws[0].runs | ws[1].runs == u.configured({"a": 2})


def test_a_connectors_task_count_changing_bumps_the_epoch():
    shard, ws = server_group(a=2)
    before = epoch(shard)
    shard.update_metadata(connectors(a=5))
    assert epoch(shard) == before + 1
    assert last_cause(shard) == "connectors changed: task count of a 2->5"
    settle(ws)
    assert ws[0].runs | ws[1].runs == u.configured({"a": 5})
    shard.update_metadata(connectors(a=1))
    settle(ws)
    assert ws[0].runs | ws[1].runs == u.configured({"a": 1})


def test_other_groups_connectors_and_an_unchanged_image_do_not_bump():
    shard, _ = server_group(a=2)
    before = epoch(shard)
    shard.update_metadata(connectors(a=2))
    other = MetadataImage(
        [], [ConnectorMetadata(GROUP, "a", 2), ConnectorMetadata("other-cluster", "x", 9)]
    )
    shard.update_metadata(other)
    assert epoch(shard) == before


def test_an_empty_group_notices_connector_changes_when_a_worker_joins():
    shard, ws = server_group(a=2)
    for w in ws:
        w.leave()
    before = epoch(shard)
    shard.update_metadata(connectors(a=2, b=3))
    assert epoch(shard) == before
    w = Worker(shard, "w9")
    w.join()
    assert w.runs == u.configured({"a": 2, "b": 3})


def test_connectors_changed_while_the_partition_was_down_bump_the_epoch_on_load():
    original = GroupCoordinatorShard(metadata=connectors(a=2))
    records = original.handle(Worker(original, "w1").join_request()).records
    replayed = GroupCoordinatorShard(metadata=connectors(a=2))
    for r in records:
        replayed.replay(r)
    before = replayed.groups[GROUP].group_epoch
    replayed.update_metadata(connectors(a=3))  # the load path applies the controller's image
    assert replayed.groups[GROUP].group_epoch == before + 1


def test_a_dynamic_group_config_sets_the_scheduled_rebalance_delay():
    shard = GroupCoordinatorShard(metadata=connectors(a=2))
    shard.set_group_config(GROUP, GroupConfig(connect_scheduled_rebalance_max_delay_ms=5_000))
    ws = [Worker(shard, "w1"), Worker(shard, "w2")]
    for w in ws:
        w.join()
    settle(ws)
    ws[1].leave()
    settle(ws[:1])
    assert ws[0].runs != u.configured({"a": 2})  # held for 5 s, not 5 min
    advance(shard, ws[:1], 5_000)
    settle(ws[:1])
    assert ws[0].runs == u.configured({"a": 2})


def test_client_side_a_worker_whose_delay_is_over_triggers_the_next_round_by_its_reason():
    """Seed 004, "Triggering Rebalances": the coordinator runs no timer for a client-side
    assignor; the worker's assignor says when (remaining_delay_ms) and sets its reason."""
    from assignors.connect import remaining_delay_ms

    shard, ws = client_group()
    held = ws[1].runs
    ws[1].leave()
    settle(ws[:1])
    assert not (ws[0].runs & held)
    target = shard.groups[GROUP].target["w1"]
    delay = remaining_delay_ms(target.metadata_bytes, target.metadata_version, 0)
    assert delay == 300_000
    before = epoch(shard)
    due = client_assignor(
        reason=1, metadata_version=target.metadata_version, metadata_bytes=target.metadata_bytes
    )
    resp = ws[0].heartbeat(client_assignors=[due])
    assert epoch(shard) == before + 1 and resp.error_code == Errors.COMPUTE_ASSIGNMENT
    assert compute(ws[0], now_ms=delay).error_code == Errors.NONE
    settle(ws[:1], now_ms=delay)
    assert ws[0].runs == u.configured({"a": 2})


def test_the_epoch_moves_once_however_many_triggers_one_event_has():
    shard, ws = server_group(a=2)
    before = epoch(shard)
    shard.update_metadata(connectors(a=3, b=1, c=2))
    assert epoch(shard) == before + 1
    req = m.ConnectGroupHeartbeatRequest(
        GROUP, "w1", ws[0].epoch, client_assignors=[client_assignor()]
    )
    shard.handle(req)
    assert epoch(shard) == before + 2
