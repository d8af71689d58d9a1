"""``cohort topics`` (kafka-topics.sh's shape), ``cohort status`` and ``cohort start`` against the
session's running Cohort, as the real installed command; and every command's ``--help``.

``cohort stop`` and the start of a new Cohort live in ``test_cli_service.py``, on a Ray of their
own: stopping this session's Cohort would pull it from under every other test.
"""

from __future__ import annotations

import json
import time

import pytest
import ray

from tests.actors.tools.cli_helpers import cohort, cohort_parallel, ok, refused

pytestmark = pytest.mark.ray

T1, T2, T3 = "topics-cli-a", "topics-cli-b", "topics-cli-c"


@pytest.fixture(scope="module")
def address(cluster):
    return ray.get_runtime_context().gcs_address


# ----------------------------------------------------------------------------- topics


def test_create_list_describe_alter_delete_as_kafka_topics_does(cluster, address):
    created = cohort_parallel({
        "a": ["topics", "--create", "--topic", T1, "--partitions", "3"],
        "b": ["topics", "--create", "--topic", T2, "--replication-factor", "3", "--json"],
    }, address)
    assert ok(created["a"]) == f"Created topic {T1}.\n"
    made = json.loads(ok(created["b"]))
    assert made["created"] and made["topic"] == T2 and made["topic_id"]
    try:
        shown = cohort_parallel({
            "list": ["topics", "--list", "--topic", "topics-cli-.*"],
            "list_json": ["topics", "--list", "--json"],
            "describe": ["topics", "--describe", "--topic", f"{T1},{T2}"],
            "alter": ["topics", "--alter", "--topic", T1, "--partitions", "5"],
            "again": ["topics", "--create", "--topic", T1, "--partitions", "3"],
            "again_ok": ["topics", "--create", "--topic", T1, "--if-not-exists"],
        }, address)
        assert ok(shown["list"]).splitlines() == [T1, T2]
        assert {T1, T2} <= set(json.loads(ok(shown["list_json"])))
        lines = ok(shown["describe"]).splitlines()
        ids = {t.name: t.topic_id for t in cluster.topics()}
        header = next(line for line in lines if line.startswith(f"Topic: {T2}\t"))
        assert header.split("\t") == [f"Topic: {T2}", f"TopicId: {ids[T2]}", "PartitionCount: 1",
                                      "ReplicationFactor: 0", "Configs: "]
        assert f"\tTopic: {T2}\tPartition: 0\tLeader: none\tReplicas: \tIsr: \tRacks: " in lines
        ok(shown["alter"])
        assert shown["alter"].stdout == ""  # Kafka's --alter prints nothing either
        assert {t.name: t.num_partitions for t in cluster.topics()}[T1] == 5
        err = refused(shown["again"], "TOPIC_ALREADY_EXISTS")
        assert err == ("Error while executing topic command : Topic 'topics-cli-a' already "
                       "exists. (TOPIC_ALREADY_EXISTS)\n")
        assert ok(shown["again_ok"]) == ""
        # Deleting by pattern deletes every match, as Kafka's include list does.
        ok(cohort("topics", "--delete", "--topic", "topics-cli-(a|b)", address=address))
        assert not {T1, T2} & {t.name for t in cluster.topics()}
    finally:
        for name in (T1, T2):
            if name in {t.name for t in cluster.topics()}:
                cluster.delete_topic(name)


def test_refusals_carry_kafkas_texts_and_error_names_and_change_nothing(cluster, address):
    cluster.create_topic(T3, 4)
    try:
        done = cohort_parallel({
            "shrink": ["topics", "--alter", "--topic", T3, "--partitions", "2"],
            "same": ["topics", "--alter", "--topic", T3, "--partitions", "4"],
            "missing": ["topics", "--delete", "--topic", "topics-cli-nope"],
            "missing_ok": ["topics", "--delete", "--topic", "topics-cli-nope", "--if-exists"],
            "describe_missing": ["topics", "--describe", "--topic", "topics-cli-nope"],
            "bad_name": ["topics", "--create", "--topic", "bad/name"],
            "bad_json": ["topics", "--alter", "--topic", T3, "--partitions", "1", "--json"],
        }, address)
        assert refused(done["shrink"], "INVALID_PARTITIONS").startswith(
            "Error while executing topic command : The topic topics-cli-c currently has 4 "
            "partition(s); 2 would not be an increase.")
        assert "Topic already has 4 partition(s)." in refused(done["same"], "INVALID_PARTITIONS")
        for name in ("missing", "describe_missing"):
            assert refused(done[name], "UNKNOWN_TOPIC_OR_PARTITION") == (
                "Error: Topic 'topics-cli-nope' does not exist as expected "
                "(UNKNOWN_TOPIC_OR_PARTITION)\n")
        assert ok(done["missing_ok"]) == ""
        refused(done["bad_name"], "INVALID_TOPIC_EXCEPTION")
        assert json.loads(done["bad_json"].stdout)["error"] == "INVALID_PARTITIONS"
        assert {t.name: t.num_partitions for t in cluster.topics()}[T3] == 4
    finally:
        cluster.delete_topic(T3)


def test_bad_numbers_configs_and_usage_are_refused_before_any_connect():
    # No --address and no Ray to reach: these never get that far.
    zero = cohort("topics", "--create", "--topic", "x", "--partitions", "0")
    assert refused(zero, "INVALID_PARTITIONS") == (
        "Error: The partitions must be greater than 0 (INVALID_PARTITIONS)\n")
    rf = cohort("topics", "--create", "--topic", "x", "--replication-factor", "0")
    assert "The replication factor must be between 1 and 32767 inclusive" in refused(
        rf, "INVALID_REPLICATION_FACTOR")
    no_topic = cohort("topics", "--delete")
    assert no_topic.returncode == 2 and "--delete needs --topic" in no_topic.stderr
    two = cohort("topics", "--list", "--create")
    assert two.returncode == 2 and "not allowed with argument" in two.stderr
    config = cohort("start", "--config", "group.consumer.heartbeat.interval.ms=50000")
    assert "the heartbeat interval must be below the session timeout" in refused(
        config, "INVALID_CONFIG")


# ----------------------------------------------------------------------------- status, start


def test_status_shows_every_actor_serving_with_its_process_and_restarts(cluster, address):
    done = cohort_parallel({"table": ["status"], "json": ["status", "--json"]}, address)
    report = json.loads(ok(done["json"]))
    assert report["serving"] is True and report["partitions"] == cluster.num_partitions
    assert report["storage_path"] == cluster.storage_path
    rows = {r["actor"]: r for r in report["actors"]}
    assert list(rows) == ["controller", *(f"offsets-{p}" for p in range(cluster.num_partitions))]
    # The session's other groups may come and go between the status and the partitions'
    # own answers (ci75: 3 then 0): asked again, until both say the same, within a deadline.
    deadline = time.monotonic() + 60
    while True:
        infos = [ray.get(cluster.partition(p).info.remote())
                 for p in range(cluster.num_partitions)]
        seen = [rows[f"offsets-{p}"]["groups"] for p in range(cluster.num_partitions)]
        if seen == [i["groups"] for i in infos] or time.monotonic() > deadline:
            break
        again = json.loads(ok(cohort("status", "--json", address=address)))
        rows = {r["actor"]: r for r in again["actors"]}
    for p, info in enumerate(infos):
        row = rows[f"offsets-{p}"]
        assert (row["state"], row["pid"], row["groups"]) == ("active", info["pid"], info["groups"])
        assert row["restarts"] >= 0 and row["node"] and row["load_seconds"] is not None
    assert rows["controller"]["state"] == "alive"
    lines = ok(done["table"]).splitlines()
    assert lines[0].startswith(f"Cohort on Ray {address}: serving;")
    assert lines[1].split() == ["ACTOR", "STATE", "PID", "NODE", "GROUPS", "RECORDS",
                                "LOAD-SECONDS", "RESTARTS"]
    assert [line.split()[:2] for line in lines[2:]] == [
        ["controller", "alive"], *([f"offsets-{p}", "active"]
                                   for p in range(cluster.num_partitions))]


def test_start_adopts_the_running_cohort_and_refuses_other_settings(cluster, address):
    done = cohort_parallel({
        "same": ["start"],
        "same_json": ["start", "--partitions", str(cluster.num_partitions), "--json"],
        "other": ["start", "--partitions", str(cluster.num_partitions + 2), "--storage",
                  "/tmp/cohort-elsewhere"],
        "other_config": ["start", "--config", "group.consumer.session.timeout.ms=12345"],
        "unknown_config": ["start", "--config", "no.such.key=1"],
    }, address)
    assert ok(done["same"]).startswith(
        f"Cohort is already running: {cluster.num_partitions} partitions, storage "
        f"{cluster.storage_path}")
    assert json.loads(ok(done["same_json"]))["started"] is False
    err = done["other"].stderr
    assert done["other"].returncode == 1
    assert (f"--partitions {cluster.num_partitions}, not {cluster.num_partitions + 2}" in err
            and "--storage" in err and "`cohort stop`" in err)
    assert "--config group.consumer.session.timeout.ms=4000, not 12345" in \
        done["other_config"].stderr
    assert "Unknown broker config 'no.such.key'" in done["unknown_config"].stderr
    # Nothing changed: the same partitions, the same processes.
    assert ray.get(cluster.controller().info.remote())["num_partitions"] == cluster.num_partitions


# ----------------------------------------------------------------------------- help


@pytest.mark.parametrize("command", ["start", "stop", "status", "topics", "groups", "configs",
                                     "export", "timeline", "demo", "chaos", "case-study",
                                     "connectors"])
def test_every_commands_help_ends_with_an_example(command):
    text = ok(cohort(command, "--help"))
    assert "example" in text
    assert f"cohort {command}" in text.split("example")[-1]
