"""The ConsumerGroupHeartbeat rules of seed 000, one behaviour per test."""

from __future__ import annotations

import pytest

import assignors
from protocol import messages as m
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.consumer.records import ConsumerGroupTargetAssignmentMetadataKey
from protocol.errors import Errors
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import Member, image

SESSION_MS = CoordinatorConfig().group_consumer_session_timeout_ms


def shard_with(**topics: int) -> GroupCoordinatorShard:
    return GroupCoordinatorShard(metadata=image(**topics))


def group(shard, gid="g"):
    return shard.groups[gid]


def test_coordinator_generates_a_member_id_when_the_join_brings_none():
    shard = shard_with(foo=3)
    resp = Member(shard, "").join()
    assert resp.error_code == Errors.NONE
    assert len(resp.member_id) == 22 and resp.member_id in group(shard).members


def test_member_ids_are_unique_and_deterministic_for_a_seed():
    ids = []
    for _ in range(2):
        shard = shard_with(foo=3)
        ids.append([Member(shard, "").join().member_id for _ in range(5)])
    assert ids[0] == ids[1] and len(set(ids[0])) == 5


def test_a_join_may_bring_its_own_member_id():
    shard = shard_with(foo=3)
    assert Member(shard, "client-made-id").join().member_id == "client-made-id"


def test_heartbeat_from_an_unknown_member_is_refused_and_changes_nothing():
    shard = shard_with(foo=3)
    Member(shard, "A").join()
    before = group(shard).group_epoch
    res = shard.handle(m.ConsumerGroupHeartbeatRequest("g", "nobody", 1, topic_partitions=[]))
    assert res.response.error_code == Errors.UNKNOWN_MEMBER_ID
    assert res.records == [] and group(shard).group_epoch == before


def test_heartbeat_to_a_group_that_does_not_exist_is_unknown_member():
    shard = shard_with(foo=3)
    res = shard.handle(m.ConsumerGroupHeartbeatRequest("nope", "A", 3))
    assert res.response.error_code == Errors.UNKNOWN_MEMBER_ID and "nope" not in shard.groups


def test_member_with_a_larger_epoch_is_fenced_and_removed():
    shard = shard_with(foo=3)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    epoch = group(shard).group_epoch
    res = shard.handle(m.ConsumerGroupHeartbeatRequest("g", "A", a.epoch + 5, topic_partitions=[]))
    assert res.response.error_code == Errors.FENCED_MEMBER_EPOCH
    assert "A" not in group(shard).members
    assert group(shard).group_epoch == epoch + 1


def test_lost_response_is_accepted_when_owned_partitions_are_a_subset_of_the_assignment():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()  # epoch 1, foo-0..3
    b.join()
    a.heartbeat()  # revoke two partitions
    a.heartbeat()  # ack -> epoch 2; pretend this reply was lost
    assert group(shard).members["A"].member_epoch == 2
    stale = m.ConsumerGroupHeartbeatRequest(
        "g", "A", 1, topic_partitions=[m.TopicPartitions("foo-id", [0, 1])]
    )
    resp = shard.handle(stale).response
    assert resp.error_code == Errors.NONE and resp.member_epoch == 2


def test_lost_response_with_partitions_outside_the_assignment_is_fenced():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    a.heartbeat()
    a.heartbeat()
    stale = m.ConsumerGroupHeartbeatRequest(
        "g", "A", 1, topic_partitions=[m.TopicPartitions("foo-id", [0, 1, 2, 3])]
    )
    assert shard.handle(stale).response.error_code == Errors.FENCED_MEMBER_EPOCH
    assert "A" not in group(shard).members


def _retry(shard, member: Member) -> m.ConsumerGroupHeartbeatResponse:
    """librdkafka's retry of a timed-out steady heartbeat: the same request, owned partitions
    null (unchanged); the coordinator may have answered the first copy already."""
    req = m.ConsumerGroupHeartbeatRequest("g", member.member_id, member.epoch)
    return shard.handle(req).response


def test_a_revocation_whose_reply_was_lost_is_told_again_until_the_member_acknowledges():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()  # foo-0..3
    a.heartbeat()  # holds them all, said so
    b.join()  # two of them move to B
    lost = _retry(shard, a)  # A is told to revoke two; the reply never reaches it
    assert lost.assignment is not None
    assert group(shard).members["A"].partitions_pending_revocation
    again = _retry(shard, a)  # Kafka's rule alone: no assignment, A holds all four for good
    assert again.assignment == lost.assignment
    a.accept(again)
    a.heartbeat()  # acknowledges: it owns exactly what it was told
    assert not group(shard).members["A"].partitions_pending_revocation
    assert _retry(shard, a).assignment is None  # heard: never sent twice


def test_partitions_given_in_a_lost_reply_are_given_again_on_the_retry():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()  # waits for two of A's partitions
    b.heartbeat()
    a.heartbeat()  # told to revoke
    a.heartbeat()  # revokes: the two are free
    lost = _retry(shard, b)  # B takes them; the reply never reaches it
    assert lost.assignment is not None
    held = group(shard).members["B"].assigned_partitions
    assert sum(len(ps) for ps in held.values()) == 2
    again = _retry(shard, b)
    assert again.assignment == lost.assignment  # without it B would never use them
    b.accept(again)
    b.heartbeat()
    assert _retry(shard, b).assignment is None


def test_a_join_reply_is_not_resent_a_lost_one_is_retried_whole():
    shard = shard_with(foo=3)
    a = Member(shard, "A")
    a.join()
    assert _retry(shard, a).assignment is None  # as Kafka: the join's retry is a join
    assert len(shard.consumer.unconfirmed) == 0


def test_a_member_that_left_is_no_longer_remembered_as_unconfirmed():
    shard = shard_with(foo=2)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    a.heartbeat()
    b.join()
    assert _retry(shard, a).assignment is not None  # told to revoke, not yet heard
    assert len(shard.consumer.unconfirmed) == 1
    a.leave()
    assert len(shard.consumer.unconfirmed) == 0


def test_null_fields_mean_unchanged_and_do_not_bump_the_epoch():
    shard = shard_with(foo=3)
    a = Member(shard, "A")
    a.join()
    epoch = group(shard).group_epoch
    resp = a.heartbeat()
    assert resp.error_code == Errors.NONE
    assert group(shard).group_epoch == epoch
    assert group(shard).members["A"].subscribed_topic_names == ("foo",)
    assert resp.assignment is None  # nothing changed, so no assignment is sent


def test_full_heartbeat_resends_the_assignment():
    shard = shard_with(foo=3)
    a = Member(shard, "A")
    a.join()
    resp = a.heartbeat(rebalance_timeout_ms=60_000, subscribed_topic_names=["foo"])
    assert resp.assignment is not None
    assert resp.assignment.assigned_topic_partitions == [m.TopicPartitions("foo-id", [0, 1, 2])]


def test_subscription_and_assignor_changes_bump_the_group_epoch():
    shard = shard_with(foo=3, bar=2)
    a = Member(shard, "A")
    a.join()
    for change in (
        {"subscribed_topic_names": ["foo", "bar"]},
        {"server_assignor": "range"},
        {"subscribed_topic_regex": "ba.*"},
    ):
        epoch = group(shard).group_epoch
        assert a.heartbeat(**change).error_code == Errors.NONE
        assert group(shard).group_epoch == epoch + 1, change


def test_a_rack_change_is_kept_without_bumping_the_group_epoch():
    """As Kafka 4.4: a member's rack is metadata, not a rebalance trigger."""
    shard = shard_with(foo=3)
    a = Member(shard, "A")
    a.join()
    epoch = group(shard).group_epoch
    assert a.heartbeat(rack_id="r1").error_code == Errors.NONE
    assert group(shard).group_epoch == epoch
    assert group(shard).members["A"].rack_id == "r1"


def test_client_id_or_rebalance_timeout_changes_do_not_bump_the_epoch():
    shard = shard_with(foo=3)
    a = Member(shard, "A")
    a.join()
    epoch = group(shard).group_epoch
    a.heartbeat(client_id="new-client", rebalance_timeout_ms=1234)
    assert group(shard).group_epoch == epoch
    assert group(shard).members["A"].client_id == "new-client"
    assert group(shard).members["A"].rebalance_timeout_ms == 1234


def test_leaving_removes_the_member_and_rebalances_the_rest():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    epoch = group(shard).group_epoch
    resp = a.leave()
    assert (resp.error_code, resp.member_epoch) == (Errors.NONE, -1)
    assert list(group(shard).members) == ["B"]
    assert group(shard).group_epoch == epoch + 1
    # Kafka 4.4 (KIP-1263's default interval): the next heartbeat of the group computes it.
    assert group(shard).assignment_epoch == epoch
    b.heartbeat()
    assert group(shard).target_of("B") == {"foo-id": (0, 1, 2, 3)}


def test_all_members_leaving_leaves_an_empty_group():
    shard = shard_with(foo=2)
    a = Member(shard, "A")
    a.join()
    a.leave()
    assert group(shard).state == "empty" and group(shard).members == {}


def test_static_member_temporary_leave_keeps_its_assignment_without_a_rebalance():
    shard = shard_with(foo=4)
    a = Member(shard, "A", instance_id="inst-a")
    b = Member(shard, "B", instance_id="inst-b")
    a.join()
    b.join()
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    epoch, target = group(shard).group_epoch, group(shard).target_of("A")
    resp = a.leave(epoch=-2)
    assert (resp.error_code, resp.member_epoch) == (Errors.NONE, -2)
    assert group(shard).group_epoch == epoch
    assert group(shard).members["A"].member_epoch == -2
    assert group(shard).members["A"].assigned_partitions == target

    # It comes back as a new process: new member id, same instance id.
    a2 = Member(shard, "A2", instance_id="inst-a")
    resp = a2.join()
    assert resp.error_code == Errors.NONE
    assert group(shard).group_epoch == epoch  # no rebalance
    assert "A" not in group(shard).members
    assert a2.owned == target and resp.member_epoch == epoch


def test_new_member_with_the_instance_id_of_a_live_static_member_is_refused():
    shard = shard_with(foo=2)
    Member(shard, "A", instance_id="inst").join()
    resp = Member(shard, "B", instance_id="inst").join()
    assert resp.error_code == Errors.UNRELEASED_INSTANCE_ID
    assert list(group(shard).members) == ["A"]


def test_replaced_static_member_is_fenced_by_instance_id():
    shard = shard_with(foo=2)
    a = Member(shard, "A", instance_id="inst")
    a.join()
    a.leave(epoch=-2)
    Member(shard, "A2", instance_id="inst").join()
    stale = m.ConsumerGroupHeartbeatRequest("g", "A", 1, instance_id="inst", topic_partitions=[])
    assert shard.handle(stale).response.error_code == Errors.FENCED_INSTANCE_ID


def test_static_member_that_never_returns_is_removed_after_the_session_timeout():
    shard = shard_with(foo=2)
    a = Member(shard, "A", instance_id="inst")
    a.join()
    a.leave(epoch=-2)
    epoch = group(shard).group_epoch
    shard.tick(SESSION_MS + 1)
    assert group(shard).members == {} and group(shard).group_epoch == epoch + 1


def test_temporary_leave_needs_an_instance_id():
    shard = shard_with(foo=2)
    Member(shard, "A").join()
    resp = shard.handle(m.ConsumerGroupHeartbeatRequest("g", "A", -2)).response
    assert resp.error_code == Errors.INVALID_REQUEST and "InstanceId" in resp.error_message


def test_member_is_fenced_after_session_timeout_and_heartbeats_keep_it_alive():
    shard = shard_with(foo=2)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    b.join()
    shard.tick(SESSION_MS - 1)
    b.heartbeat()
    shard.tick(SESSION_MS + 1)
    assert list(group(shard).members) == ["B"]
    assert shard.next_deadline_ms() == SESSION_MS - 1 + SESSION_MS


def test_member_that_does_not_revoke_in_time_is_fenced_after_its_rebalance_timeout():
    shard = shard_with(foo=4)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join(rebalance_timeout_ms=10_000)
    assert a.owned == {"foo-id": (0, 1, 2, 3)}
    b.join()
    a.heartbeat()  # told to revoke; never acknowledges
    a.owned = {"foo-id": (0, 1, 2, 3)}
    assert group(shard).members["A"].state.name == "UNREVOKED_PARTITIONS"
    shard.tick(5_000)
    a.heartbeat()  # still claims the revoked partitions: no progress, but alive
    a.owned = {"foo-id": (0, 1, 2, 3)}
    shard.tick(10_001)
    assert "A" not in group(shard).members
    b.heartbeat()
    assert b.owned == {"foo-id": (0, 1, 2, 3)}


def test_group_max_size_refuses_the_extra_member():
    shard = GroupCoordinatorShard(CoordinatorConfig(group_consumer_max_size=2), image(foo=3))
    Member(shard, "A").join()
    Member(shard, "B").join()
    resp = Member(shard, "C").join()
    assert resp.error_code == Errors.GROUP_MAX_SIZE_REACHED
    assert sorted(group(shard).members) == ["A", "B"]


def test_regex_subscription_follows_topics_created_and_deleted():
    shard = shard_with(foo=2)
    a = Member(shard, "A", topics=[])
    resp = shard.handle(
        m.ConsumerGroupHeartbeatRequest(
            "g",
            "A",
            0,
            rebalance_timeout_ms=1000,
            subscribed_topic_regex="f.*",
            topic_partitions=[],
        )
    ).response
    a.accept(resp)
    assert a.owned == {"foo-id": (0, 1)}
    epoch = group(shard).group_epoch
    with_fun = MetadataImage(
        [
            TopicMetadata("foo-id", "foo", 2),
            TopicMetadata("fun-id", "fun", 1),
            TopicMetadata("bar-id", "bar", 1),
        ]
    )
    shard.update_metadata(with_fun)
    assert group(shard).group_epoch == epoch + 1
    a.heartbeat()
    assert a.owned == {"foo-id": (0, 1), "fun-id": (0,)}
    shard.update_metadata(MetadataImage([TopicMetadata("fun-id", "fun", 1)]))  # foo deleted
    assert group(shard).group_epoch == epoch + 2
    a.heartbeat()  # revoke foo
    a.heartbeat()
    assert a.owned == {"fun-id": (0,)}


def test_unrelated_topic_changes_do_not_bump_the_epoch():
    shard = shard_with(foo=2)
    Member(shard, "A").join()
    epoch = group(shard).group_epoch
    shard.update_metadata(image(foo=2, other=5))
    assert group(shard).group_epoch == epoch


def test_invalid_regex_is_refused_without_hanging():
    shard = shard_with(foo=2)
    resp = shard.handle(
        m.ConsumerGroupHeartbeatRequest(
            "g", "", 0, rebalance_timeout_ms=1000, subscribed_topic_regex="(a", topic_partitions=[]
        )
    ).response
    assert resp.error_code == Errors.INVALID_REQUEST and "regular expression" in resp.error_message
    assert shard.groups == {}


def test_group_states_walk_empty_reconciling_stable():
    shard = shard_with(foo=2)
    a, b = Member(shard, "A"), Member(shard, "B")
    a.join()
    assert group(shard).state == "stable"
    b.join()
    assert group(shard).state == "reconciling"
    for _ in range(3):
        a.heartbeat()
        b.heartbeat()
    assert group(shard).state == "stable"
    a.leave()
    b.leave()
    assert group(shard).state == "empty"


def test_dynamic_group_config_sets_heartbeat_interval_and_session_timeout():
    shard = shard_with(foo=2)
    shard.set_group_config(
        "g", GroupConfig(consumer_session_timeout_ms=10_000, consumer_heartbeat_interval_ms=1_000)
    )
    resp = Member(shard, "A").join()
    assert resp.heartbeat_interval_ms == 1_000
    shard.tick(10_001)
    assert group(shard).members == {}


def test_describe_reports_epochs_members_and_assignments():
    shard = shard_with(foo=2)
    Member(shard, "A", instance_id="i").join(rack_id="r1", client_id="cli")
    resp = shard.handle(m.ConsumerGroupDescribeRequest(["g", "missing"])).response
    g, missing = resp.groups
    assert (g.group_state, g.group_epoch, g.assignment_epoch, g.assignor_name) == (
        "stable",
        1,
        1,
        "uniform",
    )
    (member,) = g.members
    assert (member.member_id, member.instance_id, member.rack_id, member.client_id) == (
        "A",
        "i",
        "r1",
        "cli",
    )
    assert member.assignment.topic_partitions == [
        m.DescribedTopicPartitions("foo-id", "foo", [0, 1])
    ]
    assert member.target_assignment == member.assignment
    assert missing.error_code == Errors.GROUP_ID_NOT_FOUND


def test_members_may_pick_the_range_assignor():
    shard = shard_with(foo=4)
    Member(shard, "A").join(server_assignor="range")
    resp = shard.handle(m.ConsumerGroupDescribeRequest(["g"])).response
    assert resp.groups[0].assignor_name == "range"


def test_a_batch_of_joins_computes_the_target_assignment_once():
    shard = shard_with(foo=100)
    members = [Member(shard, f"m{i:03}") for i in range(50)]
    res = shard.handle_batch([mem.join_request() for mem in members])
    assert all(resp.error_code == Errors.NONE for _, resp in res.replies)
    installs = [
        r for r in res.records if isinstance(r.key, ConsumerGroupTargetAssignmentMetadataKey)
    ]
    assert len(installs) == 1
    assert group(shard).group_epoch == 1  # one bump for the turn
    sizes = [sum(len(p) for p in group(shard).target_of(mem.member_id).values()) for mem in members]
    assert set(sizes) == {2}


def test_the_same_member_twice_in_a_batch_is_handled_in_order():
    shard = shard_with(foo=2)
    a = Member(shard, "A")
    a.join()
    res = shard.handle_batch([a.heartbeat_request(), a.heartbeat_request(client_id="x")])
    assert [r.error_code for _, r in res.replies] == [Errors.NONE, Errors.NONE]
    assert group(shard).members["A"].client_id == "x"


def test_list_groups_filters_by_state_and_type():
    shard = shard_with(foo=2)
    Member(shard, "A", group_id="g1").join()
    b = Member(shard, "B", group_id="g2")
    b.join()
    b.leave()
    resp = shard.handle(m.ListGroupsRequest(states_filter=["Empty"])).response
    assert [g.group_id for g in resp.groups] == ["g2"]
    resp = shard.handle(m.ListGroupsRequest(types_filter=["consumer"])).response
    assert [(g.group_id, g.group_state) for g in resp.groups] == [("g1", "stable"), ("g2", "empty")]
    bogus = shard.handle(m.ListGroupsRequest(states_filter=["bogus"])).response
    assert (bogus.error_code, bogus.groups) == (Errors.NONE, [])  # as Kafka: nothing matches


def test_a_rejoining_member_that_owns_nothing_need_not_acknowledge_a_revocation():
    # Found by the stateful test: a static member leaves for a while after its topic was
    # deleted; the replacement owns nothing, so it moves straight to the group epoch.
    shard = shard_with(foo=1, bar=1)
    a = Member(shard, "A", instance_id="i")
    a.join()
    shard.update_metadata(image(bar=1))
    a.leave(epoch=-2)
    resp = Member(shard, "A2", instance_id="i").join()
    assert resp.error_code == Errors.NONE
    assert resp.member_epoch == group(shard).group_epoch
    assert group(shard).members["A2"].partitions_pending_revocation == {}


def test_a_change_of_partition_racks_bumps_the_epoch():
    racks = (frozenset({"r1"}), frozenset({"r2"}))
    shard = GroupCoordinatorShard(
        metadata=MetadataImage([TopicMetadata("foo-id", "foo", 2, racks)])
    )
    Member(shard, "A").join(rack_id="r1")
    epoch = group(shard).group_epoch
    moved = (frozenset({"r2"}), frozenset({"r1"}))
    shard.update_metadata(MetadataImage([TopicMetadata("foo-id", "foo", 2, moved)]))
    assert group(shard).group_epoch == epoch + 1


def test_a_failing_assignor_leaves_the_old_target_and_crashes_nothing(monkeypatch):
    class Broken:
        name = "uniform"

        def assign(self, spec):
            raise assignors.PartitionAssignorError("boom")

    shard = shard_with(foo=2)
    a = Member(shard, "A")
    a.join()
    monkeypatch.setitem(assignors.SERVER_ASSIGNORS, "uniform", Broken())
    resp = Member(shard, "B").join()
    assert resp.error_code == Errors.NONE
    assert group(shard).state == "assigning"
    assert group(shard).target_of("A") == {"foo-id": (0, 1)}
    monkeypatch.undo()  # the assignor recovers: the next heartbeat's turn computes the target
    a.heartbeat()
    assert group(shard).state == "reconciling"
    assert group(shard).target_of("B") != {}


def test_config_refuses_an_assignor_the_server_does_not_have():
    with pytest.raises(ValueError, match="unknown server assignors"):
        CoordinatorConfig(group_consumer_assignors=("nope",))


def test_a_lost_response_retry_releases_nothing_it_may_be_taking_up():
    """A member retrying with its previous epoch reports what it owned then; a partition the
    coordinator gave it since (which it may be taking up right now) is not released by that
    report, only by one at its current epoch."""
    shard = shard_with(foo=6)
    a, b, c = Member(shard, "A"), Member(shard, "B"), Member(shard, "C")
    a.join()
    b.join()
    a.heartbeat()  # revoke three partitions
    a.heartbeat()  # ack -> epoch 2; pretend this reply was lost
    assert group(shard).members["A"].member_epoch == 2
    held = {t: set(ps) for t, ps in group(shard).members["A"].assigned_partitions.items()}
    c.join()  # the new target moves one of A's partitions to C
    target = group(shard).target["A"].partitions
    moving = [(t, p) for t, ps in held.items() for p in ps - set(target.get(t, ()))]
    assert len(moving) == 1
    (topic_id, moved), = moving
    # A reports what it held at epoch 1 minus the partition that moves: it never took it up
    # (as far as its report goes); a report at its current epoch would release it
    kept = [m.TopicPartitions(topic_id, sorted(held[topic_id] - {moved}))]
    stale = m.ConsumerGroupHeartbeatRequest("g", "A", 1, topic_partitions=kept)
    assert shard.handle(stale).response.error_code == Errors.NONE
    assert group(shard).members["A"].partitions_pending_revocation == {topic_id: (moved,)}
    c.heartbeat()
    assert group(shard).owners[(topic_id, moved)] == "A"
    current = m.ConsumerGroupHeartbeatRequest(
        "g", "A", group(shard).members["A"].member_epoch, topic_partitions=kept
    )
    assert shard.handle(current).response.error_code == Errors.NONE
    assert not group(shard).members["A"].partitions_pending_revocation
