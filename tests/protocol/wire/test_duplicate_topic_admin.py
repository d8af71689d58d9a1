"""CreateTopics, CreatePartitions and DeleteTopics against requests that repeat a name (or, for
DeleteTopics, an id): each duplicated name is refused once, INVALID_REQUEST "Duplicate topic
name." as Kafka's ControllerApis answers, and duplicates are found in one pass, so a request of
100,000 entries cannot hold the gateway's loop for minutes (nor, for DeleteTopics, ask the
controller 100,000 deletions: the wire fuzzer's repeated entries found that one)."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from protocol.metadata import TopicMetadata
from protocol.wire import topics
from protocol.wire.ids import topic_uuid
from protocol.wire.topics import TopicIndex

MANY = 200_000  # entries: names.count per entry would compare 4 * 10^10 names
REPEATS = 1_000
INVALID_REQUEST = 42


def _topic(name: str, count: int = 1) -> dict:
    return {"name": name, "num_partitions": count, "replication_factor": -1, "assignments": []}


def test_create_topics_answers_a_name_repeated_many_times_once_as_a_duplicate():
    plans = topics.plan_create_topics({"topics": [_topic("a")] + [_topic("d")] * REPEATS})
    assert [(p.name, p.error, p.message) for p in plans] == [
        ("a", 0, None), ("d", INVALID_REQUEST, "Duplicate topic name.")]


def test_create_topics_with_many_distinct_names_plans_each_in_linear_time():
    names = [f"topic-{k}" for k in range(MANY)]
    plans = topics.plan_create_topics({"topics": [_topic(n) for n in names]})
    assert [p.name for p in plans] == names and not any(p.error for p in plans)


def test_create_partitions_answers_a_name_repeated_many_times_once_as_a_duplicate():
    body = {"topics": [{"name": f"t{k}", "count": 2} for k in range(MANY)]
            + [{"name": "t0", "count": 3}] * REPEATS}
    plans = topics.plan_create_partitions(body)
    assert len(plans) == MANY
    assert (plans[0].name, plans[0].error, plans[0].message) == (
        "t0", INVALID_REQUEST, "Duplicate topic name.")
    assert not any(p.error for p in plans[1:])


@given(st.lists(st.sampled_from(["a", "b", "c", "d"]), max_size=30))
def test_create_topics_refuses_exactly_the_names_named_twice(names):
    plans = topics.plan_create_topics({"topics": [_topic(n) for n in names]})
    twice = {n for n in names if names.count(n) > 1}
    assert [p.name for p in plans] == list(dict.fromkeys(names))
    assert {p.name for p in plans if p.error == INVALID_REQUEST} == twice


def test_delete_topics_answers_a_name_repeated_many_times_once_and_deletes_none_of_it():
    for version, body in ((5, {"topic_names": ["a"] + ["d"] * REPEATS}),
                          (6, {"topics": [{"name": "a", "topic_id": uuid.UUID(int=0)}]
                               + [{"name": "d", "topic_id": uuid.UUID(int=0)}] * REPEATS})):
        plans = topics.plan_delete_topics(body, version, TopicIndex())
        assert [(p.name, p.error, p.message) for p in plans] == [
            ("a", 0, None), ("d", INVALID_REQUEST, "Duplicate topic name.")], version


def test_delete_topics_answers_an_id_repeated_many_times_once():
    index = TopicIndex([TopicMetadata("tid-x", "x", 1)])
    tid = topic_uuid("tid-x")
    plans = topics.plan_delete_topics({"topics": [{"name": None, "topic_id": tid}] * REPEATS},
                                      6, index)
    assert [(p.name, p.topic_id, p.error, p.message) for p in plans] == [
        (None, tid, INVALID_REQUEST, "Duplicate topic id.")]
    once = topics.plan_delete_topics({"topics": [{"name": None, "topic_id": tid}]}, 6, index)
    assert [(p.name, p.error) for p in once] == [("x", 0)]


def test_delete_topics_with_many_distinct_names_plans_each_in_linear_time():
    names = [f"topic-{k}" for k in range(MANY)]
    plans = topics.plan_delete_topics({"topic_names": names}, 5, TopicIndex())
    assert [p.name for p in plans] == names and not any(p.error for p in plans)
