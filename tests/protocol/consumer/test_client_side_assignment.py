"""Client-side assignors: PrepareAssignment / InstallAssignment (seed 000), version ranges (004)."""

from __future__ import annotations

from protocol import messages as m
from protocol.errors import Errors
from protocol.shard import GroupCoordinatorShard
from tests.protocol.driver import Member, image


def assignor(lo: int, hi: int, name: str = "sticky", version: int | None = None) -> m.Assignor:
    return m.Assignor(name, lo, hi, 0, lo if version is None else version, b"meta-" + name.encode())


def join_with(shard, mid: str, lo: int, hi: int) -> Member:
    member = Member(shard, mid)
    resp = member.join(client_assignors=[assignor(lo, hi)])
    assert resp.error_code == Errors.NONE, resp
    return member


def three_workers() -> tuple[GroupCoordinatorShard, dict[str, Member]]:
    shard = GroupCoordinatorShard(metadata=image(foo=6))
    ms = {
        mid: join_with(shard, mid, lo, hi)
        for mid, (lo, hi) in {"A": (1, 5), "B": (3, 4), "C": (2, 4)}.items()
    }
    return shard, ms


def test_the_member_whose_version_range_covers_everyone_is_asked_to_compute():
    shard, ms = three_workers()
    g = shard.groups["g"]
    assert g.group_epoch > g.assignment_epoch and g.state == "assigning"
    replies = {mid: mem.heartbeat() for mid, mem in ms.items()}
    assert replies["A"].should_compute_assignment
    assert not replies["B"].should_compute_assignment and not replies["C"].should_compute_assignment


def test_a_member_whose_range_does_not_overlap_is_refused_with_unsupported_assignor():
    shard, _ = three_workers()
    resp = Member(shard, "D").join(client_assignors=[assignor(6, 7)])
    assert resp.error_code == Errors.UNSUPPORTED_ASSIGNOR
    assert "D" not in shard.groups["g"].members


def test_prepare_assignment_returns_the_group_state_to_the_chosen_member():
    shard, ms = three_workers()
    g = shard.groups["g"]
    resp = shard.handle(m.ConsumerGroupPrepareAssignmentRequest("g", "A", ms["A"].epoch)).response
    assert resp.error_code == Errors.NONE
    assert (resp.group_epoch, resp.assignor_name) == (g.group_epoch, "sticky")
    assert (resp.minimum_version, resp.maximum_version) == (3, 4)
    assert [mem.member_id for mem in resp.members] == ["A", "B", "C"]
    assert resp.members[0].assignor.metadata == b"meta-sticky"
    assert resp.members[0].subscribed_topic_ids == ["foo-id"]
    assert resp.topics == [m.PrepareAssignmentTopic("foo-id", "foo", 6)]


def test_prepare_assignment_checks_group_member_epoch_and_choice_in_order():
    shard, ms = three_workers()
    cases = [
        (m.ConsumerGroupPrepareAssignmentRequest("nope", "A", 0), Errors.GROUP_ID_NOT_FOUND),
        (m.ConsumerGroupPrepareAssignmentRequest("g", "Z", 0), Errors.UNKNOWN_MEMBER_ID),
        (
            m.ConsumerGroupPrepareAssignmentRequest("g", "A", ms["A"].epoch + 1),
            Errors.STALE_MEMBER_EPOCH,
        ),
        (
            m.ConsumerGroupPrepareAssignmentRequest("g", "B", ms["B"].epoch),
            Errors.UNKNOWN_MEMBER_ID,
        ),
        (m.ConsumerGroupPrepareAssignmentRequest("", "A", 0), Errors.INVALID_REQUEST),
    ]
    for req, code in cases:
        assert shard.handle(req).response.error_code == code, req


def install(shard, member: Member, group_epoch: int, assignment: dict[str, list[int]], **kw):
    return shard.handle(
        m.ConsumerGroupInstallAssignmentRequest(
            "g",
            member.member_id,
            member.epoch,
            group_epoch,
            members=[
                m.InstallAssignmentMember(
                    mid, topic_partitions=[m.TopicPartitions("foo-id", ps)], **kw
                )
                for mid, ps in assignment.items()
            ],
        )
    )


def test_installed_assignment_reaches_the_members():
    shard, ms = three_workers()
    epoch = shard.groups["g"].group_epoch
    res = install(
        shard,
        ms["A"],
        epoch,
        {"A": [0, 1], "B": [2, 3], "C": [4, 5]},
        metadata_version=3,
        metadata_bytes=b"x",
    )
    assert res.response.error_code == Errors.NONE
    g = shard.groups["g"]
    assert g.assignment_epoch == epoch and g.state == "reconciling"
    for mem in ms.values():
        resp = mem.heartbeat()
        assert resp.member_epoch == epoch
        assert resp.assignment.metadata_version == 3 and resp.assignment.metadata_bytes == b"x"
    assert ms["B"].owned == {"foo-id": (2, 3)}
    assert not ms["A"].heartbeat().should_compute_assignment


def test_invalid_assignments_are_refused_and_change_nothing():
    shard, ms = three_workers()
    epoch = shard.groups["g"].group_epoch
    bad = [
        ({"A": [0, 1], "B": [1, 2]}, "assigned twice"),
        ({"A": [0, 9]}, "does not exist"),
    ]
    for assignment, why in bad:
        resp = install(shard, ms["A"], epoch, assignment).response
        assert resp.error_code == Errors.INVALID_ASSIGNMENT and why in resp.error_message
    resp = install(shard, ms["A"], epoch + 1, {"A": [0]}).response
    assert resp.error_code == Errors.INVALID_ASSIGNMENT
    assert shard.groups["g"].assignment_epoch == 0


def test_an_assignment_computed_for_an_older_epoch_is_installed_and_a_new_one_is_asked_for():
    shard, ms = three_workers()
    old_epoch = shard.groups["g"].group_epoch
    join_with(shard, "D", 3, 4)
    assert (
        install(
            shard, ms["A"], old_epoch, {"A": [0, 1], "B": [2, 3], "C": [4, 5]}
        ).response.error_code
        == 0
    )
    g = shard.groups["g"]
    assert g.assignment_epoch == old_epoch < g.group_epoch
    assert ms["A"].heartbeat().should_compute_assignment
