"""A group's assignor choice from its running tally equals the rule read over every member.

The group counts what its members ask (``assignor_choice.AssignorTally``) as their records are
replayed, so a join does not pass over a thousand members; whatever order the records come in
(a member made by its assignment record first, a member leaving, a member changing what it
asks), the choice must be the one ``choose_assignor`` makes from the members themselves.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.assignor_choice import choose_assignor
from protocol.config import CoordinatorConfig
from protocol.consumer.group import ConsumerGroup
from protocol.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
)
from protocol.records import ClientAssignorEntry, Record

CONFIG = CoordinatorConfig()


def entry(name: str, low: int, high: int) -> ClientAssignorEntry:
    return ClientAssignorEntry(name, low, high, 0, low, b"")


metadata = st.builds(
    ConsumerGroupMemberMetadataValue,
    server_assignor=st.sampled_from([None, None, "uniform", "range"]),
    client_assignors=st.sampled_from([
        (), (entry("a", 0, 1),), (entry("a", 1, 2), entry("b", 0, 0)), (entry("b", 0, 3),),
    ]),
)
member_ids = st.sampled_from([f"m{i}" for i in range(5)])
steps = st.lists(st.one_of(
    st.tuples(st.just("metadata"), member_ids, st.one_of(st.none(), metadata)),
    st.tuples(st.just("assignment"), member_ids, st.booleans()),
), max_size=30)


def record(step: tuple) -> Record:
    kind, mid, value = step
    if kind == "metadata":
        return Record(ConsumerGroupMemberMetadataKey("g", mid), value)
    current = ConsumerGroupCurrentMemberAssignmentValue(1, 0, 0) if value else None
    return Record(ConsumerGroupCurrentMemberAssignmentKey("g", mid), current)


@settings(max_examples=400, deadline=None)
@given(steps, st.integers(0, 30))
def test_the_tallied_choice_is_the_choice_over_every_member(steps: list, first_ask: int) -> None:
    group = ConsumerGroup("g")
    for i, step in enumerate(steps):
        if i == first_ask:  # the tally starts from the members it finds, then follows replay
            group.assignor(CONFIG)
        group.replay(record(step))
        assert group.assignor(CONFIG) == choose_assignor(
            list(group.members.values()), CONFIG.default_server_assignor)


def test_the_most_requested_server_assignor_is_chosen_and_follows_a_leave() -> None:
    group = ConsumerGroup("g")
    for mid, name in (("a", "range"), ("b", "uniform"), ("c", "uniform")):
        group.replay(Record(ConsumerGroupMemberMetadataKey("g", mid),
                            ConsumerGroupMemberMetadataValue(server_assignor=name)))
    assert group.assignor(CONFIG).name == "uniform"
    group.replay(Record(ConsumerGroupMemberMetadataKey("g", "c"), None))
    assert group.assignor(CONFIG).name == "range"  # one each: ties go by name
