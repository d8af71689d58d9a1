"""The admin CLI (``cohort groups``, ``cohort configs``, ``cohort timeline``, ``cohort export``)
run as the real installed command against the session's Cohort.

Each ``cohort`` child is a second Ray driver, started as an operator's shell would
(``cli_helpers``). A child costs a Ray connect (~2 s), so the read-only queries against the
fixture's groups run at once, in parallel, and the assertions read their captured output.
"""

from __future__ import annotations

import json
import time

import pytest
import ray

from protocol import messages as m
from tests.actors.tools.cli_helpers import cohort, cohort_parallel, ok, refused, table

pytestmark = pytest.mark.ray

ORDERS, AUDIT, OTHER = "cli-orders", "cli-audit", "cli-other"
RUNNING, IDLE, GONE = "cli-running", "cli-idle", "cli-gone"
CONFIGURED = "cli-configured"


def committed(cluster, group_id: str) -> dict[tuple[str, int], int]:
    resp = cluster.call(m.OffsetFetchRequest(group_id=group_id))
    assert resp.error_code == 0, resp
    return {(t.name, p.partition_index): p.committed_offset
            for t in resp.topics for p in t.partitions}


def _until(check, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def address(cluster):
    return ray.get_runtime_context().gcs_address


@pytest.fixture(scope="module")
def groups(cluster):
    """cli-running: two members on cli-orders; cli-idle and cli-gone: their one member left."""
    for name, n in ((ORDERS, 4), (AUDIT, 2), (OTHER, 1)):
        cluster.create_topic(name, n)
    # No synthetic stream: these groups' offsets are only what the CLI commits.
    running = cluster.spawn_consumers(RUNNING, 2, topics=[ORDERS], stream=False)
    leavers = [cluster.spawn_consumer(g, topics=[ORDERS], stream=False) for g in (IDLE, GONE)]
    cluster.wait_stable(RUNNING, members=2)
    for g in (IDLE, GONE):
        cluster.wait_stable(g, members=1)
    ray.get([h.stop.remote(leave=True) for h in leavers])
    for g in (IDLE, GONE):
        _until(lambda g=g: cluster.describe(g).group_state == "empty")
    yield cluster.describe(RUNNING)
    ray.get(running.stop.remote(leave=True))
    for name in (ORDERS, AUDIT, OTHER):
        cluster.delete_topic(name)


@pytest.fixture(scope="module")
def queries(groups, address):
    """The read-only commands, run at once against the fixture's groups."""
    return cohort_parallel({
        "list_json": ["groups", "--list", "--json"],
        "list_stable": ["groups", "--list", "--state", "Stable", "--type", "consumer"],
        "describe": ["groups", "--describe", "--group", RUNNING],
        "members": ["groups", "--describe", "--group", RUNNING, "--members", "--verbose",
                    "--json"],
        "state": ["groups", "--describe", "--group", RUNNING, "--state", "--json"],
        "regex": ["groups", "--validate-regex", "cli-(orders|audit)"],
        "missing": ["groups", "--describe", "--group", "cli-missing"],
        "no_timeline": ["timeline", "--group", "cli-never-seen", "--out", "/nonexistent/t.png"],
        "bad_out": ["timeline", "--group", RUNNING, "--out", "/nonexistent/t.png"],
    }, address)


# ----------------------------------------------------------------------------- groups: read


def test_list_shows_each_group_with_its_type_and_state_and_filters_by_state(queries):
    listed = {g["group"]: g for g in json.loads(ok(queries["list_json"]))}
    assert listed[RUNNING]["type"] == "consumer" and listed[RUNNING]["state"] == "stable"
    assert listed[IDLE]["state"] == "empty"
    rows = table(ok(queries["list_stable"]))
    assert rows[0] == ["GROUP", "TYPE", "STATE"]
    assert [RUNNING, "consumer", "Stable"] in rows  # Kafka's spelling in the table
    assert IDLE not in {r[0] for r in rows}


def test_describe_shows_every_assigned_partition_with_its_member_as_kafka_does(queries, groups):
    rows = table(ok(queries["describe"]))
    assert rows[0] == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                       "CONSUMER-ID", "HOST", "CLIENT-ID"]
    owner = {(tp.topic_name, p): mem.member_id for mem in groups.members
             for tp in mem.assignment.topic_partitions for p in tp.partitions}
    shown = {(r[1], int(r[2])): r[6] for r in rows[1:]}
    assert shown == owner and len(shown) == 4
    assert all(r[3:6] == ["-", "-", "-"] for r in rows[1:])  # no commits, no log


def test_describe_members_and_state_views_as_json(cluster, queries, groups):
    members = json.loads(ok(queries["members"]))
    assert {r["consumer_id"] for r in members} == {mem.member_id for mem in groups.members}
    assert sum(r["partitions"] for r in members) == 4
    assert all(r["current_epoch"] == groups.group_epoch for r in members)
    assert all(r["current_assignment"].startswith(f"{ORDERS}:") for r in members)
    [state] = json.loads(ok(queries["state"]))
    assert state["state"] == "stable" and state["members"] == 2
    assert state["assignment_strategy"] == "uniform"
    assert state["coordinator"] == f"offsets-{cluster.partition_for(RUNNING)}"


def test_validate_regex_lists_the_matching_topics_and_refuses_a_bad_pattern(queries):
    rows = table(ok(queries["regex"]))
    assert rows == [["TOPIC", "PARTITIONS"], [AUDIT, "2"], [ORDERS, "4"]]
    # Refused before any Ray connect: no --address needed.
    err = refused(cohort("groups", "--validate-regex", "cli-("), "INVALID_REGULAR_EXPRESSION")
    assert err.startswith("Error: invalid regular expression 'cli-('")


def test_a_missing_group_is_an_error_naming_it(queries):
    err = refused(queries["missing"], "GROUP_ID_NOT_FOUND")
    assert err.startswith("Error: Consumer group 'cli-missing' does not exist.")
    assert queries["missing"].stdout == ""


# ----------------------------------------------------------------------------- groups: change


def test_reset_of_a_running_group_is_refused_and_changes_nothing(cluster, groups, address):
    done = cohort("groups", "--reset-offsets", "--group", RUNNING, "--topic", ORDERS,
                  "--to-earliest", "--execute", address=address)
    err = refused(done, "NON_EMPTY_GROUP")
    assert "can only be reset if the group 'cli-running' is inactive" in err
    assert committed(cluster, RUNNING) == {}


def test_reset_execute_on_an_empty_group_commits_and_describe_shows_it(cluster, groups, address):
    done = cohort("groups", "--reset-offsets", "--group", IDLE, "--topic", f"{ORDERS}:0,1",
                  "--topic", AUDIT, "--to-offset", "7", "--execute", "--json", address=address)
    plan = json.loads(ok(done))
    assert [(r["topic"], r["partition"], r["new_offset"]) for r in plan] == [
        (AUDIT, 0, 7), (AUDIT, 1, 7), (ORDERS, 0, 7), (ORDERS, 1, 7),
    ]
    assert committed(cluster, IDLE) == {(AUDIT, 0): 7, (AUDIT, 1): 7, (ORDERS, 0): 7,
                                        (ORDERS, 1): 7}
    shown = cohort_parallel({
        "describe": ["groups", "--describe", "--group", IDLE, "--offsets", "--json"],
        "latest": ["groups", "--reset-offsets", "--group", IDLE, "--topic", ORDERS,
                   "--to-latest"],
        "unknown_topic": ["groups", "--reset-offsets", "--group", IDLE, "--topic", "cli-nope",
                          "--to-earliest", "--execute"],
    }, address)
    rows = json.loads(ok(shown["describe"]))
    assert {(r["topic"], r["partition"]): r["current_offset"] for r in rows} == {
        (AUDIT, 0): 7, (AUDIT, 1): 7, (ORDERS, 0): 7, (ORDERS, 1): 7,
    }
    assert all(r["consumer_id"] is None and r["lag"] is None for r in rows)
    # A dry run (no --execute) prints the plan: "latest" is the highest committed offset.
    latest = ok(shown["latest"])
    assert latest.startswith("WARN: No action will be performed")
    assert [r[1:] for r in table(latest)[2:]] == [
        [ORDERS, "0", "7"], [ORDERS, "1", "7"], [ORDERS, "2", "0"], [ORDERS, "3", "0"],
    ]
    refused(shown["unknown_topic"], "UNKNOWN_TOPIC_OR_PARTITION")
    assert committed(cluster, IDLE)[(ORDERS, 0)] == 7  # the dry run and the refusal changed nothing


def test_delete_refuses_a_group_with_members_and_removes_an_empty_one(cluster, groups, address):
    done = cohort_parallel({
        "running": ["groups", "--delete", "--group", RUNNING],
        "empty": ["groups", "--delete", "--group", GONE],
    }, address)
    refused(done["running"], "NON_EMPTY_GROUP")
    assert ok(done["empty"]).strip() == (
        f"Deletion of requested consumer groups ('{GONE}') was successful."
    )
    listed = {g.group_id for g in cluster.list_groups()}
    assert RUNNING in listed and GONE not in listed


# ----------------------------------------------------------------------------- configs


def test_configs_alter_describe_and_delete_use_kafkas_names(cluster, address):
    ok(cohort("configs", "--group", CONFIGURED, "--alter", "--add-config",
              "consumer.session.timeout.ms=6000,consumer.heartbeat.interval.ms=500",
              address=address))
    after = cohort_parallel({
        "describe": ["configs", "--group", CONFIGURED, "--describe", "--json"],
        "bad_value": ["configs", "--group", CONFIGURED, "--alter", "--add-config",
                      "consumer.session.timeout.ms=1"],
        "unknown": ["configs", "--group", CONFIGURED, "--alter", "--add-config", "bogus=1"],
    }, address)
    described = {r["name"]: (r["value"], r["source"]) for r in json.loads(ok(after["describe"]))}
    assert described == {
        "consumer.session.timeout.ms": (6000, "DYNAMIC_GROUP_CONFIG"),
        "consumer.heartbeat.interval.ms": (500, "DYNAMIC_GROUP_CONFIG"),
    }
    assert "consumer.session.timeout.ms must be in the range" in refused(after["bad_value"],
                                                                       "INVALID_CONFIG")
    assert "Unknown group config name: bogus" in refused(after["unknown"], "INVALID_CONFIG")
    done = cohort("configs", "--group", CONFIGURED, "--alter", "--delete-config",
                  "consumer.heartbeat.interval.ms", address=address)
    assert ok(done).strip() == f"Completed updating config for group {CONFIGURED}."
    controller = ray.get_actor("controller", namespace="cohort")
    cfg = ray.get(controller.group_config.remote(CONFIGURED))
    # The refusals changed nothing; the delete went back to the broker default.
    assert (cfg.consumer_session_timeout_ms, cfg.consumer_heartbeat_interval_ms) == (6000, None)


# ----------------------------------------------------------------------------- timeline


def test_timeline_draws_consumer_timeline_files_without_a_cluster(tmp_path):
    events = {
        "c0": [{"t": 10.0, "event": "assigned", "partitions": [[ORDERS, 0], [ORDERS, 1]],
                "epoch": 1, "group_id": IDLE},
               {"t": 12.0, "event": "revoked", "partitions": [[ORDERS, 1]], "epoch": 2,
                "group_id": IDLE}],
        "c1": [{"t": 12.5, "event": "assigned", "partitions": [[ORDERS, 1]], "epoch": 2,
                "group_id": IDLE},
               {"t": 13.0, "event": "assigned", "partitions": [[OTHER, 0]], "epoch": 1,
                "group_id": "another-group"}],
    }
    (tmp_path / "tl").mkdir()
    for name, evs in events.items():
        (tmp_path / "tl" / f"{name}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in evs))
    out = tmp_path / "timeline.png"
    done = cohort("timeline", "--group", IDLE, "--timelines", str(tmp_path / "tl"),
                  "--out", str(out), "--json")
    [summary] = json.loads(ok(done))
    assert summary["members"] == 2 and summary["partitions"] == 2  # the other group's left out
    assert summary["ownerships"] == 3
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_timeline_of_a_group_that_does_not_exist_says_so(queries):
    refused(queries["no_timeline"], "Error: Consumer group 'cli-never-seen' does not exist.")


def test_timeline_to_a_directory_that_does_not_exist_is_a_clear_error(queries):
    refused(queries["bad_out"], "Error: Cannot write /nonexistent/t.png")


# ----------------------------------------------------------------------------- export


def test_export_writes_every_table_as_parquet(groups, address, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "export"
    rows = json.loads(ok(cohort("export", "--out", str(out), "--json", address=address)))
    assert [r["table"] for r in rows] == ["groups", "members", "target_assignment",
                                          "current_assignment", "offsets", "rebalances",
                                          "connect_assignment", "streams_tasks"]
    exported = pq.read_table(out / "groups").to_pylist()
    by_id = {g["group_id"]: g for g in exported}
    assert by_id[RUNNING]["member_count"] == 2 and by_id[RUNNING]["state"] == "stable"
    assert next(r["rows"] for r in rows if r["table"] == "groups") == len(exported)


# ----------------------------------------------------------------------------- pure helpers


def test_format_table_aligns_columns_and_shows_missing_values_as_dashes():
    from actors.tools.admin import format_table

    text = format_table([("GROUP", "g"), ("LAG", "lag"), ("HOST", "host")],
                        [{"g": "a-long-name", "lag": None, "host": ""}, {"g": "b", "lag": 3}])
    assert text.splitlines() == [
        "GROUP       LAG HOST",
        "a-long-name -   -",
        "b           3   -",
    ]


def test_config_changes_are_checked_before_anything_is_sent():
    from actors.tools.admin import AdminError
    from actors.tools.admin_configs import altered_config, parse_config_pairs
    from protocol.config import GroupConfig
    from protocol.errors import Errors

    current = GroupConfig(consumer_session_timeout_ms=6000, consumer_heartbeat_interval_ms=500)
    add = parse_config_pairs("consumer.session.timeout.ms=9000")
    assert altered_config(current, add, ["consumer.heartbeat.interval.ms"]) == GroupConfig(9000)
    for add, delete in (({"consumer.session.timeout.ms": "x"}, []), ({}, ["nope"])):
        with pytest.raises(AdminError) as e:
            altered_config(current, add, delete)
        assert e.value.error == Errors.INVALID_CONFIG


# ----------------------------------------------------------------------------- classic groups
# Classic consumers do not run on Ray yet, so the classic side of ``actors.tools.admin_*``
# runs against one shard in this process: the same requests, answered by the same rules.


class ShardCluster:
    """What ``actors.tools.admin_*`` ask of a ``Cluster``, answered by one in-process shard."""

    num_partitions = 1

    def __init__(self, shard) -> None:
        self.shard = shard

    def call(self, request):
        return self.shard.handle(request).response

    def describe(self, group_id: str):
        return self.call(m.ConsumerGroupDescribeRequest(group_ids=[group_id])).groups[0]

    def list_groups(self, states=(), types=()):
        return self.call(m.ListGroupsRequest(list(states), list(types))).groups

    def partition_for(self, group_id: str) -> int:
        return 0

    def topics(self):
        return self.shard.image.topics()

    def query(self, group_id: str, fn):
        return fn(self.shard)

    def upstream_end_offsets(self, partitions):
        return {}  # no upstream: Cohort's stream has no end (LOG-END-OFFSET and LAG stay "-")


def _classic_shard():
    from protocol.classic.consumer_protocol import (
        Assignment,
        Subscription,
        encode_assignment,
        encode_subscription,
    )
    from protocol.classic.records import GroupMemberMetadata, GroupMetadataKey, GroupMetadataValue
    from protocol.metadata import MetadataImage, TopicMetadata
    from protocol.records import Record
    from protocol.shard import GroupCoordinatorShard

    shard = GroupCoordinatorShard(metadata=MetadataImage([TopicMetadata("foo-id", "foo", 3)]))
    members = {"m1": [("foo", [0, 2])], "m2": [("foo", [1])]}
    shard.replay(Record(GroupMetadataKey("classic-g"), GroupMetadataValue(
        protocol_type="consumer", generation=3, protocol_name="range", leader="m1",
        current_state_timestamp=0, state="stable",
        members=tuple(
            GroupMemberMetadata(
                member_id=mid, group_instance_id=None, client_id=f"client-{mid}",
                client_host="/10.0.0.1", rebalance_timeout_ms=60_000, session_timeout_ms=45_000,
                subscription=encode_subscription(Subscription(["foo"])),
                assignment=encode_assignment(Assignment(parts)),
            )
            for mid, parts in members.items()
        ),
    )))
    return ShardCluster(shard)


def test_a_classic_group_is_described_through_describe_groups_with_decoded_assignments():
    from actors.tools.admin import AdminError
    from actors.tools.admin_groups import describe_members, describe_offsets, describe_state
    from actors.tools.admin_offsets import plan_reset

    cluster = _classic_shard()
    commit = m.OffsetCommitRequest(group_id="classic-g", generation_id_or_member_epoch=3,
                                   member_id="m1", topics=[m.OffsetCommitRequestTopic(
                                       "foo", [m.OffsetCommitRequestPartition(2, 11)])])
    assert cluster.call(commit).topics[0].partitions[0].error_code == 0
    rows, notes = describe_offsets(cluster, "classic-g")
    assert notes == []
    assert [(r["partition"], r["current_offset"], r["consumer_id"], r["client_id"])
            for r in rows] == [(0, None, "m1", "client-m1"), (1, None, "m2", "client-m2"),
                               (2, 11, "m1", "client-m1")]
    [state], _ = describe_state(cluster, "classic-g")
    assert (state["type"], state["state"], state["assignment_strategy"], state["group_epoch"],
            state["members"]) == ("classic", "stable", "range", 3, 2)
    members, _ = describe_members(cluster, "classic-g")
    assert {r["consumer_id"]: r["current_assignment"] for r in members} == {
        "m1": "foo:0,2", "m2": "foo:1"}
    with pytest.raises(AdminError, match="inactive, but the current state is Stable"):
        plan_reset(cluster, "classic-g", ["foo"], "earliest")


def test_a_group_known_only_by_its_offsets_is_an_empty_group_that_can_be_reset():
    from actors.tools.admin import AdminError
    from actors.tools.admin_groups import delete_group, describe_offsets
    from actors.tools.admin_offsets import execute_reset, plan_reset

    cluster = _classic_shard()
    execute_reset(cluster, "simple-g", [
        {"group": "simple-g", "topic": "foo", "partition": 0, "new_offset": 5},
    ])
    # Listed as Kafka lists a group known only by its offsets (an empty classic group).
    assert "simple-g" in {g.group_id for g in cluster.list_groups()}
    rows, notes = describe_offsets(cluster, "simple-g")
    assert [(r["topic"], r["partition"], r["current_offset"], r["consumer_id"]) for r in rows] \
        == [("foo", 0, 5, None)]
    assert notes == ["Consumer group 'simple-g' has no active members."]
    plan = plan_reset(cluster, "simple-g", ["foo"], "latest")
    assert [r["new_offset"] for r in plan] == [5, 0, 0]
    delete_group(cluster, "simple-g")
    with pytest.raises(AdminError, match="Consumer group 'simple-g' does not exist"):
        describe_offsets(cluster, "simple-g")
