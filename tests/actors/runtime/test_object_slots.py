"""The object log's bytes and its history, by property: a slot and a snapshot read back as
written, damaged bytes are refused as corrupt (never misread), and any interleaving of
incarnations, appends and snapshots on one log keeps every acknowledged record (obstore's
``MemoryStore``: the rules, not the network, are under test here)."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from actors.runtime.fencing import LogFencedError
from actors.runtime.object_log import ObjectLog
from actors.runtime.object_slots import (
    BATCH,
    FENCE,
    MARKER,
    SlotCorruptError,
    decode_slot,
    encode_slot,
    frame,
    open_store,
    snapshot_bytes,
    unframe,
)
from actors.runtime.storage_marker import StorageMarkerError, claim_marker
from tests.object_store import aws_env

RECORDS = st.lists(st.binary(min_size=1, max_size=40), min_size=1, max_size=8)


@given(st.sampled_from([FENCE, BATCH, MARKER]), st.integers(0, 2**64 - 1),
       st.binary(min_size=1))
def test_a_slot_reads_back_as_written(kind, epoch, body):
    body = b"" if kind == FENCE else body  # a fence is empty, a batch or marker is not
    assert decode_slot(encode_slot(kind, epoch, body), "s") == (kind, epoch, body)


@given(st.sampled_from([FENCE, BATCH, MARKER]), st.integers(0, 2**64 - 1),
       st.binary(min_size=1))
def test_a_slot_whose_kind_disagrees_with_its_body_is_refused(kind, epoch, body):
    with pytest.raises(SlotCorruptError):
        decode_slot(encode_slot(kind, epoch, body if kind == FENCE else b""), "s")


@given(st.lists(RECORDS, max_size=5))
def test_frames_and_snapshots_read_back_as_written(batches):
    data = b"".join(frame(b) for b in batches)
    assert unframe(data, "f") == batches
    flat = [r for b in batches for r in b]
    assert [r for b in unframe(snapshot_bytes(flat), "s") for r in b] == flat


@given(RECORDS, st.data())
def test_a_damaged_batch_is_refused_as_corrupt_never_misread(records, data):
    good = frame(records)
    at = data.draw(st.integers(0, len(good) - 1))
    flipped = good[:at] + bytes([good[at] ^ data.draw(st.integers(1, 255))]) + good[at + 1:]
    cut = good[: data.draw(st.integers(1, len(good) - 1))] if len(good) > 1 else b"\0"
    for damaged in (flipped, cut):
        with pytest.raises(SlotCorruptError):
            unframe(damaged, "f")


@given(st.binary(max_size=20))
def test_bytes_that_are_not_a_slot_are_refused(data):
    if data[:4] == b"CSL1":
        return
    with pytest.raises(SlotCorruptError):
        decode_slot(data, "s")


def test_a_bad_storage_url_is_a_clear_error():
    with pytest.raises(StorageMarkerError, match="names no bucket"):
        claim_marker("s3:///prefix")


def test_an_unreachable_endpoint_is_a_clear_error_not_a_hang():
    env = {"AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ALLOW_HTTP": "true",
           "AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"}
    with aws_env(env), pytest.raises(StorageMarkerError, match="AWS_ENDPOINT_URL"):
        claim_marker("s3://bucket/prefix")


class Incarnations(RuleBasedStateMachine):
    """Incarnations of one partition open, append, snapshot and go stale in any order; the
    newest one always writes, every older one is fenced, and a fresh load returns exactly the
    acknowledged records (the latest snapshot, then the appends after it)."""

    def __init__(self) -> None:
        super().__init__()
        self.store = open_store(f"memory://{uuid.uuid4().hex}")
        self.logs: list[ObjectLog] = []
        self.expected: list[bytes] = []
        self.n = 0

    def _record(self) -> bytes:
        self.n += 1
        return f"r{self.n}".encode()

    @rule()
    def open_incarnation(self) -> None:
        log = ObjectLog(self.store, "offsets-0")
        loaded = log.load()
        assert [*loaded.snapshot, *(r for b in loaded.batches for r in b)] == self.expected
        if self.logs:
            assert log.epoch > self.logs[-1].epoch
        self.logs.append(log)

    @precondition(lambda self: self.logs)
    @rule(count=st.integers(1, 3))
    def newest_appends(self, count: int) -> None:
        records = [self._record() for _ in range(count)]
        self.logs[-1].append(records)
        self.expected += records

    @precondition(lambda self: len(self.logs) > 1)
    @rule(data=st.data())
    def an_older_one_is_fenced(self, data) -> None:
        old = data.draw(st.sampled_from(self.logs[:-1]))
        with pytest.raises(LogFencedError):
            old.append([b"zombie"])

    @precondition(lambda self: self.logs)
    @rule()
    def newest_snapshots(self) -> None:
        self.logs[-1].write_snapshot(list(self.expected))
        assert self.logs[-1].bytes_since_snapshot == 0

    @precondition(lambda self: self.logs)
    @rule()
    def newest_recovers(self) -> None:
        loaded = self.logs[-1].recover()  # claims a slot again, keeping its epoch
        assert [*loaded.snapshot, *(r for b in loaded.batches for r in b)] == self.expected

    @precondition(lambda self: self.logs)
    @invariant()
    def newest_is_not_fenced(self) -> None:
        self.logs[-1].check_fence()


TestIncarnations = Incarnations.TestCase


def test_a_storage_url_stays_a_url_and_a_local_path_becomes_absolute(tmp_path, monkeypatch):
    from actors.runtime.storage_marker import normalize_storage_path

    monkeypatch.chdir(tmp_path)
    assert normalize_storage_path("s3://bucket/prefix/") == "s3://bucket/prefix"
    assert normalize_storage_path("cohort-data") == str(tmp_path / "cohort-data")


def test_actors_get_the_aws_variables_only_for_an_object_store(monkeypatch):
    from actors.runtime.storage_factory import actor_runtime_env

    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("AWS_ALLOW_HTTP", "true")
    monkeypatch.setenv("HOME_SECRET", "not passed")
    env = actor_runtime_env("s3://bucket/prefix")["env_vars"]
    assert env["AWS_ENDPOINT_URL"] == "http://127.0.0.1:1" and env["AWS_ALLOW_HTTP"] == "true"
    assert "HOME_SECRET" not in env
    assert actor_runtime_env("/data/cohort") is None
