"""A partition's listener keeps written Metadata replies by question (``BrokerCore.metadata``):
a question is the set of topics it names, so naming a topic a million times is the question
naming it once, and a question too heavy to keep is answered without being kept."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from actors.gateway.broker import BrokerCore
from actors.gateway.listener import ListenerSpec
from actors.gateway.serving import GatewayOptions, WireRequest
from protocol.api import BY_API_KEY
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.wire.codec import RequestHeader
from protocol.wire.topics import Node

METADATA, VERSION = 3, 12
IMAGE = MetadataImage([TopicMetadata("tid-t", "t", 8)])


def _core() -> BrokerCore:
    turns = SimpleNamespace(shard=SimpleNamespace(image=IMAGE))
    return BrokerCore(Node(1000, "127.0.0.1", 9093),
                      ListenerSpec("gateway", "127.0.0.1", GatewayOptions()), None, turns)


def _ask(core: BrokerCore, names: list[str]) -> object:
    body = {"topics": [{"name": n, "topic_id": None} for n in names],
            "allow_auto_topic_creation": False, "include_topic_authorized_operations": False}
    req = WireRequest(RequestHeader(METADATA, VERSION, 1, "c"), body, "User:ANONYMOUS",
                      "127.0.0.1", BY_API_KEY[METADATA])
    return asyncio.run(core.metadata(req))


def test_metadata_naming_a_topic_many_times_is_kept_as_the_question_naming_it_once():
    core = _core()
    once = _ask(core, ["t"])
    assert _ask(core, ["t"] * 100_000) is once


def test_a_metadata_question_too_heavy_to_keep_is_answered_but_not_kept():
    core = _core()
    names = [f"n{k:08d}" for k in range(20_000)]  # ~500,000 characters of names
    first = _ask(core, names)
    assert _ask(core, names) is not first
    assert _ask(core, ["t"]) is _ask(core, ["t"])  # a light question still is
