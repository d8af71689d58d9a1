"""OffsetCommit and OffsetFetch: who may commit (KIP-848 members with stale and new epochs,
KIP-1251's window since Kafka 4.3, classic members, admin commits) and what fetch returns.

KIP-1251: a member's commit of a partition is accepted when the partition is the member's and
``assignmentEpoch(partition) <= clientEpoch <= memberEpoch``, where a partition's assignment
epoch is the member epoch at which the member got it (and kept it since).
"""

from __future__ import annotations

from tests.conformance.requests import (
    ALL,
    ack,
    classic_heartbeat,
    classic_member,
    commit,
    fetch_offsets,
    join,
    join_group,
    leave,
    rebalancing,
)
from tests.conformance.script import BAR, FOO, Epoch, Id, Receive, Script, script


def _two_members() -> tuple:
    """a joins (foo 0-2 at epoch E), b joins (E+1); a revokes foo-2 and moves to E+1 with
    foo 0-1 (assigned at E); b takes foo-2 at E+1."""
    return (join("a"), join("b"), ack("a"), ack("a"), ack("b"))


def _member_commits() -> list[Script]:
    return [
        script("a member commits its partition at its epoch",
               join("a"), commit("a"), fetch_offsets()),
        script("a member's commit at an epoch above its own is stale",
               join("a"), commit("a", generation_id_or_member_epoch=Epoch("a", 1)),
               fetch_offsets()),
        script("a member's commit at epoch 0 is stale",
               join("a"), commit("a", generation_id_or_member_epoch=0), fetch_offsets()),
        script("a commit by an unknown member id is refused",
               join("a"), commit("x", generation_id_or_member_epoch=Epoch("a")),
               fetch_offsets()),
        script("a commit naming no member to a live consumer group is refused",
               join("a"), commit("a", member_id="", generation_id_or_member_epoch=-1),
               fetch_offsets()),
        script("an admin commit to a consumer group whose members left is accepted",
               join("a"), leave("a"), commit("a", member_id="", generation_id_or_member_epoch=-1),
               fetch_offsets()),
        script("kip-1251 a commit at the previous epoch of a partition kept since is accepted",
               *_two_members(), commit("a", {FOO: {0: 5}}, generation_id_or_member_epoch=Epoch(
                   "a", -1)), fetch_offsets()),
        script("kip-1251 a commit at the previous epoch of a partition given up is refused",
               *_two_members(), commit("a", {FOO: {2: 5}}, generation_id_or_member_epoch=Epoch(
                   "a", -1)), fetch_offsets()),
        script("kip-1251 a commit below the epoch a partition was assigned at is refused",
               *_two_members(), commit("b", {FOO: {2: 5}}, generation_id_or_member_epoch=Epoch(
                   "b", -1)), fetch_offsets()),
        script("kip-1251 a commit mixing kept and new partitions at an old epoch is split",
               *_two_members(), ack("a"), commit("a", {FOO: {0: 7, 1: 7, 2: 7}},
                                                 generation_id_or_member_epoch=Epoch("a", -1)),
               fetch_offsets()),
        script("kip-1251 a member revoking commits its partition pending revocation",
               join("a"), join("b"), ack("a"),
               commit("a", {FOO: {2: 9}}, generation_id_or_member_epoch=Epoch("a")),
               fetch_offsets()),
        script("kip-1251 a commit at the member's epoch of a partition it does not hold",
               *_two_members(), commit("a", {FOO: {2: 3}}), fetch_offsets()),
        script("a member commits a topic it is not subscribed to",
               join("a"), commit("a", {BAR: {0: 4}}), fetch_offsets(topics={BAR: [0, 1]})),
        script("a commit of an unknown topic",
               join("a"), commit("a", {"cf-missing": {0: 1}}),
               fetch_offsets(topics={"cf-missing": [0]})),
        script("a commit of a partition beyond the topic's count",
               join("a"), commit("a", {FOO: {7: 1}}), fetch_offsets(topics={FOO: [7]})),
        script("a commit with metadata over the limit is refused",
               join("a"), _with_metadata(commit("a"), "x" * 4097), fetch_offsets()),
        script("a commit with metadata at the limit is kept",
               join("a"), _with_metadata(commit("a"), "y" * 4096), fetch_offsets()),
        script("v8 a member's commit at its epoch needs OffsetCommit v9",
               join("a"), commit("a", version=8), fetch_offsets()),
        script("v8 a member's commit at a stale epoch needs OffsetCommit v9",
               join("a"), commit("a", version=8, generation_id_or_member_epoch=Epoch("a", 1)),
               fetch_offsets()),
        script("v8 an admin commit to a consumer group whose members left",
               join("a"), leave("a"),
               commit("a", member_id="", generation_id_or_member_epoch=-1, version=8),
               fetch_offsets()),
        script("a member fetches its offsets with its epoch",
               join("a"), commit("a"), fetch_offsets("a", member=True)),
        script("a member's fetch with a stale epoch is refused",
               join("a"), commit("a"),
               fetch_offsets("a", member=True, epoch=Epoch("a", 1))),
        script("a fetch by an unknown member is refused",
               join("a"), commit("a"), fetch_offsets("x", member=True, epoch=Epoch("a"))),
        script("a fetch of every committed offset of a group",
               join("a", subscribed_topic_names=[FOO, BAR]), ack("a"),
               commit("a", {FOO: {0: 1, 2: 3}, BAR: {1: 2}}), fetch_offsets(topics=ALL)),
    ]


def _with_metadata(step, text: str):
    body = dict(step.body)
    body["topics"] = [dict(t, partitions=[dict(p, committed_metadata=text)
                                          for p in t["partitions"]]) for t in body["topics"]]
    return type(step)(**{**step.__dict__, "body": body})


def _simple() -> list[Script]:
    """Groups that only hold offsets (an admin's or a standalone consumer's commits)."""
    out = [
        script("an admin commit creates a group that only holds offsets",
               commit("a", member_id="", generation_id_or_member_epoch=-1), fetch_offsets()),
        script("a commit with a generation to a group that does not exist",
               commit("a", member_id="", generation_id_or_member_epoch=3), fetch_offsets()),
        script("v8 a commit with a generation to a group that does not exist",
               commit("a", member_id="", generation_id_or_member_epoch=3, version=8),
               fetch_offsets()),
        script("a commit with a member id to a group that does not exist",
               commit("a", generation_id_or_member_epoch=-1), fetch_offsets()),
        script("a fetch of a group that does not exist",
               fetch_offsets()),
        script("a fetch of every offset of a group that does not exist",
               fetch_offsets(topics=ALL)),
        script("an admin commit then a consumer member joins and fetches",
               commit("a", member_id="", generation_id_or_member_epoch=-1),
               join("b"), fetch_offsets("b", member=True)),
    ]
    for v in (2, 3, 5, 6, 7, 8):
        out.append(script(f"v{v} an admin commit and a fetch of it",
                          commit("a", member_id="", generation_id_or_member_epoch=-1, version=v),
                          fetch_offsets(version=min(v, 7))))
    for v in (1, 3, 5, 6, 8):
        out.append(script(f"v{v} a fetch of offsets an admin committed",
                          commit("a", member_id="", generation_id_or_member_epoch=-1),
                          fetch_offsets(version=v)))
    return out


def _classic_commits() -> list[Script]:
    """A classic member (one, so its join completes alone) commits at its generation."""
    member = classic_member("a")
    return [
        script("a classic member commits at its generation",
               *member, commit("a"), fetch_offsets()),
        script("a classic member's commit at another generation is an illegal generation",
               *member, commit("a", generation_id_or_member_epoch=Epoch("a", 1)),
               fetch_offsets()),
        script("a commit by an unknown member of a classic group",
               *member, commit("x", generation_id_or_member_epoch=Epoch("a")),
               fetch_offsets()),
        script("an anonymous commit to a live classic group is refused",
               *member, commit("a", member_id="", generation_id_or_member_epoch=-1),
               fetch_offsets()),
        script("a classic member's commit while the group rebalances",
               *member, join_group("b"), join_group("b", member_id=Id("b"), wait=False),
               classic_heartbeat("a", until=rebalancing), commit("a"), fetch_offsets(),
               join_group("a", member_id=Id("a"), wait=False),
               Receive("b"), Receive("a")),
    ]


CASES: list[Script] = [*_member_commits(), *_simple(), *_classic_commits()]
