"""CreateTopics and CreatePartitions against requests that repeat a name: each duplicated name
is refused once, INVALID_REQUEST "Duplicate topic name." as Kafka's ControllerApis answers, and
duplicates are found in one pass, so a request of 100,000 entries cannot hold the gateway's
loop for minutes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from protocol.wire import topics

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
