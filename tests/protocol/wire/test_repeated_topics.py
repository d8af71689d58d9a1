"""Metadata against requests that repeat a topic many times: each topic is answered once
(Kafka reads the list as a set), so a 3 MB request cannot make a reply of millions of
partition entries."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from protocol.metadata import TopicMetadata
from protocol.wire import topics
from protocol.wire.ids import topic_uuid

NODE = topics.Node(0, "localhost", 9092)
INDEX = topics.TopicIndex([TopicMetadata("tid-t", "t", 8), TopicMetadata("tid-u", "u", 2)])
MANY = 200_000


def everyone(_: str) -> bool:
    return True


def test_metadata_naming_one_topic_many_times_answers_it_once():
    described: list[str] = []

    def may_describe(name: str) -> bool:
        described.append(name)
        return True

    reply = topics.metadata_response({"topics": [{"name": "t", "topic_id": None}] * MANY}, 12,
                                     INDEX, NODE, may_describe)
    assert [(t["name"], len(t["partitions"])) for t in reply["topics"]] == [("t", 8)]
    assert described == ["t"]


def test_metadata_naming_topics_by_id_and_name_answers_each_once_in_first_named_order():
    t_id = topic_uuid("tid-t")
    named = [{"name": "u", "topic_id": None}, {"name": None, "topic_id": t_id},
             {"name": "nope", "topic_id": None}] * 1000
    reply = topics.metadata_response({"topics": named}, 12, INDEX, NODE, everyone)
    assert [(t["name"], t["error_code"]) for t in reply["topics"]] == [
        ("u", 0), ("t", 0), ("nope", 3)]


@given(st.lists(st.sampled_from(["t", "u", "nope", ""]), max_size=50))
def test_metadata_answers_the_set_of_names_in_the_order_first_named(names):
    reply = topics.metadata_response({"topics": [{"name": n} for n in names]}, 12, INDEX, NODE,
                                     everyone)
    assert [t["name"] for t in reply["topics"]] == list(dict.fromkeys(names))


def test_an_unknown_topic_id_repeated_is_answered_once():
    tid = uuid.uuid4()
    reply = topics.metadata_response({"topics": [{"name": None, "topic_id": tid}] * 1000}, 12,
                                     INDEX, NODE, everyone)
    assert [(t["topic_id"], t["error_code"]) for t in reply["topics"]] == [(tid, 100)]
