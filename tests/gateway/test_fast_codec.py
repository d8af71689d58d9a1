"""The hand-written codecs of the hot group APIs (``protocol/wire/fast_requests.py`` and
``fast_responses.py``) against kio, their oracle, at every version the gateway serves.

A request body of random values, written by kio, must decode by hand to exactly what kio's
path makes of it; the same frame cut, garbled or padded must get the same outcome from both
paths (the same decoded values, or the same ``WireError``), and nothing else may escape. A
response body of random values (fields left out, None where the schema wants a value, error
codes kio does not know) must encode by hand to kio's bytes. No test here starts Ray.
"""

from __future__ import annotations

import dataclasses
import io
import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kio.serial import entity_writer
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveTupleField,
    classify_field,
    get_field_tag,
    get_schema_field_type,
    is_optional,
)

from protocol import messages as m
from protocol.api import BY_API_KEY
from protocol.types import MAX_REQUEST_ENTRIES
from protocol.wire.codec import (
    MalformedRequest,
    RequestHeader,
    WireError,
    decode_request,
    decode_request_with_kio,
    encode_commit_reply,
    encode_response,
    encode_response_with_kio,
)
from protocol.wire.codec import request_schema as load_request_schema
from protocol.wire.codec import response_schema as load_response_schema
from protocol.wire.entities import build, plain
from protocol.wire.fast_requests import DECODERS
from protocol.wire.fast_responses import ENCODERS
from protocol.wire.offsets import commit_response
from tests.gateway.schema_strategies import plain_values


def _cases(keys) -> list[tuple[int, int]]:
    return [(key, v) for key in sorted(keys)
            for v in range(BY_API_KEY[key].versions.min, BY_API_KEY[key].versions.max + 1)]


REQUEST_CASES = _cases(DECODERS)
RESPONSE_CASES = _cases(ENCODERS)


def _request_frame(api_key: int, version: int, body: bytes, client_id: str | None = "c"
                   ) -> bytes:
    """A request frame's payload (no size prefix: ``decode_request`` takes what framing
    leaves), header v1 or v2 as the version's schema says."""
    head = struct.pack(">hhi", api_key, version, 7)
    if client_id is None:
        head += struct.pack(">h", -1)
    else:
        raw = client_id.encode()
        head += struct.pack(">h", len(raw)) + raw
    if load_request_schema(api_key, version).__flexible__:
        head += b"\x00"
    return head + body


def _kio_body(schema: type, values: dict) -> bytes:
    buf = io.BytesIO()
    entity_writer(schema)(buf, build(schema, values))
    return buf.getvalue()


def _outcome(decode, frame: bytes):
    """What a decoder makes of ``frame``: the decoded header and body, or the name of the
    ``WireError`` it raised (anything else escapes and fails the test)."""
    try:
        return decode(frame)
    except WireError as e:
        return type(e).__name__


def test_every_served_version_of_a_hot_api_has_both_hand_written_halves():
    assert set(DECODERS) == {8, 9, 12, 68}
    assert set(ENCODERS) == {8, 9, 11, 12, 13, 14, 68}


# ------------------------------------------------------------------------------ requests


@pytest.mark.parametrize(("api_key", "version"), REQUEST_CASES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_hot_request_decodes_by_hand_exactly_as_kio_decodes_it(api_key, version, data):
    schema = load_request_schema(api_key, version)
    values = data.draw(plain_values(schema))
    frame = _request_frame(api_key, version, _kio_body(schema, values))
    by_hand = decode_request(frame)
    assert by_hand == decode_request_with_kio(frame)
    assert by_hand.body == plain(build(schema, values))
    assert list(by_hand.body) == [f.name for f in dataclasses.fields(schema)]


@st.composite
def _garbled(draw, frame: bytes) -> bytes:
    """``frame`` cut short, with bytes overwritten, inserted or removed, or padded."""
    out = bytearray(frame)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["set", "insert", "delete", "cut", "pad"]))
        at = draw(st.integers(0, max(len(out) - 1, 0)))
        byte = draw(st.sampled_from([0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF]) | st.integers(0, 255))
        if op == "set" and out:
            out[at] = byte
        elif op == "insert":
            out.insert(at, byte)
        elif op == "delete" and out:
            del out[at]
        elif op == "cut":
            del out[at:]
        elif op == "pad":
            out += draw(st.binary(max_size=8))
    return bytes(out)


@pytest.mark.parametrize(("api_key", "version"), REQUEST_CASES)
@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_a_garbled_hot_request_gets_the_same_outcome_from_both_decoders(
        api_key, version, data):
    schema = load_request_schema(api_key, version)
    frame = _request_frame(api_key, version, _kio_body(schema, data.draw(plain_values(schema))))
    garbled = data.draw(_garbled(frame))
    assert _outcome(decode_request, garbled) == _outcome(decode_request_with_kio, garbled)


@pytest.mark.parametrize(("api_key", "version"), REQUEST_CASES)
@settings(max_examples=60, deadline=None)
@given(body=st.binary(max_size=64))
def test_random_bytes_after_a_hot_header_get_the_same_outcome_from_both_decoders(
        api_key, version, body):
    frame = _request_frame(api_key, version, body)
    assert _outcome(decode_request, frame) == _outcome(decode_request_with_kio, frame)


def _cstr(s: str) -> bytes:
    raw = s.encode()
    return bytes([len(raw) + 1]) + raw


# ConsumerGroupHeartbeat v1 (flexible) up to its subscription, then the rest, so the cases
# below change one field at a time.
_CGH_HEAD = _cstr("g") + _cstr("m") + struct.pack(">i", 3) + b"\x00\x00" + struct.pack(">i", 5)
_CGH_TAIL = b"\x00\x00\x00" + b"\x00"  # regex, assignor, owned partitions: null; no tags
_TOPIC = uuid.UUID(int=42).bytes
# Heartbeat v0 after its group id, and OffsetFetch v1 and OffsetCommit v2 up to an array.
_HB_REST = struct.pack(">i", 1) + struct.pack(">h", 1) + b"m"
_FETCH_V1 = struct.pack(">h", 1) + b"g"
_COMMIT_V2 = struct.pack(">h", 1) + b"g" + struct.pack(">i", 1) + struct.pack(">h", 0)
_MAX_MS = (2**63 - 1) // 1000  # kio counts a duration's microseconds in an int64


def _legacy_str(raw: bytes, length: int | None = None) -> bytes:
    return struct.pack(">h", len(raw) if length is None else length) + raw


def _commit_v2(retention_ms: int) -> bytes:
    return _COMMIT_V2 + struct.pack(">q", retention_ms) + struct.pack(">i", 0)


EDGE_CASES = {
    # (api key, version, body): the kio reading each exercises; DECODES says which kio reads
    "a tagged field the schema lacks": (68, 1, _CGH_HEAD + b"\x00\x00\x00\x00\x01\x05\x00"),
    "no tagged fields, written in two bytes": (
        12, 4, _cstr("g") + struct.pack(">i", 1) + _cstr("m") + b"\x00\x80\x00"),
    "a five-byte varint": (68, 1, _CGH_HEAD + b"\x81\x80\x80\x80\x00" + _CGH_TAIL),
    "a six-byte varint": (68, 1, _CGH_HEAD + b"\x81\x80\x80\x80\x80\x00" + _CGH_TAIL),
    "a varint of 2**35 - 1": (68, 1, _CGH_HEAD + b"\xff\xff\xff\xff\x7f" + _CGH_TAIL),
    "an array of 2**32 entries": (68, 1, _CGH_HEAD + b"\x81\x80\x80\x80\x10" + _CGH_TAIL),
    "a legacy array of 2**31 - 1 entries": (9, 1, _FETCH_V1 + struct.pack(">i", 2**31 - 1)),
    "a legacy array of length -2": (9, 1, _FETCH_V1 + struct.pack(">i", -2)),
    "a null where an array is required": (9, 1, _FETCH_V1 + struct.pack(">i", -1)),
    "a null where the array may be null": (9, 2, _FETCH_V1 + struct.pack(">i", -1)),
    "a null list of partitions": (
        68, 1, _CGH_HEAD + b"\x00\x00\x00\x02" + _TOPIC + b"\x00\x00\x00"),
    "a null group id (compact)": (68, 1, b"\x00" + _CGH_HEAD[2:] + b"\x00" + _CGH_TAIL),
    "a null group id (legacy)": (12, 0, _legacy_str(b"", -1) + _HB_REST),
    "a legacy string of length -2": (12, 0, _legacy_str(b"", -2) + _HB_REST),
    "a group id that is not UTF-8": (12, 0, _legacy_str(b"\xff") + _HB_REST),
    "an encoded surrogate": (12, 0, _legacy_str(b"\xed\xa0\x80") + _HB_REST),
    "an overlong encoding": (12, 0, _legacy_str(b"\xc0\xaf") + _HB_REST),
    "a four-byte character": (12, 0, _legacy_str("\U0001f600".encode()) + _HB_REST),
    "a boolean of 2": (9, 7, _cstr("g") + b"\x00" + b"\x02" + b"\x00"),
    "a boolean of 1": (9, 7, _cstr("g") + b"\x00" + b"\x01" + b"\x00"),
    "a zero topic id": (68, 1, _CGH_HEAD + b"\x00\x00\x00\x02" + bytes(16) + b"\x02"
                        + struct.pack(">i", 0) + b"\x00\x00"),
    "a topic id": (68, 1, _CGH_HEAD + b"\x00\x00\x00\x02" + _TOPIC + b"\x01\x00\x00"),
    "the longest retention kio reads": (8, 2, _commit_v2(_MAX_MS)),
    "a retention just beyond it": (8, 2, _commit_v2(_MAX_MS + 1)),
    "the most negative retention kio reads": (8, 4, _commit_v2(-_MAX_MS)),
    "a retention just below it": (8, 4, _commit_v2(-_MAX_MS - 1)),
    "the longest retention a timedelta holds": (8, 3, _commit_v2(86_399_999_999_999_999)),
    "trailing bytes": (12, 0, _legacy_str(b"g") + _HB_REST + b"trailing"),
    "an empty body": (12, 0, b""),
}
DECODES = {
    "no tagged fields, written in two bytes", "a five-byte varint", "a four-byte character",
    "a null where the array may be null", "a boolean of 1", "a zero topic id", "a topic id",
    "the longest retention kio reads", "the most negative retention kio reads", "trailing bytes",
}


@pytest.mark.parametrize("case", sorted(EDGE_CASES))
def test_an_edge_of_kios_reading_gets_the_same_outcome_from_both_decoders(case):
    api_key, version, body = EDGE_CASES[case]
    frame = _request_frame(api_key, version, body)
    by_kio = _outcome(decode_request_with_kio, frame)
    assert _outcome(decode_request, frame) == by_kio
    assert (by_kio != "MalformedRequest") == (case in DECODES)


@pytest.mark.parametrize(("api_key", "version", "body"), [
    (68, 1, _CGH_HEAD + b"\x81\x80\x80\x80\x10" + _CGH_TAIL),  # read by hand
    # JoinGroup v9, read by kio: group id, timeouts, member id, instance id, protocol type,
    # then a protocol array claiming 2**32 entries.
    (11, 9, _cstr("g") + struct.pack(">ii", 1, 1) + _cstr("") + b"\x00" + _cstr("consumer")
     + b"\x81\x80\x80\x80\x10"),
])
def test_an_array_claiming_billions_of_entries_is_refused_before_anything_is_allocated(
        api_key, version, body):
    """kio alone would reserve 32 GiB for it and abort the gateway's process."""
    frame = _request_frame(api_key, version, body)
    for decode in (decode_request, decode_request_with_kio):
        with pytest.raises(MalformedRequest, match="entries"):
            decode(frame)


def test_a_null_where_the_schema_has_an_array_is_refused_on_both_paths():
    """kio reads it as None, which the translations cannot take (a JoinGroup's protocols
    would fail the gateway's handler); Kafka's parsers refuse it, and so does the codec."""
    body = struct.pack(">h", 1) + b"g" + struct.pack(">ii", 1, 1) + struct.pack(">h", 0)
    body += struct.pack(">h", -1) + struct.pack(">h", 1) + b"c" + struct.pack(">i", -1)
    frame = _request_frame(11, 5, body)
    for decode in (decode_request, decode_request_with_kio):
        with pytest.raises(MalformedRequest, match="null where an array is required"):
            decode(frame)
    frame = _request_frame(11, 5, body[:-4] + struct.pack(">i", 0))
    assert decode_request(frame).body["protocols"] == []


def _consumer_heartbeat(group_id: str = "g", partitions: int = 0) -> bytes:
    body = _cstr(group_id) if len(group_id) < 100 else _long_cstr(group_id)
    body += _cstr("m") + struct.pack(">i", 3) + b"\x00\x00" + struct.pack(">i", 5)
    body += b"\x00\x00\x00"  # names, regex, assignor: null
    if partitions:
        body += b"\x02" + _TOPIC + _uvarint(partitions + 1)
        body += struct.pack(f">{partitions}i", *range(partitions)) + b"\x00"
    else:
        body += b"\x00"
    return _request_frame(68, 1, body + b"\x00")


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _long_cstr(s: str) -> bytes:
    raw = s.encode()
    return _uvarint(len(raw) + 1) + raw


def test_a_string_longer_than_kafkas_int16_length_is_refused_by_both_decoders():
    """Kafka's parsers refuse a compact string of more than 32,767 bytes; so does the codec,
    whichever decoder read it, so a decoded request never holds one."""
    fits = _consumer_heartbeat("g" * 32_767)
    assert decode_request(fits).body["group_id"] == "g" * 32_767
    for long_id in ("g" * 32_768, "é" * 16_384):
        frame = _consumer_heartbeat(long_id)
        for decode in (decode_request, decode_request_with_kio):
            with pytest.raises(MalformedRequest, match="longer than"):
                decode(frame)


def test_a_request_of_more_entries_than_a_partition_takes_in_one_turn_is_refused():
    fits = _consumer_heartbeat(partitions=MAX_REQUEST_ENTRIES - 1)
    assert len(decode_request(fits).body["topic_partitions"][0]["partitions"]) == (
        MAX_REQUEST_ENTRIES - 1)
    frame = _consumer_heartbeat(partitions=MAX_REQUEST_ENTRIES)
    for decode in (decode_request, decode_request_with_kio):
        with pytest.raises(MalformedRequest, match="array entries"):
            decode(frame)


def _min_size(entity_type: type, flexible: bool) -> int:
    """The fewest bytes an entity of ``entity_type`` takes on the wire."""
    size = 1 if flexible else 0  # its tagged-field count
    fixed = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint16": 2, "bool": 1,
             "uuid": 16, "error_code": 2, "timedelta_i32": 4, "timedelta_i64": 8,
             "datetime_i64": 8, "float64": 8}
    for f in dataclasses.fields(entity_type):
        if get_field_tag(f) is not None:
            continue
        kind = classify_field(f)
        if kind.is_array:
            size += 1 if flexible else 4
        elif isinstance(kind, EntityField):
            size += 1 if is_optional(f) else _min_size(kind.type_, flexible)
        else:
            kafka_type = get_schema_field_type(f)
            size += fixed.get(kafka_type, 1 if flexible else 2)
    return size


def _array_items(entity_type: type):
    for f in dataclasses.fields(entity_type):
        kind = classify_field(f)
        if isinstance(kind, EntityTupleField):
            yield kind.type_
            yield from _array_items(kind.type_)
        elif isinstance(kind, EntityField):
            yield from _array_items(kind.type_)
        elif isinstance(kind, PrimitiveTupleField):
            yield get_schema_field_type(f)


@pytest.mark.parametrize(("api_key", "version"), _cases(BY_API_KEY))
def test_every_array_entry_of_every_served_request_takes_at_least_one_byte(api_key, version):
    """What lets the codec skip its bounds walk for frames shorter than the bounds: without
    it, a short frame could hold more entries than bytes."""
    schema = load_request_schema(api_key, version)
    for item in _array_items(schema):
        if isinstance(item, str):
            assert item in ("int8", "int16", "int32", "int64", "string", "uuid", "bytes"), item
        else:
            assert _min_size(item, schema.__flexible__) >= 1, item.__name__


# ----------------------------------------------------------------------------- responses


_ANY_ERROR = st.integers(-(2**15), 2**15 - 1)


@st.composite
def _as_a_translation_might_write_it(draw, values):
    """``values`` with fields left out, None put where the schema wants a value, and error
    codes kio does not know: what ``entities.build`` coerces, the encoders must too."""
    if isinstance(values, list):
        return [draw(_as_a_translation_might_write_it(v)) for v in values]
    if not isinstance(values, dict):
        return values
    out = {}
    for key, value in values.items():
        choice = draw(st.sampled_from(["keep", "keep", "keep", "drop", "none"]))
        if choice == "drop":
            continue
        if choice == "none":
            out[key] = None
        elif key == "error_code":
            out[key] = draw(st.just(value) | _ANY_ERROR)
        else:
            out[key] = draw(_as_a_translation_might_write_it(value))
    return out


@pytest.mark.parametrize(("api_key", "version"), RESPONSE_CASES)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_hot_response_encodes_by_hand_to_kios_bytes(api_key, version, data):
    schema = load_response_schema(api_key, version)
    values = data.draw(plain_values(schema))
    header = RequestHeader(api_key, version, data.draw(st.integers(-(2**31), 2**31 - 1)), "c")
    assert encode_response(header, values) == encode_response_with_kio(header, values)
    sparse = data.draw(_as_a_translation_might_write_it(values))
    assert encode_response(header, sparse) == encode_response_with_kio(header, sparse)


@pytest.mark.parametrize(("api_key", "version"), RESPONSE_CASES)
def test_an_empty_hot_response_encodes_by_hand_to_kios_bytes(api_key, version):
    header = RequestHeader(api_key, version, 1, None)
    assert encode_response(header, {}) == encode_response_with_kio(header, {})


def test_a_response_written_at_another_version_than_asked_is_still_kios():
    header = RequestHeader(8, 9, 3, "c")
    body = {"topics": [{"name": "t", "partitions": [{"partition_index": 1, "error_code": 27}]}]}
    for version in (2, 7, 8):
        assert encode_response(header, body, version) == encode_response_with_kio(
            header, body, version)


@st.composite
def _commit_reply(draw, body: dict) -> m.OffsetCommitResponse:
    """Cohort's reply to a commit of ``body``: maybe one request-level error, else some of its
    partitions (and maybe one it did not name) with errors, Kafka's or Cohort's own."""
    codes = st.sampled_from([0, 0, 0, 22, 25, 27, 79]) | _ANY_ERROR
    named = [(t["name"], p["partition_index"]) for t in body["topics"] for p in t["partitions"]]
    chosen = draw(st.lists(st.sampled_from(named), unique=True)) if named else []
    chosen += draw(st.lists(st.tuples(st.just("elsewhere"), st.integers(0, 5)), max_size=1))
    by_topic: dict[str, list] = {}
    for name, index in chosen:
        by_topic.setdefault(name, []).append(m.OffsetCommitResponsePartition(index, draw(codes)))
    return m.OffsetCommitResponse(
        error_code=draw(st.sampled_from([0, 0, 0, 16, 14]) | _ANY_ERROR),
        topics=[m.OffsetCommitResponseTopic(n, ps) for n, ps in by_topic.items()])


@pytest.mark.parametrize("version", range(BY_API_KEY[8].versions.min,
                                          BY_API_KEY[8].versions.max + 1))
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_commit_reply_written_straight_from_cohorts_reply_is_kios_bytes(version, data):
    body = data.draw(plain_values(load_request_schema(8, version)))
    reply = data.draw(_commit_reply(body))
    header = RequestHeader(8, version, data.draw(st.integers(-(2**31), 2**31 - 1)), "c")
    assert encode_commit_reply(header, reply, body) == encode_response_with_kio(
        header, commit_response(reply, body))
