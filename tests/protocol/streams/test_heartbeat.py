"""StreamsGroupHeartbeat's rules, pure: validation (Kafka's codes and messages), join, leave,
static membership, fencing, topology checks and configuration, statuses, the initial delay,
reconciliation and endpoints; replaying the log rebuilds the same groups."""

from __future__ import annotations

import pytest

from protocol import messages as m
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.errors import Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.records import Record
from protocol.shard import GroupCoordinatorShard
from protocol.streams import messages as sm
from protocol.streams.records import Endpoint, KeyValue, Subtopology, TopicInfo
from protocol.streams.topology import Status
from tests.protocol.streams.driver import (
    CHANGELOG_CONFIGS,
    REPARTITION_CONFIGS,
    StreamsMember,
    topology,
)

GID = "app"


class LoggingShard(GroupCoordinatorShard):
    def __init__(self, **kw) -> None:
        self.log: list[Record] = []
        super().__init__(**kw)

    def emit(self, record: Record) -> None:
        super().emit(record)
        self.log.append(record)


def image(**topics: int) -> MetadataImage:
    return MetadataImage([TopicMetadata(f"{n}-id", n, p) for n, p in topics.items()])


# No KIP-1263 assignment interval: these tests have a join or a leave assigned at the next
# heartbeat without the clock moving (the interval's own tests: test_assignment_interval.py).
CONFIG = CoordinatorConfig(group_streams_assignment_interval_ms=0)


def shard(**topics: int) -> LoggingShard:
    return LoggingShard(config=CONFIG, metadata=image(**(topics or {"input": 4})))


def ready(s: LoggingShard, *members: StreamsMember) -> None:
    """Join every member, let the initial delay pass, heartbeat until the group is stable."""
    for mm in members:
        assert mm.join().error_code == Errors.NONE
    s.tick(s.now_ms + 3_000)
    for _ in range(10):
        for mm in members:
            assert mm.heartbeat().error_code == Errors.NONE
    assert s.groups[GID].state == "stable"


def statuses(resp) -> dict[int, str]:
    return {x.status_code: x.status_detail for x in resp.status or []}


def join_request(**kw) -> sm.StreamsGroupHeartbeatRequest:
    base = dict(group_id=GID, member_id="m", member_epoch=0, rebalance_timeout_ms=1000,
                topology=topology(), active_tasks=[], standby_tasks=[], warmup_tasks=[])
    return sm.StreamsGroupHeartbeatRequest(**{**base, **kw})


# ------------------------------------------------------------------------- validation


@pytest.mark.parametrize(("changes", "code", "message"), [
    ({"member_id": " "}, Errors.INVALID_REQUEST, "MemberId can't be empty."),
    ({"group_id": ""}, Errors.INVALID_REQUEST, "GroupId can't be empty."),
    ({"instance_id": ""}, Errors.INVALID_REQUEST, "InstanceId can't be empty."),
    ({"rack_id": " "}, Errors.INVALID_REQUEST, "RackId can't be empty."),
    ({"rebalance_timeout_ms": -1}, Errors.INVALID_REQUEST,
     "RebalanceTimeoutMs must be provided in first request."),
    ({"active_tasks": [sm.TaskIds("0", [0])]}, Errors.INVALID_REQUEST,
     "ActiveTasks must be empty when (re-)joining."),
    ({"standby_tasks": None}, Errors.INVALID_REQUEST,
     "StandbyTasks must be empty when (re-)joining."),
    ({"warmup_tasks": [sm.TaskIds("0", [1])]}, Errors.INVALID_REQUEST,
     "WarmupTasks must be empty when (re-)joining."),
    ({"topology": None}, Errors.INVALID_REQUEST, "Topology must be non-null when (re-)joining."),
    ({"topology": sm.StreamsTopology(1, (Subtopology("0", ("input",), state_changelog_topics=(
        TopicInfo("c", partitions=3),)),))}, Errors.STREAMS_INVALID_TOPOLOGY,
     "Changelog topic c must have an undefined partition count, but it is set to 3."),
    ({"topology": sm.StreamsTopology(1, (Subtopology("0", source_topic_regex=("in.*",)),))},
     Errors.INVALID_REQUEST, "Regular expressions for source topics are not supported yet."),
    ({"member_epoch": -2, "topology": None}, Errors.INVALID_REQUEST, "InstanceId can't be null."),
    ({"member_epoch": -3, "topology": None}, Errors.INVALID_REQUEST,
     "MemberEpoch is -3, but must be greater than or equal to -2."),
    ({"member_epoch": 1, "topology": None, "standby_tasks": None}, Errors.INVALID_REQUEST,
     "If one task-type is non-null, all must be non-null."),
    ({"member_epoch": 1}, Errors.INVALID_REQUEST,
     "Topology can only be provided when (re-)joining."),
    ({"member_epoch": "1"}, Errors.INVALID_REQUEST, None),
])
def test_a_malformed_heartbeat_is_refused_with_kafkas_code_and_message(changes, code, message):
    s = shard()
    resp = s.handle(join_request(**changes)).response
    assert resp.error_code == code
    if message is not None:
        assert resp.error_message == message
    assert s.log == [] and s.groups == {}


def test_a_heartbeat_to_no_group_is_group_id_not_found():
    resp = shard().handle(join_request(member_epoch=1, topology=None)).response
    assert (resp.error_code, resp.error_message) == (Errors.GROUP_ID_NOT_FOUND,
                                                    "Streams group app not found.")


def test_a_streams_heartbeat_to_a_consumer_group_is_group_id_not_found():
    from tests.protocol.driver import Member
    s = shard()
    Member(s, "c", group_id=GID, topics=["input"]).heartbeat()
    resp = s.handle(join_request()).response
    assert (resp.error_code, resp.error_message) == (Errors.GROUP_ID_NOT_FOUND,
                                                    "Group app is not a streams group.")


def test_joining_a_full_group_is_group_max_size_reached():
    s = LoggingShard(config=CoordinatorConfig(group_max_size=1), metadata=image(input=4))
    assert StreamsMember(s, "a").join().error_code == Errors.NONE
    resp = StreamsMember(s, "b").join()
    assert resp.error_code == Errors.GROUP_MAX_SIZE_REACHED


# --------------------------------------------------------------------------- the topology


def test_a_join_with_another_topology_at_the_same_or_a_higher_epoch_is_refused():
    s = shard(input=4, other=2)
    assert StreamsMember(s, "a").join().error_code == Errors.NONE
    for t in (topology("other"), topology(epoch=2)):
        resp = StreamsMember(s, "b", topology=t).join()
        assert (resp.error_code, resp.error_message) == (
            Errors.INVALID_REQUEST, "Topology updates are not supported yet.")


def test_a_member_with_an_older_topology_epoch_is_told_it_is_stale():
    s = shard()
    StreamsMember(s, "a", topology=topology(epoch=2)).join()
    resp = StreamsMember(s, "b", topology=topology(epoch=1)).join()
    assert resp.error_code == Errors.NONE
    assert "behind the group's topology epoch 2" in statuses(resp)[Status.STALE_TOPOLOGY]


def test_a_newer_topology_does_not_replace_the_groups_even_once_the_group_is_empty():
    """Kafka 4.4 keeps an empty group's topology: a newer one is refused until the group is
    deleted (then the next join initializes it)."""
    s = shard(input=4, other=2)
    a = StreamsMember(s, "a")
    ready(s, a)
    a.leave()
    assert not s.groups[GID].members and s.groups[GID].topology.epoch == 1
    for t in (topology(epoch=2), topology("other", epoch=2), topology("other")):
        resp = StreamsMember(s, "b", topology=t).join()
        assert (resp.error_code, resp.error_message) == (
            Errors.INVALID_REQUEST, "Topology updates are not supported yet.")
    assert s.groups[GID].topology.epoch == 1 and not s.groups[GID].members
    (deleted,) = s.handle(m.DeleteGroupsRequest([GID])).response.results
    assert deleted.error_code == Errors.NONE
    resp = StreamsMember(s, "b", topology=topology("other", epoch=2)).join()
    assert resp.error_code == Errors.NONE and s.groups[GID].topology.epoch == 2
    assert s.groups[GID].topology.subtopologies[0].source_topics == ("other",)


def test_a_stale_member_keeps_the_groups_topology_and_is_told_on_every_heartbeat():
    s = shard()
    a = StreamsMember(s, "a", topology=topology(epoch=3))
    b = StreamsMember(s, "b", topology=topology(epoch=2))
    ready(s, a, b)
    resp = b.heartbeat()
    assert resp.error_code == Errors.NONE
    assert statuses(resp)[Status.STALE_TOPOLOGY] == (
        "The member's topology epoch 2 is behind the group's topology epoch 3.")
    assert Status.STALE_TOPOLOGY not in statuses(a.heartbeat())
    assert s.groups[GID].topology.epoch == 3
    described = s.handle(sm.StreamsGroupDescribeRequest([GID])).response.groups[0]
    assert described.topology.epoch == 3
    assert {x.member_id: x.topology_epoch for x in described.members} == {"a": 3, "b": 2}
    assert b.active or a.active  # a stale member still takes part in the assignment


def test_missing_source_topics_keep_the_group_not_ready_with_empty_tasks():
    s = shard(other=1)
    resp = StreamsMember(s, "a").join()
    assert statuses(resp)[Status.MISSING_SOURCE_TOPICS] == "Source topics input are missing."
    s.tick(5_000)
    assert s.groups[GID].state == "not_ready"
    assert resp.topics_to_create == {}
    s.update_metadata(image(input=2))
    mm = s.groups[GID]
    assert mm.state != "not_ready"


def test_internal_topics_are_sized_from_the_sources_and_asked_for_until_they_exist():
    s = shard(input=6)
    a = StreamsMember(s, "a", topology=topology(stateful=True, repartition=True))
    resp = a.join()
    assert Status.MISSING_INTERNAL_TOPICS in statuses(resp)
    created = resp.topics_to_create
    assert {n: (t.num_partitions, t.replication_factor, t.configs)
            for n, t in created.items()} == {
        "app-repartition": (6, -1, REPARTITION_CONFIGS),
        "app-store-changelog": (6, -1, CHANGELOG_CONFIGS)}
    assert s.groups[GID].state == "not_ready"
    s.update_metadata(image(input=6, **{"app-repartition": 6, "app-store-changelog": 6}))
    s.tick(s.now_ms + 3_000)
    for _ in range(3):
        resp = a.heartbeat()
    assert resp.status is None and resp.topics_to_create == {}
    assert {k: sorted(v) for k, v in a.active.items()} == {"0": list(range(6)),
                                                           "1": list(range(6))}
    assert s.groups[GID].state == "stable"


def test_internal_topics_are_asked_for_with_exactly_the_topologys_configs_and_replication():
    """Kafka's coordinator adds no config of its own: a topic the topology names none for
    gets none (the cluster's defaults), and a set replication factor is kept."""
    t = sm.StreamsTopology(1, (Subtopology("0", ("input",), state_changelog_topics=(
        TopicInfo("app-a-changelog"),
        TopicInfo("app-b-changelog", replication_factor=3, topic_configs=(
            KeyValue("min.insync.replicas", "2"), KeyValue("cleanup.policy", "compact,delete"),
        )))),))
    created = StreamsMember(shard(input=2), "a", topology=t).join().topics_to_create
    assert {n: (c.num_partitions, c.replication_factor, {kv.key: kv.value for kv in c.configs})
            for n, c in created.items()} == {
        "app-a-changelog": (2, -1, {}),
        "app-b-changelog": (2, 3, {"min.insync.replicas": "2", "cleanup.policy": "compact,delete"})}


def test_an_internal_topic_of_the_wrong_size_is_incorrectly_partitioned():
    s = shard(input=4, **{"app-store-changelog": 2})
    resp = StreamsMember(s, "a", topology=topology(stateful=True)).join()
    assert "app-store-changelog (expected 4 partitions, has 2)" in statuses(resp)[
        Status.INCORRECTLY_PARTITIONED_TOPICS]


def test_copartitioned_sources_of_different_sizes_are_incorrectly_partitioned():
    from protocol.streams.records import CopartitionGroup
    s = shard(left=2, right=3)
    t = sm.StreamsTopology(1, (Subtopology("0", ("left", "right"), copartition_groups=(
        CopartitionGroup(source_topics=(0, 1)),)),))
    resp = StreamsMember(s, "a", topology=t).join()
    assert statuses(resp)[Status.INCORRECTLY_PARTITIONED_TOPICS] == (
        "Following topics do not have the same number of partitions: [left=2, right=3]")


def test_a_copartitioned_repartition_topic_takes_the_size_of_its_group():
    from protocol.streams.records import CopartitionGroup
    s = shard(left=5, small=2)
    t = sm.StreamsTopology(1, (
        Subtopology("0", ("small",), repartition_sink_topics=("rep",)),
        Subtopology("1", ("left",), repartition_source_topics=(TopicInfo("rep"),),
                    copartition_groups=(CopartitionGroup(source_topics=(0,),
                                                         repartition_source_topics=(0,)),)),
    ))
    resp = StreamsMember(s, "a", topology=t).join()
    assert resp.topics_to_create["rep"].num_partitions == 5


# ------------------------------------------------------------------- assignment and epochs


def test_the_initial_rebalance_delay_hands_out_empty_tasks_until_it_ends():
    s = shard()
    a = StreamsMember(s, "a")
    resp = a.join()
    assert Status.ASSIGNMENT_DELAYED in statuses(resp) and a.active == {}
    a.heartbeat()
    assert a.active == {}
    s.tick(3_000)
    a.heartbeat()
    assert a.active == {"0": [0, 1, 2, 3]}


def test_a_task_moves_to_its_new_owner_only_after_the_old_one_revoked_it():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    ready(s, a)
    assert a.active == {"0": [0, 1, 2, 3]}
    b.join()
    b.heartbeat()
    group = s.groups[GID]
    target_b = set(group.target["b"].active_tasks["0"])
    assert target_b and not b.active  # a still holds them
    resp = a.heartbeat(active_tasks=sm.task_ids(a.active))
    assert group.members["a"].current.state == 1  # UNREVOKED_TASKS
    b.heartbeat()
    assert not b.active
    a.heartbeat()  # now reports without the revoked tasks
    b.heartbeat()
    assert set(b.active["0"]) == target_b
    assert not set(a.active["0"]) & target_b
    assert resp.error_code == Errors.NONE


def test_a_leaving_member_gives_its_tasks_to_the_others():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    ready(s, a, b)
    assert b.leave().member_epoch == -1
    for _ in range(3):
        a.heartbeat()
    assert a.active == {"0": [0, 1, 2, 3]}


def test_standbys_of_stateful_tasks_go_to_another_process_never_beside_the_active():

    s = shard(input=2, **{"app-store-changelog": 2})
    s.set_group_config(GID, GroupConfig(streams_num_standby_replicas=1))
    a = StreamsMember(s, "a", topology=topology(stateful=True))
    b = StreamsMember(s, "b", topology=topology(stateful=True))
    ready(s, a, b)
    for mm in (a, b):
        assert not ({(k, p) for k, v in mm.active.items() for p in v}
                    & {(k, p) for k, v in mm.standby.items() for p in v})
    assert a.standby or b.standby


def test_group_configs_set_the_session_heartbeat_and_delay_of_one_group():

    s = shard()
    s.set_group_config(GID, GroupConfig(streams_session_timeout_ms=50_000,
                                        streams_heartbeat_interval_ms=7_000,
                                        streams_initial_rebalance_delay_ms=0))
    a = StreamsMember(s, "a")
    resp = a.join()
    assert resp.heartbeat_interval_ms == 7_000 and resp.status is None
    a.heartbeat()
    assert a.active == {"0": [0, 1, 2, 3]}  # no delay
    s.tick(s.now_ms + 45_001)
    assert "a" in s.groups[GID].members
    s.tick(s.now_ms + 5_000)
    assert "a" not in s.groups[GID].members


def test_changing_the_standby_count_bumps_the_group_epoch():

    s = shard()
    a = StreamsMember(s, "a")
    ready(s, a)
    epoch = s.groups[GID].group_epoch
    s.set_group_config(GID, GroupConfig(streams_num_standby_replicas=1))
    a.heartbeat()
    assert s.groups[GID].group_epoch == epoch + 1


@pytest.mark.parametrize(("version", "tags", "told"), [
    (1, [], True), (1, [KeyValue("zone", "z1")], False), (0, [], False)])
def test_a_v1_member_without_the_rack_aware_tags_is_told_they_are_missing(version, tags, told):
    s = LoggingShard(config=CoordinatorConfig(
        group_streams_rack_aware_assignment_tags=("zone",)), metadata=image(input=4))
    resp = StreamsMember(s, "a").join(client_tags=tags, api_version=version)
    assert resp.error_code == Errors.NONE
    assert (Status.MISSING_CLIENT_TAGS in statuses(resp)) == told
    if told:
        assert statuses(resp)[Status.MISSING_CLIENT_TAGS] == (
            "Missing required client tags for rack-aware standby assignment: [zone]. "
            "Configure them via 'client.tag.<tagKey>' in your Streams config.")
    configs = {kv.key: kv.value for kv in s.groups[GID].last_assignment_configs}
    assert configs.get("rack.aware.assignment.tags") == "zone"


def test_no_rack_aware_tags_configured_tells_no_member_about_tags():
    resp = StreamsMember(shard(), "a").join(api_version=1)
    assert Status.MISSING_CLIENT_TAGS not in statuses(resp)


def test_a_wrong_epoch_is_fenced():
    s = shard()
    a = StreamsMember(s, "a")
    ready(s, a)
    resp = a.heartbeat(member_epoch=a.epoch + 1) if False else s.handle(
        sm.StreamsGroupHeartbeatRequest(GID, "a", a.epoch + 5, 0, active_tasks=[],
                                        standby_tasks=[], warmup_tasks=[])).response
    assert resp.error_code == Errors.FENCED_MEMBER_EPOCH
    assert "greater member epoch" in resp.error_message
    resp = s.handle(sm.StreamsGroupHeartbeatRequest(GID, "zz", 1, 0)).response
    assert resp.error_code == Errors.UNKNOWN_MEMBER_ID


def test_an_owned_task_outside_the_topology_is_an_invalid_request():
    s = shard()
    a = StreamsMember(s, "a")
    ready(s, a)
    resp = a.heartbeat(active_tasks=[sm.TaskIds("9", [0])])
    assert (resp.error_code, resp.error_message) == (
        Errors.INVALID_REQUEST, "Subtopology 9 does not exist in the topology.")


def test_a_static_member_leaves_for_a_while_and_its_new_process_takes_its_place():
    s = shard()
    a = StreamsMember(s, "a", instance_id="i1")
    b = StreamsMember(s, "b", instance_id="i2")
    ready(s, a, b)
    epoch = s.groups[GID].group_epoch
    tasks = dict(a.active)
    resp = StreamsMember(s, "a2", instance_id="i1").join()
    assert resp.error_code == Errors.UNRELEASED_INSTANCE_ID
    assert a.leave(-2).member_epoch == -2
    a2 = StreamsMember(s, "a2", instance_id="i1")
    resp = a2.join()
    assert resp.error_code == Errors.NONE
    assert "a" not in s.groups[GID].members
    assert a2.active == tasks  # its place and its tasks (its new process id is a change)
    assert s.groups[GID].group_epoch <= epoch + 1


def test_a_shutdown_request_is_told_to_every_member():
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    ready(s, a, b)
    a.heartbeat(shutdown_application=True)
    assert "Streams group member a encountered a fatal error" in statuses(
        b.heartbeat())[Status.SHUTDOWN_APPLICATION]


def test_endpoints_name_each_members_input_partitions_when_its_endpoint_epoch_is_behind():
    s = shard(input=2)
    a = StreamsMember(s, "a")
    a.join(user_endpoint=Endpoint("host-a", 8080))
    s.tick(3_000)
    for _ in range(3):
        resp = a.heartbeat()
    resp = s.handle(sm.StreamsGroupHeartbeatRequest(
        GID, "a", a.epoch, 0, active_tasks=sm.task_ids(a.active), standby_tasks=[],
        warmup_tasks=[])).response
    (e,) = resp.partitions_by_user_endpoint
    assert e.user_endpoint == Endpoint("host-a", 8080)
    assert e.active_partitions == {"input": [0, 1]}
    assert a.heartbeat().partitions_by_user_endpoint is None  # up to date


def test_describe_shows_the_topology_members_and_their_tasks():
    s = shard()
    a = StreamsMember(s, "a")
    ready(s, a)
    (d,) = s.handle(sm.StreamsGroupDescribeRequest([GID, "nope"])).response.groups[:1]
    assert d.group_state == "stable" and d.topology.epoch == 1
    (x,) = d.members
    assert x.member_id == "a" and x.process_id == "process-a"
    assert x.assignment.active_tasks == [sm.TaskIds("0", [0, 1, 2, 3])]
    missing = s.handle(sm.StreamsGroupDescribeRequest(["nope"])).response.groups[0]
    assert missing.error_code == Errors.GROUP_ID_NOT_FOUND


def test_offset_commits_are_checked_against_the_members_epoch_task_by_task():
    from protocol import messages as m
    s = shard()
    a, b = StreamsMember(s, "a"), StreamsMember(s, "b")
    ready(s, a)
    first = a.epoch
    b.join()
    for _ in range(5):
        a.heartbeat()
        b.heartbeat()
    assert a.epoch > first and s.groups[GID].state == "stable"

    def commit(member, epoch, partition):
        resp = s.handle(m.OffsetCommitRequest(GID, epoch, member, topics=[
            m.OffsetCommitRequestTopic("input", [m.OffsetCommitRequestPartition(partition, 5)])],
        )).response
        return resp.topics[0].partitions[0].error_code

    kept, moved = a.active["0"][0], b.active["0"][0]
    assert commit("a", a.epoch, moved) == Errors.NONE  # at its epoch, as Kafka: no task check
    assert commit("a", a.epoch + 1, kept) == Errors.STALE_MEMBER_EPOCH
    assert commit("a", first, kept) == Errors.NONE  # held since the older epoch
    assert commit("a", first, moved) == Errors.STALE_MEMBER_EPOCH  # no longer its task
    assert commit("b", b.epoch - 1, moved) == Errors.STALE_MEMBER_EPOCH  # given it later
    assert commit("x", 1, kept) == Errors.UNKNOWN_MEMBER_ID


def test_a_session_timeout_removes_the_member():
    s = shard()
    a = StreamsMember(s, "a")
    ready(s, a)
    s.tick(s.now_ms + 45_001)
    assert s.groups[GID].members == {} and s.groups[GID].state == "empty"


# ------------------------------------------------------------------------------- replay


def test_replaying_the_log_rebuilds_the_same_groups():
    s = shard(input=3, **{"app-store-changelog": 3})
    members = [StreamsMember(s, x, topology=topology(stateful=True), instance_id=f"i-{x}")
               for x in "abc"]
    ready(s, *members)
    members[1].leave(-2)
    members[2].leave()
    fresh = GroupCoordinatorShard(config=s.config, metadata=s.image, now_ms=s.now_ms)
    for r in s.log:
        fresh.replay(r)
    assert fresh.groups == s.groups
    s.handle(members[0].leave() and sm.StreamsGroupDescribeRequest([GID]))


def test_a_reloaded_group_shows_its_state_and_unchanged_metadata_bumps_nothing():
    s = shard()
    a = StreamsMember(s, "a")
    ready(s, a)
    fresh = GroupCoordinatorShard(config=s.config, metadata=s.image, now_ms=s.now_ms)
    for r in s.log:
        fresh.replay(r)
    assert fresh.groups[GID].state == "stable"
    assert fresh.update_metadata(s.image).records == []
    grown = fresh.update_metadata(image(input=6))
    assert fresh.groups[GID].group_epoch == s.groups[GID].group_epoch + 1
    assert grown.records
