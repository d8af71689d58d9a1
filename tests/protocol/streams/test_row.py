"""The streams row across the house, as any row: described by ``cohort groups --describe``,
counted by the metrics under ``streams`` (and its own state gauge and rebalance counter),
listed by ListGroups as type ``streams``, refused by classic requests, and deletable once
empty."""

from __future__ import annotations

from actors.runtime import metrics as partition_metrics
from actors.runtime.metrics import PREFIX, PartitionMetrics
from actors.tools.admin_groups import describe_members, describe_state, list_groups
from protocol import messages as m
from protocol.config import GroupConfig
from protocol.errors import Errors
from tests.actors.runtime.test_metrics import Recorded
from tests.actors.tools.test_cli import ShardCluster
from tests.protocol.streams.driver import StreamsMember, topology
from tests.protocol.streams.test_heartbeat import GID, image, ready, shard


def stable_group():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    ready(s, a, b)
    return s, a, b


def test_the_admin_tools_describe_a_streams_group_and_its_members_tasks():
    s, a, b = stable_group()
    cluster = ShardCluster(s)
    assert [(r["group"], r["type"]) for r in list_groups(cluster)] == [(GID, "streams")]
    [state], _ = describe_state(cluster, GID)
    assert (state["type"], state["state"], state["assignment_strategy"], state["members"]) == (
        "streams", "stable", "sticky", 2)
    members, _ = describe_members(cluster, GID)
    shown = {r["consumer_id"]: r["current_assignment"] for r in members}
    assert shown == {"a": "0:" + ",".join(map(str, a.active["0"])),
                     "b": "0:" + ",".join(map(str, b.active["0"]))}


def test_the_admin_tools_show_standby_tasks_apart_from_active_ones():
    s = shard()
    s.set_group_config(GID, GroupConfig(streams_num_standby_replicas=1))
    a = StreamsMember(s, "a", topology=topology(stateful=True))
    b = StreamsMember(s, "b", topology=topology(stateful=True))
    s.update_metadata(image(input=4, **{"app-store-changelog": 4}))
    ready(s, a, b)
    members, _ = describe_members(ShardCluster(s), GID)
    shown = {r["consumer_id"]: r["current_assignment"] for r in members}
    for mm in (a, b):
        assert mm.standby, "each member holds a standby of the other's tasks"
        assert shown[mm.member_id] == (
            "0:" + ",".join(map(str, mm.active["0"]))
            + ";0 (standby):" + ",".join(map(str, mm.standby["0"])))


def test_a_streams_group_is_counted_under_its_label_with_its_states(monkeypatch):
    s, _, _ = stable_group()
    monkeypatch.setattr(partition_metrics.metrics, "Gauge", Recorded)
    monkeypatch.setattr(partition_metrics.metrics, "Counter", Recorded)
    Recorded.by_name = {}
    PartitionMetrics(0).groups(*s.census())
    assert Recorded.by_name[PREFIX + "group_count"].value(protocol="streams") == 1.0
    assert Recorded.by_name[PREFIX + "streams_group_count"].value(state="stable") == 1.0


def test_classic_requests_to_a_streams_group_are_refused_and_change_nothing():
    s, _, _ = stable_group()
    before = len(s.log)
    join = s.handle(m.JoinGroupRequest(GID, 30_000, 60_000, "", protocol_type="consumer",
                                       protocols=[m.JoinGroupRequestProtocol("range", b"")]))
    assert join.response.error_code == Errors.INCONSISTENT_GROUP_PROTOCOL
    beat = s.handle(m.HeartbeatRequest(GID, 1, "a")).response
    assert beat.error_code == Errors.UNKNOWN_MEMBER_ID
    assert len(s.log) == before


def test_a_streams_group_is_deleted_once_its_members_left():
    s, a, b = stable_group()
    (refused,) = s.handle(m.DeleteGroupsRequest([GID])).response.results
    assert refused.error_code == Errors.NON_EMPTY_GROUP
    a.leave()
    b.leave()
    (done,) = s.handle(m.DeleteGroupsRequest([GID])).response.results
    assert done.error_code == Errors.NONE and GID not in s.groups
