"""The wire fuzzer's generator, without a listener: its valid frames are valid (kio and Cohort's
codec read back the values they were built from), a round covers every (API, version) the
table serves with every mutation, a seed gives the same frames, and Cohort's codec meets every
mutated frame with a ``WireError`` or a decoded body, never anything else."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from actors.tools import wire_fuzz as wf
from actors.tools import wire_tokens as wt
from protocol.api import BY_API_KEY
from protocol.wire.codec import WireError, decode_request, decode_request_with_kio

VOCABULARY = wf.Vocabulary(topics=("orders",), groups=("billing",))


def _payload(api_key: int, version: int, body: dict) -> bytes:
    return b"".join(t.data for t in wt.request_tokens(api_key, version, body, 7))


@pytest.mark.parametrize("fill", [False, True])
def test_every_valid_frame_reads_back_as_the_values_it_was_built_from(fill):
    rng = random.Random(3)
    for api_key, version in wf.served_versions():
        for _ in range(5):
            body = wf.valid_body(api_key, version, rng, VOCABULARY, fill=fill)
            payload = _payload(api_key, version, body)
            kio, cohort = decode_request_with_kio(payload), decode_request(payload)
            assert kio.body == body, (api_key, version)
            assert cohort.body == body, (api_key, version)
            assert (cohort.header.api_key, cohort.header.api_version,
                    cohort.header.correlation_id) == (api_key, version, 7)


def test_the_targets_are_every_version_the_api_table_serves():
    targets = wf.served_versions()
    assert len(targets) == len(set(targets))
    assert set(targets) == {(key, v) for key, api in BY_API_KEY.items()
                            for v in range(api.versions.min, api.versions.max + 1)}


def test_a_stream_is_the_same_for_the_same_seed_and_not_for_another():
    def first(seed: int) -> list[bytes]:
        return [f.data for f in itertools.islice(wf.frames(seed, VOCABULARY), 300)]

    assert first(11) == first(11)
    assert first(11) != first(12)


def test_rounds_give_every_target_every_mutation():
    targets = wf.served_versions()
    rounds = wf.REPEAT_EVERY_ROUNDS  # within these, every target gets its repeat once
    total = rounds * len(targets) * (len(wf.MUTATIONS) - 1) + len(targets)
    per_target, applied = Counter(), Counter()
    for frame in itertools.islice(wf.frames(5, VOCABULARY, max_frame_bytes=4096), total):
        per_target[(frame.api_key, frame.version)] += 1
        applied[frame.mutation] += 1
    assert set(per_target.values()) == {rounds * (len(wf.MUTATIONS) - 1) + 1}
    assert set(per_target) == set(targets)
    # A mutation with nothing to act on (tags of a version without tagged fields) becomes a
    # truncation, named as such; the others always apply.
    assert set(applied) == set(wf.MUTATIONS)
    for always in ("valid", "trailing"):
        assert applied[always] == rounds * len(targets)


def test_a_repeated_entry_fills_the_frame_up_to_its_bound_and_no_further():
    rng = random.Random(1)
    frame = None
    for _ in range(20):
        frame = wf.build_frame(15, 5, "repeat", rng, VOCABULARY, max_frame_bytes=64 << 10)
        body = decode_request(frame.data[4:]).body
        assert len(frame.data) <= (64 << 10) + 200
        assert body["groups"].count(body["groups"][0]) >= 2


def test_mutations_act_on_the_part_they_name():
    rng = random.Random(2)
    body = wf.valid_body(9, 8, rng, VOCABULARY, fill=True)  # OffsetFetch v8: flexible
    tokens = wt.request_tokens(9, 8, body)
    valid = b"".join(t.data for t in tokens)
    for mutation in ("length", "count", "string", "tags", "int", "trailing", "truncate"):
        payload = wf.mutate(mutation, tokens, rng, 1 << 20)
        assert payload is not None and payload != valid, mutation
    assert wf.mutate("trailing", tokens, rng, 1 << 20).startswith(valid)
    assert valid.startswith(wf.mutate("truncate", tokens, rng, 1 << 20))


def test_cohorts_codec_meets_every_mutated_frame_with_a_wire_error_or_a_body():
    """Thousands of mutated frames through the codec, in process: only ``WireError``
    escapes it (anything else would be a bug the connection logs as one)."""
    outcomes = Counter()
    for frame in itertools.islice(wf.frames(21, VOCABULARY, max_frame_bytes=256 << 10), 4000):
        try:
            decode_request(frame.data[4:])
            outcomes["decoded"] += 1
        except WireError:
            outcomes["refused"] += 1
    assert outcomes["decoded"] > 500 and outcomes["refused"] > 500
