"""Fetch's response written without kio is byte for byte kio's, at every version served.

``fetch_body_parts`` reads the plain dict kio's path reads; here Hypothesis draws such dicts of
the version's shape (every field, then some left out and some set to None, error codes kio
has no name for, tagged fields at and off their defaults, real record batches) and the frame
``encode_response`` writes from the pieces must equal the one it writes through kio.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.api import BY_API_KEY
from protocol.metadata import TopicMetadata
from protocol.wire import stream
from protocol.wire.codec import EncodedBody, RequestHeader, encode_response
from protocol.wire.codec import response_schema as load_response_schema
from protocol.wire.fetch_response import fetch_body_parts, uvarint
from protocol.wire.record_batch import record_batch
from protocol.wire.topics import TopicIndex
from tests.gateway.schema_strategies import plain_values

FETCH = 1
VERSIONS = range(BY_API_KEY[FETCH].versions.min, BY_API_KEY[FETCH].versions.max + 1)
BATCHES = [record_batch(0, [1_000], [b"0"]),
           stream.SyntheticStream(anchor_ms=0).records(1_000, 1_500)]


def _kio(version: int, body: dict) -> bytes:
    return encode_response(RequestHeader(FETCH, version, 42, "c"), body)


def _direct(version: int, body: dict) -> bytes:
    return encode_response(RequestHeader(FETCH, version, 42, "c"),
                           EncodedBody(fetch_body_parts(version, body)))


def _perturbed(data: st.DataObject, value):
    """``value`` with some dict keys dropped, some values None, some error codes unnamed and
    some records real batches, chosen by Hypothesis all the way down."""
    if isinstance(value, list):
        return [_perturbed(data, v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, v in value.items():
        choice = data.draw(st.sampled_from(["keep", "keep", "keep", "drop", "none"]))
        if choice == "drop":
            continue
        if choice == "none":
            out[key] = None
        elif key == "error_code" and data.draw(st.booleans()):
            out[key] = data.draw(st.sampled_from([10_001, 32_767, -32_768, 200]))
        elif key == "records" and data.draw(st.booleans()):
            out[key] = data.draw(st.sampled_from(BATCHES))
        else:
            out[key] = _perturbed(data, v)
    return out


@pytest.mark.parametrize("version", VERSIONS)
@settings(max_examples=150)
@given(data=st.data())
def test_any_fetch_response_is_written_as_kio_writes_it(version, data):
    body = data.draw(plain_values(load_response_schema(FETCH, version)))
    if data.draw(st.booleans()):
        body = _perturbed(data, body)
    assert _direct(version, body) == _kio(version, body)


@pytest.mark.parametrize("version", VERSIONS)
def test_the_gateways_own_reply_is_written_as_kio_writes_it(version):
    index = TopicIndex([TopicMetadata("GXCmfjCPSEefsQqgR0oNjw", "foo", 3)])
    s = stream.SyntheticStream(anchor_ms=0)
    body = {"max_bytes": 1 << 20, "topics": [{"topic": "foo", "partitions": [
        {"partition": 0, "fetch_offset": 10, "partition_max_bytes": 1 << 20},
        {"partition": 1, "fetch_offset": 10**9, "partition_max_bytes": 1 << 20},
        {"partition": 7, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
    reply, count = stream.fetch_response(body, index, s, 10**9, lambda _t: True)
    assert count > 0
    assert _direct(version, reply) == _kio(version, reply)


def test_cached_batches_are_handed_over_not_copied():
    parts = fetch_body_parts(12, {"responses": [{"topic": "t", "partitions": [
        {"partition_index": 0, "records": BATCHES[1]}]}]})
    assert any(p is BATCHES[1] for p in parts)


@pytest.mark.parametrize("version", [3, 13])
def test_versions_it_does_not_know_are_refused(version):
    with pytest.raises(ValueError, match="not written here"):
        fetch_body_parts(version, {})


@given(st.integers(0, 2**35))
def test_uvarint_is_kafkas(n):
    data = uvarint(n)
    assert all(b & 0x80 for b in data[:-1]) and not data[-1] & 0x80
    assert sum((b & 0x7F) << (7 * i) for i, b in enumerate(data)) == n
