"""Every API the gateway serves, at every version it advertises, round-trips through both
codecs: kio (the gateway's) and kafka-python's ``kafka.protocol`` (an independent engine).

A request made of random values is written by kio, read by kafka-python, written again by
kafka-python with a request header, and read by the gateway's ``decode_request``: it must come
back as it was. A response goes the other way: ``encode_response`` writes it, kafka-python
reads it (header included) and writes it again, kio reads that. Any field either codec reads
or writes differently, at any version, fails here.
"""

from __future__ import annotations

import io

# Each message family, imported so that kafka-python registers its classes.
import kafka.protocol.admin
import kafka.protocol.consumer
import kafka.protocol.metadata
import kafka.protocol.producer
import kafka.protocol.sasl  # noqa: F401
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.protocol.api_message import ApiMessage
from kio.serial import entity_reader, entity_writer

import tests.gateway.kip848
import tests.gateway.kip932
import tests.gateway.kip1071  # noqa: F401
from actors.gateway.dispatch import _api_versions_reply
from protocol.api import BY_API_KEY
from protocol.wire.codec import (
    RequestHeader,
    decode_request,
    encode_response,
    encode_response_with_kio,
)
from protocol.wire.codec import request_schema as load_request_schema
from protocol.wire.codec import response_schema as load_response_schema
from protocol.wire.entities import build, plain
from protocol.wire.versions import API_VERSIONS, api_versions_body
from tests.gateway.schema_strategies import plain_values


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def _classes() -> tuple[dict[int, type], dict[int, type]]:
    requests, responses = {}, {}
    for c in _subclasses(ApiMessage):
        if getattr(c, "_class_version", None) is None and getattr(c, "_json", None):
            (requests if c.is_request() else responses)[c.API_KEY] = c
    return requests, responses


REQUESTS, RESPONSES = _classes()
CASES = [(key, v) for key, api in sorted(BY_API_KEY.items())
         for v in range(api.versions.min, api.versions.max + 1)]


def _kio_bytes(schema: type, data: dict) -> bytes:
    buf = io.BytesIO()
    entity_writer(schema)(buf, build(schema, data))
    return buf.getvalue()


def _canonical(schema: type, data: dict) -> dict:
    return plain(build(schema, data))


def test_every_advertised_api_has_both_codecs():
    assert {k for k, _ in CASES} <= set(REQUESTS) & set(RESPONSES)


@pytest.mark.parametrize(("api_key", "version"), CASES)
@settings(max_examples=3)
@given(data=st.data())
def test_a_request_written_by_kafka_python_decodes_as_kio_wrote_it(api_key, version, data):
    schema = load_request_schema(api_key, version)
    values = data.draw(plain_values(schema))
    theirs = REQUESTS[api_key].decode(_kio_bytes(schema, values), version=version)
    theirs.with_header(correlation_id=7, client_id="cross-check")
    decoded = decode_request(bytes(theirs.encode(header=True)))
    assert decoded.header == RequestHeader(api_key, version, 7, "cross-check")
    assert decoded.body == _canonical(schema, values)


@pytest.mark.parametrize(("api_key", "version"), CASES)
@settings(max_examples=3)
@given(data=st.data())
def test_a_response_written_by_the_gateway_reads_back_through_kafka_python(
        api_key, version, data):
    schema = load_response_schema(api_key, version)
    values = data.draw(plain_values(schema))
    if api_key == API_VERSIONS:
        values["error_code"] = 0  # an error reply is always v0 (KIP-511): tested below
    framed = encode_response(RequestHeader(api_key, version, 11, None), values)
    theirs = RESPONSES[api_key].decode(framed[4:], version=version, header=True)
    assert theirs.header.correlation_id == 11
    again, _ = entity_reader(schema)(bytes(theirs.encode()), 0)
    assert plain(again) == _canonical(schema, values)


def test_an_api_versions_error_reply_is_read_as_v0_listing_every_api():
    """KIP-511: a client whose ApiVersions version the broker lacks gets the v0 shape with
    UNSUPPORTED_VERSION and the supported ranges, and retries with a version listed there."""
    framed = encode_response(RequestHeader(API_VERSIONS, 9, 3, None), api_versions_body(35),
                             version=0)
    theirs = RESPONSES[API_VERSIONS].decode(framed[4:], version=3, header=True)
    assert theirs.error_code == 35
    assert {a.api_key: (a.min_version, a.max_version) for a in theirs.api_keys} == {
        key: tuple(api.versions) for key, api in BY_API_KEY.items()}


@pytest.mark.parametrize("version", range(BY_API_KEY[API_VERSIONS].versions.min,
                                          BY_API_KEY[API_VERSIONS].versions.max + 1))
def test_the_api_versions_reply_written_once_frames_as_kio_writes_it_each_time(version):
    header = RequestHeader(API_VERSIONS, version, 77, "c")
    cached = encode_response(header, _api_versions_reply(version))
    assert cached == encode_response_with_kio(header, api_versions_body())
    assert encode_response(header._replace(correlation_id=78), _api_versions_reply(version)) \
        != cached  # framed per request: the correlation id is the request's
