"""A partition's listener keeps written Metadata replies by question (``BrokerCore.metadata``):
a question is the set of topics it names, so naming a topic a million times is the question
naming it once, and a question too heavy to keep is answered without being kept."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from actors.gateway import broker, topic_handlers
from actors.gateway.broker import BrokerCore
from actors.gateway.kept_metadata import KeptReplies
from actors.gateway.listener import ListenerSpec
from actors.gateway.serving import GatewayOptions, WireRequest
from actors.runtime.offload import BIG
from protocol.api import BY_API_KEY
from protocol.metadata import MetadataImage, TopicMetadata
from protocol.wire.codec import EncodedBody, RequestHeader, encode_body
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


def test_kept_replies_stay_within_their_byte_budget_least_recently_given_out_first():
    kept = KeptReplies(100)
    kept.keep(("a",), EncodedBody([b"x" * 40]))
    kept.keep(("b",), EncodedBody([b"x" * 30, b"y" * 10]))
    assert kept.get(("a",)) is not None  # a is now the most recently given
    kept.keep(("c",), EncodedBody([b"z" * 50]))  # 130 bytes: b goes
    assert kept.get(("b",)) is None and kept.get(("a",)) is not None and kept.held == 90
    kept.keep(("a",), EncodedBody([b"w" * 10]))  # kept again: counted once
    assert kept.held == 60 and len(kept) == 2
    kept.keep(("huge",), EncodedBody([b"h" * 101]))  # more than the budget: not kept
    assert kept.get(("huge",)) is None and kept.held == 60


def test_a_partitions_kept_metadata_replies_are_bounded_by_bytes_not_count(monkeypatch):
    """Replies for every topic at every version, 7-9 KB each: only what fits is kept,
    and each is the same reply as one written without keeping any."""
    image = MetadataImage([TopicMetadata(f"tid-{i}", f"t{i}", 100) for i in range(3)])
    monkeypatch.setattr(broker, "METADATA_KEPT_BYTES", 10_000)
    turns = SimpleNamespace(shard=SimpleNamespace(image=image))
    core = BrokerCore(Node(1000, "127.0.0.1", 9093),
                      ListenerSpec("gateway", "127.0.0.1", GatewayOptions()), None, turns)
    versions = BY_API_KEY[METADATA].versions
    for version in range(versions.min, versions.max + 1):
        body = {"topics": None if version else [], "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False}
        req = WireRequest(RequestHeader(METADATA, version, 1, "c"), body, "User:ANONYMOUS",
                          "127.0.0.1", BY_API_KEY[METADATA])
        reply = asyncio.run(core.metadata(req))
        written = encode_body(METADATA, version, asyncio.run(topic_handlers.metadata(core, req)))
        assert reply.parts == written.parts
        assert core._metadata.held <= 10_000 and len(core._metadata) >= 1


def test_a_big_metadata_question_is_answered_as_a_small_one():
    """A question naming a topic 100,000 times (read off the loop) is the one naming it once."""
    core = _core()
    once = _ask(core, ["t"])
    token = BIG.set(True)
    try:
        assert _ask(_core(), ["t"] * 100_000).parts == once.parts
    finally:
        BIG.reset(token)


def test_kept_replies_are_bounded_in_number_too():
    kept = KeptReplies(1 << 20, most=3)
    for k in range(10):
        kept.keep((k,), EncodedBody([b"x"]))
    assert len(kept) == 3 and kept.held == 3 and (9,) in kept and (6,) not in kept
