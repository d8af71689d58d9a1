"""A shard's state as Arrow tables: fixed schemas, and rows that say what describe says.

Pure: a ``GroupCoordinatorShard`` driven by real heartbeats (``tests.protocol.driver``), no Ray.
Classic groups are placed in the shard directly, as a loaded coordinator would hold them.
"""

from __future__ import annotations

import dataclasses

import pyarrow as pa

from actors.tools import state_tables
from actors.tools.state_tables import SCHEMAS, TABLES, shard_tables
from protocol import group_types
from protocol import messages as m
from protocol.classic.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.classic.group import ClassicGroup, ClassicMember
from protocol.records import OffsetCommitValue, RebalanceCauseEntry
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import Member, image


def converged_shard() -> tuple[GroupCoordinatorShard, list[Member]]:
    """Group ``g``: a (foo) and b (foo, bar), stable; then c joins and a, b must revoke."""
    shard = GroupCoordinatorShard(metadata=image(foo=4, bar=2))
    a = Member(shard, "a", topics=["foo"])
    b = Member(shard, "b", topics=["foo", "bar"], instance_id="b-static")
    for _ in range(4):
        a.heartbeat()
        b.heartbeat()
    assert shard.groups["g"].state == "stable"
    c = Member(shard, "c", topics=["foo"])
    c.join()
    a.heartbeat()
    b.heartbeat()
    return shard, [a, b, c]


def classic_member(mid: str, topics: list[str], assigned: list, instance: str | None = None,
                   assignment: bytes | None = None) -> ClassicMember:
    sub = encode_subscription(Subscription(topics, rack_id="r1"))
    return ClassicMember(
        member_id=mid, group_instance_id=instance, client_id=f"{mid}-client",
        client_host="/10.0.0.1", rebalance_timeout_ms=60_000, session_timeout_ms=45_000,
        protocol_type="consumer", protocols=[("range", sub)],
        assignment=encode_assignment(Assignment(assigned)) if assignment is None else assignment,
    )


def add_classic_group(shard: GroupCoordinatorShard) -> ClassicGroup:
    group = ClassicGroup("cg", state="stable", generation_id=5, protocol_type="consumer",
                         protocol_name="range")
    group.add(classic_member("x", ["foo"], [("foo", [0, 1])], instance="x-static"))
    group.add(classic_member("y", ["foo"], [("foo", [2, 3])]))
    group.add(classic_member("z", ["foo"], [], assignment=b"\xc1not msgpack"))
    shard.groups[group.group_id] = group
    shard.history.causes[group.group_id] = [  # kept per group id, apart from the group
        RebalanceCauseEntry(1_000, 4, "member x joined", "x", "x-static"),
        RebalanceCauseEntry(2_000, 5, "topic_metadata_change"),
    ]
    return group


def rows(table: pa.Table, **where) -> list[dict]:
    return [r for r in table.to_pylist() if all(r[k] == v for k, v in where.items())]


def assignment_of(table: pa.Table, group_id: str, member_id: str, **where) -> dict:
    """{topic_id: [partitions]} of one member, as describe lists it."""
    out: dict[str, list[int]] = {}
    for r in rows(table, group_id=group_id, member_id=member_id, **where):
        out.setdefault(r["topic_id"], []).append(r["partition"])
    return {t: sorted(ps) for t, ps in sorted(out.items())}


def described(parts: list[m.DescribedTopicPartitions]) -> dict:
    return {tp.topic_id: sorted(tp.partitions) for tp in parts if tp.partitions}


# ---------------------------------------------------------------------- tests


def test_an_empty_shard_gives_eight_empty_tables_with_their_schemas():
    tables = shard_tables(GroupCoordinatorShard())
    assert tuple(tables) == TABLES == (
        "groups", "members", "target_assignment", "current_assignment", "offsets", "rebalances",
        "connect_assignment", "streams_tasks",
    )
    for name, table in tables.items():
        assert table.schema == SCHEMAS[name]
        assert table.num_rows == 0


def test_consumer_group_rows_say_what_describe_says():
    shard, _ = converged_shard()
    tables = shard_tables(shard)
    for table in tables.values():
        assert table.schema == SCHEMAS[table_name(tables, table)]
    d = shard.handle(m.ConsumerGroupDescribeRequest(group_ids=["g"])).response.groups[0]

    [group] = rows(tables["groups"])
    assert group == {
        "group_id": "g", "group_type": "consumer", "protocol_type": "consumer",
        "state": d.group_state, "group_epoch": d.group_epoch,
        "assignment_epoch": d.assignment_epoch, "assignor": d.assignor_name,
        "member_count": len(d.members),
    }
    assert [r["member_id"] for r in rows(tables["members"])] == [dm.member_id for dm in d.members]
    for dm in d.members:
        [mem] = rows(tables["members"], member_id=dm.member_id)
        assert (mem["member_epoch"], mem["state"], mem["instance_id"], mem["rack_id"]) == (
            dm.member_epoch, dm.member_state, dm.instance_id, dm.rack_id
        )
        assert mem["subscribed_topics"] == dm.subscribed_topic_names
        assert mem["protocol"] == "consumer"
        # what it holds, partitions it is still revoking included, as Kafka's describe shows
        held = assignment_of(tables["current_assignment"], "g", dm.member_id)
        assert held == described(dm.assignment.topic_partitions)
        target = assignment_of(tables["target_assignment"], "g", dm.member_id)
        assert target == described(dm.target_assignment.topic_partitions)
    names = {(r["topic_id"], r["topic_name"]) for r in tables["target_assignment"].to_pylist()}
    assert names == {("foo-id", "foo"), ("bar-id", "bar")}


def table_name(tables: dict, table: pa.Table) -> str:
    return next(name for name, t in tables.items() if t is table)


def test_partitions_a_member_must_still_revoke_are_marked_pending_revocation():
    shard, _ = converged_shard()
    current = shard_tables(shard)["current_assignment"]
    group = shard.groups["g"]
    pending = {
        (r["member_id"], r["topic_id"], r["partition"])
        for r in rows(current, pending_revocation=True)
    }
    expected = {
        (mid, t, p)
        for mid, mem in group.members.items()
        for t, ps in mem.partitions_pending_revocation.items()
        for p in ps
    }
    assert pending == expected != set()
    # A partition is never in two members' current assignment (invariant 1).
    owned = [(r["topic_id"], r["partition"]) for r in current.to_pylist()]
    assert len(owned) == len(set(owned))


def test_a_regex_subscription_is_exported_with_its_pattern():
    shard = GroupCoordinatorShard(metadata=image(foo=2, fob=1))
    shard.handle(m.ConsumerGroupHeartbeatRequest(
        "rg", "r", 0, rebalance_timeout_ms=60_000, subscribed_topic_regex="fo.*",
        topic_partitions=[],
    ))
    [mem] = rows(shard_tables(shard)["members"], group_id="rg")
    assert mem["subscribed_topic_regex"] == "fo.*"
    assert mem["subscribed_topics"] == []


def test_classic_group_rows_come_from_its_consumer_protocol_bytes():
    shard, _ = converged_shard()
    add_classic_group(shard)
    tables = shard_tables(shard)
    [group] = rows(tables["groups"], group_id="cg")
    assert group == {
        "group_id": "cg", "group_type": "classic", "protocol_type": "consumer",
        "state": "stable", "group_epoch": 5, "assignment_epoch": -1, "assignor": "range",
        "member_count": 3,
    }
    members = {r["member_id"]: r for r in rows(tables["members"], group_id="cg")}
    assert sorted(members) == ["x", "y", "z"]
    assert members["x"]["instance_id"] == "x-static"
    assert members["x"]["rack_id"] == "r1"
    assert members["x"]["subscribed_topics"] == ["foo"]
    assert members["x"]["member_epoch"] == 5
    assert {r["protocol"] for r in members.values()} == {"classic"}
    for table in ("current_assignment", "target_assignment"):
        assert assignment_of(tables[table], "cg", "x") == {"foo-id": [0, 1]}
        assert assignment_of(tables[table], "cg", "y") == {"foo-id": [2, 3]}
        # z's assignment bytes are garbage: no rows, and no error.
        assert assignment_of(tables[table], "cg", "z") == {}


def test_a_classic_group_of_another_protocol_type_exports_members_without_decoding():
    shard = GroupCoordinatorShard()
    group = ClassicGroup("connect-g", state="stable", generation_id=1, protocol_type="connect",
                         protocol_name="sessioned")
    mem = classic_member("w", [], [])
    mem.protocol_type, mem.protocols, mem.assignment = "connect", [("sessioned", b"?")], b"?"
    group.add(mem)
    shard.groups[group.group_id] = group
    tables = shard_tables(shard)
    [member] = rows(tables["members"])
    assert (member["member_id"], member["subscribed_topics"], member["rack_id"]) == ("w", [], None)
    assert tables["current_assignment"].num_rows == 0


def test_rebalance_causes_of_classic_groups_become_rows():
    shard = GroupCoordinatorShard(metadata=image(foo=4))
    add_classic_group(shard)
    assert rows(shard_tables(shard)["rebalances"]) == [
        {"group_id": "cg", "time_ms": 1_000, "generation_id": 4, "reason": "member x joined",
         "member_id": "x", "group_instance_id": "x-static"},
        {"group_id": "cg", "time_ms": 2_000, "generation_id": 5,
         "reason": "topic_metadata_change", "member_id": None, "group_instance_id": None},
    ]


def test_committed_offsets_become_rows():
    shard = GroupCoordinatorShard()
    # The shape OffsetRules keeps: group -> (topic, partition) -> OffsetCommitValue.
    shard.offsets.offsets = {
        "g": {
            ("foo", 0): OffsetCommitValue(42, leader_epoch=3, metadata="m", commit_timestamp=7),
            ("foo", 1): OffsetCommitValue(9, expire_timestamp=100),
        },
    }
    assert rows(shard_tables(shard)["offsets"]) == [
        {"group_id": "g", "topic": "foo", "partition": 0, "committed_offset": 42,
         "leader_epoch": 3, "metadata": "m", "commit_timestamp": 7, "expire_timestamp": -1},
        {"group_id": "g", "topic": "foo", "partition": 1, "committed_offset": 9,
         "leader_epoch": -1, "metadata": "", "commit_timestamp": 0, "expire_timestamp": 100},
    ]


def test_a_shard_rebuilt_from_its_records_exports_the_same_tables():
    from tests.protocol.driver import TracedShard

    shard = TracedShard(metadata=image(foo=4, bar=2))
    members = [Member(shard, f"m{i}", topics=["foo", "bar"]) for i in range(3)]
    for _ in range(5):
        for mem in members:
            mem.heartbeat()
    fresh = GroupCoordinatorShard(shard.config, shard.image)
    for record in shard.journal:
        fresh.replay(record)
    assert shard_tables(fresh) == shard_tables(shard)


def test_many_members_export_in_one_pass():
    shard = GroupCoordinatorShard(metadata=image(foo=2_000))
    members = [Member(shard, f"m{i}", topics=["foo"]) for i in range(500)]
    shard.handle_batch([mem.join_request() for mem in members])
    tables = shard_tables(shard)
    assert tables["members"].num_rows == 500
    assert tables["target_assignment"].num_rows == 2_000
    assert rows(tables["groups"])[0]["member_count"] == 500


def test_offsets_a_member_commits_are_exported():
    shard, (a, _, _) = converged_shard()
    [foo_p, *_] = a.owned["foo-id"]
    resp = shard.handle(m.OffsetCommitRequest(
        "g", a.epoch, a.member_id, topics=[m.OffsetCommitRequestTopic("foo", [
            m.OffsetCommitRequestPartition(foo_p, 77, committed_leader_epoch=2,
                                           committed_metadata="ckpt"),
        ])],
    )).response
    assert resp.error_code == 0 and resp.topics[0].partitions[0].error_code == 0
    [row] = rows(shard_tables(shard)["offsets"])
    assert (row["group_id"], row["topic"], row["partition"], row["committed_offset"],
            row["leader_epoch"], row["metadata"]) == ("g", "foo", foo_p, 77, 2, "ckpt")


def test_a_consumer_groups_epoch_bumps_are_rebalance_rows_with_their_causes():
    shard = GroupCoordinatorShard(metadata=image(foo=4))
    join = m.ConsumerGroupHeartbeatRequest(group_id="kg", member_id="a", member_epoch=0,
                                           rebalance_timeout_ms=60_000,
                                           subscribed_topic_names=["foo"], topic_partitions=[])
    shard.handle(join)
    shard.handle(m.ConsumerGroupHeartbeatRequest(group_id="kg", member_id="a", member_epoch=-1))
    causes = rows(shard_tables(shard)["rebalances"], group_id="kg")
    assert [(c["generation_id"], c["reason"], c["member_id"]) for c in causes] == [
        (0, "new member joined", "a"),
        (1, "member left the group", "a"),
    ]


def test_classic_workers_of_a_converted_connect_group_export_as_classic():
    from tests.protocol.migration.connect_sim import GROUP, MigrationSim

    sim = MigrationSim({"sink": 2})
    sim.add_classic("c0")
    sim.settle()
    sim.add_new("n0")
    sim.settle()
    members = rows(shard_tables(sim.shard)["members"], group_id=GROUP)
    assert sorted(r["protocol"] for r in members) == ["classic", "connect"]


def test_a_group_type_without_a_writer_still_exports_its_groups_rows(monkeypatch):
    """A row of the group-type table without an export writer shows in ``groups`` still."""
    shard, _ = converged_shard()
    new_type = dataclasses.replace(group_types.BY_NAME["consumer"], name="novel", export=None)
    monkeypatch.setitem(group_types.BY_NAME, "novel", new_type)
    monkeypatch.setattr(group_types, "GROUP_TYPES", (*group_types.GROUP_TYPES, new_type))
    monkeypatch.setattr(state_tables, "GROUP_TYPES", group_types.GROUP_TYPES)
    monkeypatch.setattr(type(shard.groups["g"]), "group_type", "novel")
    tables = shard_tables(shard)
    (row,) = tables["groups"].to_pylist()
    group = shard.groups["g"]
    assert row == {
        "group_id": "g", "group_type": "novel", "protocol_type": "consumer",
        "state": group.state, "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch, "assignor": "", "member_count": 3,
    }
    assert tables["members"].num_rows == 0
    assert tables["target_assignment"].num_rows == 0


def test_a_streams_group_exports_its_members_and_every_task_by_role():
    from protocol.metadata import MetadataImage, TopicMetadata
    from tests.protocol.streams.driver import StreamsMember

    shard = GroupCoordinatorShard(metadata=MetadataImage([TopicMetadata("i", "input", 2)]))
    member = StreamsMember(shard, "a")
    member.join()
    shard.tick(3_000)
    for _ in range(3):
        member.heartbeat()
    tables = shard_tables(shard)
    groups = tables["groups"].to_pylist()
    assert [(g["group_id"], g["group_type"], g["state"]) for g in groups] == [
        ("app", "streams", "stable")]
    tasks = tables["streams_tasks"].to_pylist()
    assert sorted((t["kind"], t["role"], t["partition"]) for t in tasks) == [
        ("current", "active", 0), ("current", "active", 1),
        ("target", "active", 0), ("target", "active", 1)]
