"""The client-side sticky partition assignor and the version-range module it relies on."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors.client import interfaces, version_range
from assignors.client.interfaces import (
    PartitionAssignor,
    PartitionGroup,
    PartitionGroupMember,
    TopicMetadata,
)
from assignors.client.sticky import StickyPartitionAssignor
from assignors.client.version_range import write_version

PROPERTY = settings(max_examples=100)


def member(member_id: str, topics=("t",), owned=(), **kw) -> PartitionGroupMember:
    return PartitionGroupMember(
        member_id,
        subscribed_topic_ids=frozenset(topics),
        owned_partitions=frozenset(owned),
        **kw,
    )


def assign(members, topics: dict[str, int], assignor=None) -> dict[str, frozenset]:
    group = PartitionGroup(
        members=tuple(members), topics=tuple(TopicMetadata(t, n) for t, n in topics.items())
    )
    result = (assignor or StickyPartitionAssignor()).assign(group)
    assert result.error == 0
    return {m.member_id: m.partitions for m in result.members}


def rerun(previous: dict[str, frozenset], topics: dict[str, int], subs=None) -> dict:
    subs = subs or {}
    return assign([member(m, subs.get(m, topics), owned) for m, owned in previous.items()], topics)


def test_it_is_a_partition_assignor_named_sticky_with_a_version_range():
    assignor = StickyPartitionAssignor(minimum_version=0, maximum_version=2)
    assert isinstance(assignor, PartitionAssignor)
    assert (assignor.name(), assignor.minimum_version(), assignor.maximum_version()) == (
        "sticky",
        0,
        2,
    )
    assert assignor.metadata().version == 2 and assignor.metadata().metadata == b""
    with pytest.raises(ValueError):
        StickyPartitionAssignor(minimum_version=2, maximum_version=1)


def test_every_partition_goes_to_exactly_one_member_within_one_of_the_others():
    result = assign([member(m) for m in "abc"], {"t": 10})
    assert sorted(len(ps) for ps in result.values()) == [3, 3, 4]
    assert Counter(p for ps in result.values() for p in ps) == {("t", p): 1 for p in range(10)}


def test_a_rerun_moves_nothing():
    first = assign([member(m) for m in "abc"], {"t": 10})
    assert rerun(first, {"t": 10}) == first


def test_a_leavers_partitions_spread_without_moving_anyone_elses():
    first = assign([member(m) for m in "abcd"], {"t": 12})
    left = {m: ps for m, ps in first.items() if m != "d"}
    after = rerun(left, {"t": 12})
    for m, ps in left.items():
        assert ps <= after[m]
    assert sorted(len(ps) for ps in after.values()) == [4, 4, 4]


def test_a_joiner_takes_its_share_and_nobody_else_gains():
    first = assign([member(m) for m in "abc"], {"t": 12})
    after = rerun({**first, "d": frozenset()}, {"t": 12})
    assert len(after["d"]) == 3
    for m in "abc":
        assert after[m] <= first[m]


def test_partitions_of_unknown_or_unsubscribed_topics_are_dropped():
    result = assign(
        [
            member("a", topics=("t", "gone"), owned=[("gone", 0), ("u", 1), ("t", 7)]),
            member("b", topics=("u",)),
        ],
        {"t": 2, "u": 2},
    )
    assert result == {"a": {("t", 0), ("t", 1)}, "b": {("u", 0), ("u", 1)}}


def test_members_are_answered_at_a_version_they_read():
    assignor = StickyPartitionAssignor(minimum_version=0, maximum_version=2)
    group = PartitionGroup(
        members=(
            member("a", maximum_version=1),
            member("b", version=2),
            member("c"),
        ),
        topics=(TopicMetadata("t", 3),),
    )
    versions = {m.member_id: m.version for m in assignor.assign(group).members}
    assert versions == {"a": 1, "b": 2, "c": 0}


def test_on_assignment_keeps_the_members_assignment():
    assignor = StickyPartitionAssignor()
    group = PartitionGroup(members=(member("a"),), topics=(TopicMetadata("t", 1),))
    (mine,) = assignor.assign(group).members
    assignor.on_assignment(mine)
    assert assignor.last_assignment == mine


# -- the version-range module -----------------------------------------------------------------


def test_the_version_range_rule_is_still_importable_from_interfaces():
    assert interfaces.select_by_version_range is version_range.select_by_version_range
    assert interfaces.common_version_range is version_range.common_version_range


def test_an_assignor_writes_the_highest_version_both_sides_read():
    assert write_version((1, 5), 3) == 3
    assert write_version((1, 2), 4) == 2
    assert write_version((1, 2), 0) == 1  # a member that has not said yet gets the minimum


# -- properties -------------------------------------------------------------------------------

TOPICS = {"t0": 5, "t1": 3, "t2": 0}


@st.composite
def groups(draw):
    member_ids = draw(st.lists(st.sampled_from("abcdef"), min_size=1, unique=True))
    homogeneous = draw(st.booleans())
    shared = draw(st.sets(st.sampled_from([*TOPICS, "gone"])))
    claims = st.lists(st.tuples(st.sampled_from([*TOPICS, "gone"]), st.integers(-1, 6)))
    return [
        member(
            m,
            topics=shared if homogeneous else draw(st.sets(st.sampled_from([*TOPICS, "gone"]))),
            owned=draw(claims),
        )
        for m in member_ids
    ]


@PROPERTY
@given(groups())
def test_any_group_gets_each_subscribed_partition_once_stably(members):
    result = assign(members, TOPICS)
    owners = Counter(p for ps in result.values() for p in ps)
    subscribed = {t for m in members for t in m.subscribed_topic_ids if t in TOPICS}
    assert owners == {(t, p): 1 for t in subscribed for p in range(TOPICS[t])}
    by_id = {m.member_id: m for m in members}
    for m, ps in result.items():
        assert {t for t, _ in ps} <= by_id[m].subscribed_topic_ids
    if len({m.subscribed_topic_ids for m in members}) == 1:
        sizes = [len(ps) for ps in result.values()]
        assert max(sizes) - min(sizes) <= 1
    subs = {m.member_id: m.subscribed_topic_ids for m in members}
    assert rerun(result, TOPICS, subs) == result
