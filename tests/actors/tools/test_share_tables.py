"""A share group's export rows: its group, members and assignments, from the shard's state
(pure: a shard driven by share heartbeats, no Ray)."""

from __future__ import annotations

from actors.tools.state_tables import shard_tables
from tests.protocol.share.helpers import GROUP, heartbeat, join, new_shard, tid


def test_share_group_rows_say_what_describe_says():
    shard = new_shard()
    join(shard, "a")
    join(shard, "b")
    heartbeat(shard, "a", 2, rack_id="r1")  # a new share group starts at 1 (KAFKA-20268)
    tables = shard_tables(shard)
    [group] = tables["groups"].to_pylist()
    assert (group["group_id"], group["group_type"], group["protocol_type"], group["state"],
            group["group_epoch"], group["assignor"], group["member_count"]) == (
        GROUP, "share", "share", "stable", 3, "simple", 2)
    members = {r["member_id"]: r for r in tables["members"].to_pylist()}
    assert members["a"]["rack_id"] == "r1" and members["a"]["protocol"] == "share"
    assert members["b"]["subscribed_topics"] == ["orders"]
    current = {(r["member_id"], r["partition"]) for r in tables["current_assignment"].to_pylist()}
    assert current == {("a", 0), ("a", 2), ("b", 1)}
    target = tables["target_assignment"].to_pylist()
    assert {r["topic_id"] for r in target} == {tid("orders")}
    assert {r["topic_name"] for r in target} == {"orders"} and len(target) == 3
