"""Fuzzed Kafka request frames, generated from the API table: the pure half of the wire fuzzer.

Invariant 6 (DESIGN.md) says no request can crash or stall a listener or a partition. A fuzzer
written by hand for today's APIs would stop covering tomorrow's, so this one is derived from
``protocol.api``: every row Kafka's wire carries, at every version the gateway serves, and
kio's request schema of that version (``kio.index.load_request_schema``). For each it builds a
*valid* request, field by field from the schema's types (ints, strings named like groups and
topics drawn from a vocabulary of real names, arrays, nested entities, tagged fields), written
as tokens that remember what they are (``wire_tokens``: an int of some width, a string's
length and bytes, an array's count and where each entry lies, an entity's tagged-field
section). One structure-aware mutation is then applied to the tokens:

- ``length``: a string's or bytes' length prefix wrong (negative, past the end, huge, an
  over-long varint), its bytes kept;
- ``count``: an array's count wrong the same ways;
- ``string``: a string's bytes replaced (empty, longer than Kafka's int16 bound, invalid
  UTF-8, NULs, null where the field is not nullable), its length kept consistent;
- ``tags``: a tagged-field section replaced (an unknown tag, duplicate or unordered tags, a
  size past the end, a count of 2^31);
- ``int``: an integer at a bound of its width (min, max, -1, 0), a bool that is neither 0 nor 1;
- ``truncate``: the frame cut short at any byte (its size prefix telling the truth);
- ``trailing``: bytes left over after the body;
- ``repeat``: one entry of an array (a topic, a group, a partition) repeated up to thousands of
  times, the frame up to ``max_frame_bytes``: the attack of issue 30's H1-H4;
- ``valid``: none, the request as built.

Pure (a seeded ``random.Random``, no clock, no I/O), so a frame that hurts a listener is
reproduced from its seed and index; ``actors.tools.fuzz_run`` sends the frames, and the suite's
tests prove that every valid frame decodes, with kio and with Cohort's codec, to the values it
was built from.
"""

from __future__ import annotations

import random
import string
import struct
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from actors.tools.wire_tokens import (
    INT_FORMATS,
    Shape,
    Token,
    bounds,
    count_prefix,
    framed,
    length_prefix,
    request_tokens,
    schema,
    shapes,
    uvarint,
)
from protocol.api import BY_API_KEY

MUTATIONS = ("valid", "length", "count", "string", "tags", "int", "truncate", "trailing",
             "repeat")
# A round of the stream sends every (API, version) with every mutation once, except
# ``repeat``, which each (API, version) gets once every this many rounds (its frames are large).
REPEAT_EVERY_ROUNDS = 4
# How many times ``repeat`` repeats an entry (capped by ``max_frame_bytes``).
REPEATS = (100, 1_000, 10_000, 100_000)
MAX_DEPTH = 3
_HUGE_STRING_BYTES = 40_000  # past Kafka's int16 string bound (32,767)
_INVALID_UTF8 = (b"\xff\xfe", b"\xc3", b"\xed\xa0\x80", b"a\x80b", b"\xf4\x90\x80\x80")
_OVERLONG_VARINT = b"\xff\xff\xff\xff\xff\xff\x01"
_ZERO_UUID = uuid.UUID(int=0)
_WORDS = ("", "consumer", "range", "uniform", "PLAIN", "fuzz", "*", ".*", "__consumer_offsets")


@dataclass(frozen=True)
class Vocabulary:
    """Real names to draw from, so that valid requests reach past "unknown topic" into the
    rules (and ``repeat`` repeats a topic or group that exists)."""

    topics: tuple[str, ...] = ()
    topic_ids: tuple[uuid.UUID, ...] = ()
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class FuzzFrame:
    """One request frame, its size prefix included; ``mutation`` is the one applied (a
    mutation with nothing to act on, such as ``tags`` on a version without tagged fields,
    falls back to ``truncate``)."""

    api_key: int
    version: int
    mutation: str
    data: bytes


def served_versions() -> list[tuple[int, int]]:
    """Every (API key, version) the gateway serves, from the API table."""
    return [(key, v) for key, api in sorted(BY_API_KEY.items())
            for v in range(api.versions.min, api.versions.max + 1)]


# ----------------------------------------------------------------------------- values


class _Values:
    """Valid plain values for a schema (the shape ``protocol.wire.entities.plain`` gives)."""

    def __init__(self, rng: random.Random, vocabulary: Vocabulary, fill: bool) -> None:
        self.rng, self.vocabulary = rng, vocabulary
        # ``fill``: every array has an entry and nothing optional is null (for ``repeat``).
        self.fill = fill

    def entity(self, entity: type, depth: int = 0) -> dict[str, Any]:
        return {s.name: self.field(s, depth) for s in shapes(entity)}

    def field(self, shape: Shape, depth: int) -> Any:
        rng = self.rng
        if shape.tag is not None and (self.fill or rng.random() < 0.5):
            return None  # a tagged field left out
        if shape.nullable and not self.fill and rng.random() < 0.1:
            return None
        if shape.array:
            most = 3 if depth < MAX_DEPTH - 1 else 1
            return [self.item(shape, depth + 1)
                    for _ in range(rng.randint(1 if self.fill else 0, most))]
        return self.item(shape, depth)

    def item(self, shape: Shape, depth: int) -> Any:
        if shape.entity is not None:
            return self.entity(shape.entity, depth)
        value = self.scalar(shape.kafka_type, shape.name)
        if value == _ZERO_UUID and shape.nullable:
            return None  # what the zero uuid of a nullable field reads as
        return value

    def scalar(self, kafka_type: str | None, name: str) -> Any:
        rng = self.rng
        if kafka_type in INT_FORMATS:
            lo, hi = bounds(INT_FORMATS[kafka_type])
            roll = rng.random()
            if roll < 0.7:
                return max(lo, min(hi, rng.choice((-1, 0, 0, 1, 2, 3, 100, 5000))))
            return rng.randint(max(lo, -(2**31)), min(hi, 2**31 - 1))
        if kafka_type == "bool":
            return rng.random() < 0.5
        if kafka_type == "string":
            return self.word(name)
        if kafka_type in ("bytes", "records"):
            return rng.randbytes(rng.randint(0, 16))
        if kafka_type == "uuid":
            ids = self.vocabulary.topic_ids
            if ids and rng.random() < 0.6:
                return rng.choice(ids)
            return uuid.UUID(int=rng.getrandbits(128) if rng.random() < 0.7 else 0)
        if kafka_type == "float64":
            return rng.random()
        raise ValueError(f"no values for kafka type {kafka_type!r}")

    def word(self, name: str) -> str:
        rng, v = self.rng, self.vocabulary
        pool = (v.groups if "group" in name else
                v.topics if "topic" in name or name == "name" else _WORDS)
        if pool and rng.random() < 0.7:
            return rng.choice(pool)
        return "".join(rng.choices(string.ascii_letters + string.digits + "-._",
                                   k=rng.randint(0, 12)))


def valid_body(api_key: int, version: int, rng: random.Random,
               vocabulary: Vocabulary = Vocabulary(), fill: bool = False) -> dict[str, Any]:
    """A valid request body of that version, as plain values."""
    return _Values(rng, vocabulary, fill).entity(schema(api_key, version))


# -------------------------------------------------------------------------- mutations


def _pick(rng: random.Random, tokens: list[Token], kinds: tuple[str, ...], ok=None) -> int | None:
    found = [i for i, t in enumerate(tokens) if t.kind in kinds and (ok is None or ok(t))]
    return rng.choice(found) if found else None


def _replaced(tokens: list[Token], i: int, data: bytes) -> bytes:
    return b"".join(t.data for t in tokens[:i]) + data + b"".join(t.data for t in tokens[i + 1:])


def _wrong_length(rng: random.Random, t: Token) -> bytes:
    flexible, _, raw = t.info
    n = len(raw)
    if flexible:
        prefix = rng.choice((uvarint(n + 2), uvarint(n + 1000), uvarint(2**31),
                             uvarint(2**32 - 1), _OVERLONG_VARINT))
    else:
        fmt = ">h" if t.kind == "string" else ">i"
        lo, hi = bounds(fmt)
        prefix = struct.pack(fmt, rng.choice((-2, lo, n + 1, n + 1000 if n + 1000 <= hi else hi,
                                              hi)))
    return prefix + raw


def _wrong_count(rng: random.Random, t: Token) -> bytes:
    flexible, items = t.info
    n = len(items or ())
    if flexible:
        return rng.choice((uvarint(n + 2), uvarint(n + 1000), uvarint(2**31),
                           uvarint(2**32 - 1), _OVERLONG_VARINT))
    return struct.pack(">i", rng.choice((-2, -(2**31), n + 1, n + 1000, 2**31 - 1)))


def _bad_string(rng: random.Random, t: Token) -> bytes:
    flexible = t.info[0]
    choice = rng.randrange(5)
    if choice == 0:
        raw = b""
    elif choice == 1:  # huge: past the int16 bound where the encoding allows it
        raw = b"a" * (_HUGE_STRING_BYTES if flexible else 32_767)
    elif choice == 2:
        raw = rng.choice(_INVALID_UTF8)
    elif choice == 3:
        raw = b"\x00" * rng.randint(1, 8)
    else:  # null, whether or not the field may be
        return length_prefix("string", flexible, None)
    return length_prefix("string", flexible, len(raw)) + raw


def _bad_tags(rng: random.Random) -> bytes:
    choice = rng.randrange(6)
    if choice == 0:  # an unknown tag: Kafka skips it
        payload = rng.randbytes(rng.randint(0, 32))
        return uvarint(1) + uvarint(rng.randint(100, 10_000)) + uvarint(len(payload)) + payload
    if choice == 1:
        return uvarint(2**31)
    if choice == 2:  # a size past the end of the frame
        return uvarint(1) + uvarint(5) + uvarint(2**20) + b"x"
    if choice == 3:  # the same tag twice
        return uvarint(2) + (uvarint(7) + uvarint(1) + b"\x00") * 2
    if choice == 4:  # out of order
        return uvarint(2) + uvarint(9) + uvarint(0) + uvarint(3) + uvarint(0)
    return uvarint(1) + uvarint(0) + uvarint(1) + b"\xff"  # a known tag, its value garbage


def _bound_int(rng: random.Random, t: Token) -> bytes:
    (fmt,) = t.info
    if fmt == "?":
        return bytes([rng.choice((2, 0x7F, 0xFF))])
    lo, hi = bounds(fmt)
    return struct.pack(fmt, rng.choice(sorted({lo, hi, 0, max(lo, -1)})))


def _repeat(rng: random.Random, tokens: list[Token], max_frame_bytes: int) -> bytes | None:
    """One entry of an array repeated: the array's count raised to match."""
    i = _pick(rng, tokens, ("count",), lambda t: bool(t.info[1]))
    if i is None:
        return None
    flexible, items = tokens[i].info
    start, end = items[0]
    entry = b"".join(t.data for t in tokens[start:end])
    base = sum(len(t.data) for t in tokens)
    times = min(rng.choice(REPEATS), max(2, (max_frame_bytes - base) // len(entry) + 1))
    # The other entries follow the first: everything after it is written as it was.
    return (b"".join(t.data for t in tokens[:i]) + count_prefix(flexible, len(items) + times - 1)
            + entry * times + b"".join(t.data for t in tokens[end:]))


def mutate(mutation: str, tokens: list[Token], rng: random.Random,
           max_frame_bytes: int) -> bytes | None:
    """The request's payload with ``mutation`` applied, or None when the request has nothing
    it applies to (no strings, no arrays, no tagged fields)."""
    if mutation == "valid":
        return b"".join(t.data for t in tokens)
    if mutation == "truncate":
        payload = b"".join(t.data for t in tokens)
        return payload[:rng.randrange(len(payload))]
    if mutation == "trailing":
        return b"".join(t.data for t in tokens) + rng.randbytes(rng.randint(1, 64))
    if mutation == "repeat":
        return _repeat(rng, tokens, max_frame_bytes)
    kinds, change = {
        "length": (("string", "bytes"), lambda t: _wrong_length(rng, t)),
        "count": (("count",), lambda t: _wrong_count(rng, t)),
        "string": (("string",), lambda t: _bad_string(rng, t)),
        "tags": (("tags",), lambda t: _bad_tags(rng)),
        "int": (("int",), lambda t: _bound_int(rng, t)),
    }[mutation]
    ok = (lambda t: t.info[2] is not None) if mutation == "length" else None
    i = _pick(rng, tokens, kinds, ok)
    return None if i is None else _replaced(tokens, i, change(tokens[i]))


def build_frame(api_key: int, version: int, mutation: str, rng: random.Random,
                vocabulary: Vocabulary = Vocabulary(), max_frame_bytes: int = 1 << 20,
                correlation_id: int = 1) -> FuzzFrame:
    """A valid request of that API and version with ``mutation`` applied, framed."""
    body = valid_body(api_key, version, rng, vocabulary, fill=mutation == "repeat")
    tokens = request_tokens(api_key, version, body, correlation_id)
    payload = mutate(mutation, tokens, rng, max_frame_bytes)
    if payload is None:
        mutation, payload = "truncate", mutate("truncate", tokens, rng, max_frame_bytes)
    return FuzzFrame(api_key, version, mutation, framed(payload))


def frames(seed: int, vocabulary: Vocabulary = Vocabulary(),
           max_frame_bytes: int = 1 << 20) -> Iterator[FuzzFrame]:
    """An endless stream of fuzzed frames, the same for the same seed: rounds in which every
    (API, version) gets every mutation once, in a shuffled order (``repeat`` every
    ``REPEAT_EVERY_ROUNDS`` rounds); correlation ids count up from 1."""
    rng = random.Random(seed)
    targets = served_versions()
    correlation_id, round_no = 0, 0
    while True:
        schedule = [(key, v, mutation) for n, (key, v) in enumerate(targets)
                    for mutation in MUTATIONS
                    if mutation != "repeat" or n % REPEAT_EVERY_ROUNDS == round_no
                    % REPEAT_EVERY_ROUNDS]
        rng.shuffle(schedule)
        for key, v, mutation in schedule:
            correlation_id = correlation_id % (2**31 - 1) + 1
            yield build_frame(key, v, mutation, rng, vocabulary, max_frame_bytes,
                              correlation_id)
        round_no += 1
