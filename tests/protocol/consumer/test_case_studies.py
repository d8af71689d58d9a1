"""Seed 002's case studies, step by step.

The shard does in one heartbeat what the seed narrates in several sentences (bump the epoch,
compute the target, move the member); the records it writes pass through each of the seed's
tables in turn, so each test replays the journal and checks that the seed's tables appear,
in order, among the states the records produce.
"""

from __future__ import annotations

from protocol.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.records import Record, TopicMetadataEntry
from tests.protocol.driver import (
    Member,
    TracedShard,
    appears_in_order,
    image,
    snapshot,
    state,
    together,
)

F = "foo"


def foo(*ps: int) -> list[str]:
    return [f"foo-{p}" for p in ps]


def test_basic_case_study_unfolds_as_the_seed_describes():
    shard = TracedShard(metadata=image(foo=3))
    a, b, c = (Member(shard, name) for name in "ABC")

    a.join()
    assert (a.epoch, a.owned) == (1, {"foo-id": (0, 1, 2)})
    b.join()
    assert (b.epoch, b.owned) == (2, {})
    assert b.last.assignment.pending_topic_partitions[0].partitions == [2]
    a.heartbeat()  # told to revoke foo-2
    assert a.owned == {"foo-id": (0, 1)} and a.epoch == 1
    a.heartbeat()  # acknowledges: moves to epoch 2, releases foo-2
    assert a.epoch == 2
    b.heartbeat()
    assert (b.epoch, b.owned) == (2, {"foo-id": (2,)})
    # C's join and B's heartbeat in one turn: B moves to epoch 3 before C does, as the seed
    # tells it; C's first reply already carries epoch 3 (the seed's next step).
    together(shard, [(b, b.heartbeat_request()), (c, c.join_request())])
    assert (b.epoch, c.epoch, c.owned) == (3, 3, {})
    a.heartbeat()  # told to revoke foo-1
    a.heartbeat()  # acknowledges
    c.heartbeat()

    expected = [
        state(1, 0, {}, {"A": (0, [], [])}),
        state(1, 1, {"A": foo(0, 1, 2)}, {"A": (0, [], [])}),
        state(1, 1, {"A": foo(0, 1, 2)}, {"A": (1, foo(0, 1, 2), [])}),
        state(2, 1, {"A": foo(0, 1, 2)}, {"A": (1, foo(0, 1, 2), []), "B": (0, [], [])}),
        state(2, 2, {"A": foo(0, 1), "B": foo(2)}, {"A": (1, foo(0, 1, 2), []), "B": (0, [], [])}),
        state(
            2, 2, {"A": foo(0, 1), "B": foo(2)}, {"A": (1, foo(0, 1, 2), []), "B": (2, [], foo(2))}
        ),
        state(2, 2, {"A": foo(0, 1), "B": foo(2)}, {"A": (2, foo(0, 1), []), "B": (2, [], [])}),
        state(2, 2, {"A": foo(0, 1), "B": foo(2)}, {"A": (2, foo(0, 1), []), "B": (2, foo(2), [])}),
        state(
            3,
            2,
            {"A": foo(0, 1), "B": foo(2)},
            {"A": (2, foo(0, 1), []), "B": (2, foo(2), []), "C": (0, [], [])},
        ),
        state(
            3,
            3,
            {"A": foo(0), "B": foo(2), "C": foo(1)},
            {"A": (2, foo(0, 1), []), "B": (2, foo(2), []), "C": (0, [], [])},
        ),
        state(
            3,
            3,
            {"A": foo(0), "B": foo(2), "C": foo(1)},
            {"A": (2, foo(0, 1), []), "B": (3, foo(2), []), "C": (0, [], [])},
        ),
        state(
            3,
            3,
            {"A": foo(0), "B": foo(2), "C": foo(1)},
            {"A": (2, foo(0, 1), []), "B": (3, foo(2), []), "C": (3, [], foo(1))},
        ),
        state(
            3,
            3,
            {"A": foo(0), "B": foo(2), "C": foo(1)},
            {"A": (3, foo(0), []), "B": (3, foo(2), []), "C": (3, [], [])},
        ),
        state(
            3,
            3,
            {"A": foo(0), "B": foo(2), "C": foo(1)},
            {"A": (3, foo(0), []), "B": (3, foo(2), []), "C": (3, foo(1), [])},
        ),
    ]
    states = shard.states()
    assert appears_in_order(expected, states), _explain(expected, states)
    assert shard.groups["g"].state == "stable"


def _group_at(
    epoch: int, topic_partitions: int, assignment: dict[str, tuple[int, ...]]
) -> list[Record]:
    """Records that put group g at ``epoch`` with every member reconciled to ``assignment``."""
    records = [
        Record(ConsumerGroupMetadataKey("g"), ConsumerGroupMetadataValue(epoch)),
        Record(
            ConsumerGroupPartitionMetadataKey("g"),
            ConsumerGroupPartitionMetadataValue(
                epoch, (TopicMetadataEntry("foo-id", F, topic_partitions),)
            ),
        ),
    ]
    for mid, ps in assignment.items():
        records.append(
            Record(
                ConsumerGroupMemberMetadataKey("g", mid),
                ConsumerGroupMemberMetadataValue(
                    subscribed_topic_names=(F,), rebalance_timeout_ms=60_000
                ),
            )
        )
        records.append(
            Record(
                ConsumerGroupTargetAssignmentMemberKey("g", mid),
                ConsumerGroupTargetAssignmentMemberValue({"foo-id": ps} if ps else {}),
            )
        )
        records.append(
            Record(
                ConsumerGroupCurrentMemberAssignmentKey("g", mid),
                ConsumerGroupCurrentMemberAssignmentValue(
                    epoch, epoch - 1, 0, {"foo-id": ps} if ps else {}
                ),
            )
        )
    records.append(
        Record(
            ConsumerGroupTargetAssignmentMetadataKey("g"),
            ConsumerGroupTargetAssignmentMetadataValue(epoch),
        )
    )
    return records


def _member(shard, mid: str, epoch: int, ps: tuple[int, ...]) -> Member:
    return Member(shard, mid, epoch=epoch, owned={"foo-id": ps} if ps else {})


def test_member_failure_case_study_revokes_before_assigning_and_fences_after_session_timeout():
    shard = TracedShard(metadata=image(foo=6))
    shard.load(_group_at(21, 6, {"A": (0, 1, 2), "B": (3, 4, 5)}))
    a, b = _member(shard, "A", 21, (0, 1, 2)), _member(shard, "B", 21, (3, 4, 5))
    c = Member(shard, "C")

    c.join()
    assert c.epoch == 22 and c.owned == {}
    a.heartbeat()  # told to revoke foo-2
    assert a.owned == {"foo-id": (0, 1)}
    a.heartbeat()  # acknowledges
    c.heartbeat()  # gets foo-2, still waits for foo-5
    assert c.owned == {"foo-id": (2,)}
    b.heartbeat()
    b.heartbeat()
    c.heartbeat()
    assert c.owned == {"foo-id": (2, 5)}

    # A stops heartbeating; B and C keep going until A's session expires.
    session_ms = shard.config.group_consumer_session_timeout_ms
    for now in range(5_000, session_ms, 5_000):
        shard.tick(now)
        b.heartbeat()
        c.heartbeat()
    assert "A" in shard.groups["g"].members
    shard.tick(session_ms + 1)
    assert "A" not in shard.groups["g"].members
    b.heartbeat()
    c.heartbeat()

    t22 = {"A": foo(0, 1), "B": foo(3, 4), "C": foo(2, 5)}
    t23 = {"B": foo(0, 3, 4), "C": foo(1, 2, 5)}
    expected = [
        state(
            21,
            21,
            {"A": foo(0, 1, 2), "B": foo(3, 4, 5)},
            {"A": (21, foo(0, 1, 2), []), "B": (21, foo(3, 4, 5), [])},
        ),
        state(
            22,
            22,
            t22,
            {"A": (21, foo(0, 1, 2), []), "B": (21, foo(3, 4, 5), []), "C": (0, [], [])},
        ),
        state(
            22,
            22,
            t22,
            {"A": (21, foo(0, 1, 2), []), "B": (21, foo(3, 4, 5), []), "C": (22, [], foo(2, 5))},
        ),
        state(
            22,
            22,
            t22,
            {"A": (22, foo(0, 1), []), "B": (21, foo(3, 4, 5), []), "C": (22, foo(2), foo(5))},
        ),
        state(
            22, 22, t22, {"A": (22, foo(0, 1), []), "B": (22, foo(3, 4), []), "C": (22, foo(2), [])}
        ),
        state(
            22,
            22,
            t22,
            {"A": (22, foo(0, 1), []), "B": (22, foo(3, 4), []), "C": (22, foo(2, 5), [])},
        ),
        # A's session expires. Kafka (and Cohort) drop A's target together with A; the seed
        # keeps showing it until the next computation, which follows in the same event.
        state(
            23,
            22,
            {"B": foo(3, 4), "C": foo(2, 5)},
            {"B": (22, foo(3, 4), []), "C": (22, foo(2, 5), [])},
        ),
        state(23, 23, t23, {"B": (22, foo(3, 4), []), "C": (22, foo(2, 5), [])}),
        state(23, 23, t23, {"B": (23, foo(0, 3, 4), []), "C": (23, foo(1, 2, 5), [])}),
    ]
    states = shard.states()
    assert appears_in_order(expected, states), _explain(expected, states)


def test_partition_added_case_study_bumps_the_epoch_and_assigns_the_new_partition():
    shard = TracedShard(metadata=image(foo=1))
    shard.load(_group_at(22, 1, {"A": (0,), "B": ()}))
    a, b = _member(shard, "A", 22, (0,)), _member(shard, "B", 22, ())

    grown = MetadataImage([TopicMetadata("foo-id", F, 2)])
    shard.update_metadata(grown)
    assert shard.groups["g"].group_epoch == 23
    a.heartbeat()
    b.heartbeat()
    assert (a.epoch, a.owned, b.epoch, b.owned) == (23, {"foo-id": (0,)}, 23, {"foo-id": (1,)})

    expected = [
        state(22, 22, {"A": foo(0), "B": []}, {"A": (22, foo(0), []), "B": (22, [], [])}),
        state(23, 22, {"A": foo(0), "B": []}, {"A": (22, foo(0), []), "B": (22, [], [])}),
        state(23, 23, {"A": foo(0), "B": foo(1)}, {"A": (22, foo(0), []), "B": (22, [], [])}),
        state(23, 23, {"A": foo(0), "B": foo(1)}, {"A": (23, foo(0), []), "B": (23, foo(1), [])}),
    ]
    states = shard.states(metadata=grown)
    assert appears_in_order(expected, states), _explain(expected, states)
    assert snapshot(shard)["current"]["B"] == (23, foo(1), [])


def _explain(expected: list[dict], states: list[dict]) -> str:
    it = iter(states)
    for e in expected:
        if not any(s == e for s in it):
            return f"missing {e}\nstates were:\n" + "\n".join(map(str, states))
    return ""
