"""One validation (issue 23): a request the Kafka wire codec built is not type-checked again.

What that relies on: every request ``decode_request`` and its row's ``decode`` make of any
frame, at any version of any API the gateway serves, passes ``check_types`` (types, widths,
string lengths, the entries a request may hold). What it must not open: a request that did not
come from the codec in this process (a Ray client's, pickled, whatever it carries) is checked
and refused with INVALID_REQUEST, on the shard's path and on the runtime's. No test here starts
Ray.
"""

from __future__ import annotations

import asyncio
import inspect
import io
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.serial import entity_writer

from actors.runtime.controller import ControllerImage
from actors.runtime.memory_storage import MemoryMedium, MemoryStorage
from actors.runtime.turns import PartitionTurns
from protocol import messages as m
from protocol.api import BY_API_KEY, Api
from protocol.config import CoordinatorConfig
from protocol.errors import CoordinatorError, Errors
from protocol.metadata import TopicMetadata
from protocol.shard import GroupCoordinatorShard
from protocol.types import MAX_REQUEST_ENTRIES
from protocol.validation import check_types
from protocol.wire.codec import Decoded, WireError, decode_request
from protocol.wire.codec import request_schema as load_request_schema
from protocol.wire.entities import build
from protocol.wire.ids import topic_uuid
from protocol.wire.topics import TopicIndex
from tests.gateway.schema_strategies import plain_values
from tests.gateway.test_fast_codec import _consumer_heartbeat, _garbled, _request_frame
from tests.protocol.driver import image

KNOWN_TOPIC = TopicMetadata("Zm9vLXRvcGljLWlkLTAwMQ", "orders", 3)
INDEX = TopicIndex([KNOWN_TOPIC])
CASES = [(key, v) for key, api in sorted(BY_API_KEY.items()) if api.decode is not None
         for v in range(api.versions.min, api.versions.max + 1)]


def _translate(api: Api, decoded: Decoded, client_host: str) -> list[object]:
    """What the gateway hands the partitions for ``decoded``: its row's ``decode``, given what
    the gateway gives it (the version, the topic index, the client's id and address)."""
    given_ = {"version": decoded.header.api_version, "index": INDEX,
              "client_id": decoded.header.client_id, "client_host": client_host}
    params = list(inspect.signature(api.decode).parameters)[1:]
    out = api.decode(decoded.body, *(given_[p] for p in params))
    return out if isinstance(out, list) else [out]


def _frame(api_key: int, version: int, values: dict, client_id: str | None) -> bytes:
    schema = load_request_schema(api_key, version)
    buf = io.BytesIO()
    entity_writer(schema)(buf, build(schema, values))
    return _request_frame(api_key, version, buf.getvalue(), client_id)


@st.composite
def _owning_known_topics(draw, values):
    """Some of the UUIDs a request names replaced by a known topic's (which the topic index
    translates to that topic's own id, not the UUID's spelling)."""
    if isinstance(values, list):
        return [draw(_owning_known_topics(v)) for v in values]
    if isinstance(values, dict):
        return {k: (topic_uuid(KNOWN_TOPIC.topic_id)
                    if isinstance(v, uuid.UUID) and draw(st.booleans())
                    else draw(_owning_known_topics(v)))
                for k, v in values.items()}
    return values


@pytest.mark.parametrize(("api_key", "version"), CASES)
@settings(max_examples=40, deadline=None)
@given(data=st.data(), client_id=st.none() | st.text(max_size=12),
       client_host=st.sampled_from(["127.0.0.1", "::1", "10.0.0.7"]))
def test_every_request_the_wire_codec_builds_passes_check_types(
        api_key, version, data, client_id, client_host):
    api = BY_API_KEY[api_key]
    values = data.draw(plain_values(load_request_schema(api_key, version)))
    frame = _frame(api_key, version, data.draw(_owning_known_topics(values)), client_id)
    requests = _translate(api, decode_request(frame), client_host)
    assert all(type(r) is api.request for r in requests)
    for request in requests:
        check_types(request)


@pytest.mark.parametrize(("api_key", "version"), CASES)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_whatever_a_garbled_frame_decodes_to_translates_and_passes_check_types(
        api_key, version, data):
    api = BY_API_KEY[api_key]
    values = data.draw(plain_values(load_request_schema(api_key, version)))
    frame = data.draw(_garbled(_frame(api_key, version, values, "c")))
    try:
        decoded = decode_request(frame)
    except WireError:
        return
    if decoded.header.api_key != api_key:
        api = BY_API_KEY[decoded.header.api_key]
        if api.decode is None:
            return
    for request in _translate(api, decoded, "127.0.0.1"):
        check_types(request)


def test_the_longest_strings_and_the_most_entries_the_codec_admits_pass_check_types():
    """The bounds agree: what decodes at the limit passes, one more is refused by the codec
    (``tests/gateway/test_fast_codec.py``), so no decoded request breaks a bound."""
    api = BY_API_KEY[68]
    for frame in (_consumer_heartbeat("g" * 32_767),
                  _consumer_heartbeat(partitions=MAX_REQUEST_ENTRIES - 1)):
        (request,) = _translate(api, decode_request(frame), "127.0.0.1")
        check_types(request)


# ------------------------------------------------------------------------ what it opens


def _forged() -> m.OffsetCommitRequest:
    """A commit no codec could build: a partition index that is a string."""
    part = m.OffsetCommitRequestPartition(partition_index="0", committed_offset=5)
    return m.OffsetCommitRequest(group_id="g", topics=[m.OffsetCommitRequestTopic("t", [part])])


def _out_of_range() -> m.HeartbeatRequest:
    """A classic heartbeat whose generation is no int32: refused when checked; a handler
    that runs anyway answers it as it answers any heartbeat of an unknown member."""
    return m.HeartbeatRequest(group_id="g", generation_id=2**40, member_id="m")


def _errors(reply: object) -> list[int]:
    if isinstance(reply, m.OffsetCommitResponse) and reply.error_code == Errors.NONE:
        return [p.error_code for t in reply.topics for p in t.partitions]
    return [reply.error_code]


def test_a_forged_request_is_refused_with_invalid_request_when_nobody_vouches_for_it():
    shard = GroupCoordinatorShard(metadata=image(t=1))
    forged = _forged()
    forged.checked = True  # what a client might try: nothing the request carries counts
    forged.typed = True
    result = shard.handle_batch([forged, _out_of_range()])
    assert [_errors(r) for _, r in result.replies] == [[Errors.INVALID_REQUEST]] * 2
    assert result.records == []


def test_only_the_request_vouched_for_skips_the_check_and_only_while_its_handler_runs():
    shard = GroupCoordinatorShard(metadata=image(t=1))
    vouched, forged = _out_of_range(), _forged()
    result = shard.handle_batch([vouched, forged], checked={id(vouched)})
    replies = dict((id(q), r) for q, r in result.replies)
    assert _errors(replies[id(vouched)]) != [Errors.INVALID_REQUEST]
    assert _errors(replies[id(forged)]) == [Errors.INVALID_REQUEST]
    with pytest.raises(CoordinatorError) as refused:
        check_types(vouched)  # the vouching ended with the handler
    assert refused.value.error == Errors.INVALID_REQUEST
    assert _errors(shard.handle(vouched).response) == [Errors.INVALID_REQUEST]


async def _turns() -> PartitionTurns:
    async def fetch_image() -> ControllerImage:
        return ControllerImage(1, image(t=1), {})

    async def inline(fn, *args):
        return fn(*args)

    turns = PartitionTurns("offsets-0", MemoryStorage(MemoryMedium()), CoordinatorConfig(),
                           fetch_image, clock_ms=lambda: 1_000, in_thread=inline)
    turns.task = asyncio.get_running_loop().create_task(turns.run())  # type: ignore[attr-defined]
    for _ in range(200):
        if turns.state == "active":
            return turns
        await asyncio.sleep(0.01)
    raise AssertionError("the partition never served")


def test_the_runtime_checks_what_it_is_not_told_is_typed_and_trusts_what_it_is():
    async def test():
        turns = await _turns()
        unvouched = await turns.handle_batch([_forged(), _out_of_range()])
        assert [_errors(r) for r in unvouched] == [[Errors.INVALID_REQUEST]] * 2
        (typed,) = await turns.handle_batch([_out_of_range()], typed=True)
        assert _errors(typed) != [Errors.INVALID_REQUEST]
        (commit,) = await turns.handle_batch(
            [m.OffsetCommitRequest(group_id="g", topics=[m.OffsetCommitRequestTopic(
                "t", [m.OffsetCommitRequestPartition(0, 5)])])], typed=True)
        assert _errors(commit) == [Errors.NONE]
        turns.task.cancel()

    asyncio.run(test())


def test_a_typed_batch_of_the_same_request_twice_is_answered_twice():
    """The runtime copies a request sent twice in one batch (replies match by identity); the
    copy is as well typed as the original and is answered too."""
    async def test():
        turns = await _turns()
        commit = m.OffsetCommitRequest(group_id="g", topics=[m.OffsetCommitRequestTopic(
            "t", [m.OffsetCommitRequestPartition(0, 5)])])
        replies = await turns.handle_batch([commit, commit], typed=True)
        assert [_errors(r) for r in replies] == [[Errors.NONE]] * 2
        turns.task.cancel()

    asyncio.run(test())


def test_a_header_client_id_of_the_longest_int16_length_fits_a_request():
    """JoinGroup and ConsumerGroupHeartbeat carry the header's client id into the request:
    the header's int16 length bounds it as Kafka's strings are bounded."""
    body = struct.pack(">h", 1) + b"g" + struct.pack(">ii", 1, 1) + struct.pack(">h", 0)
    body += struct.pack(">h", -1) + struct.pack(">h", 1) + b"c" + struct.pack(">i", 0)
    frame = _request_frame(11, 5, body, "x" * 32_767)
    (request,) = _translate(BY_API_KEY[11], decode_request(frame), "127.0.0.1")
    assert request.client_id == "x" * 32_767
    check_types(request)
