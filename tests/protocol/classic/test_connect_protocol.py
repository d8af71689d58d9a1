"""Kafka Connect's classic JoinGroup metadata and SyncGroup assignment, byte for byte."""

from __future__ import annotations

import contextlib
import struct

import hypothesis.strategies as st
import pytest
from hypothesis import given

from protocol.classic.connect_protocol import (
    CONFIG_MISMATCH,
    ConnectAssignment,
    ConnectProtocolError,
    Work,
    WorkerState,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
    join_protocols,
    owned_work,
)


def kstring(s: str) -> bytes:
    raw = s.encode()
    return struct.pack(">h", len(raw)) + raw


def test_metadata_v0_is_version_url_and_config_offset():
    data = encode_metadata(WorkerState("http://w1:8083/", 7), 0)
    assert data == struct.pack(">h", 0) + kstring("http://w1:8083/") + struct.pack(">q", 7)
    assert decode_metadata(data) == (0, WorkerState("http://w1:8083/", 7))


def test_metadata_v1_appends_the_current_assignment_as_nullable_bytes():
    empty = encode_metadata(WorkerState("u", 3), 1)
    null = struct.pack(">i", -1)
    assert empty == struct.pack(">h", 1) + kstring("u") + struct.pack(">q", 3) + null
    alloc = ConnectAssignment(version=1, leader="w1", leader_url="u1", config_offset=3,
                              assigned=Work.of(["sink"], [("sink", 0)]))
    data = encode_metadata(WorkerState("u", 3, alloc), 2)
    inner = encode_assignment(alloc)
    assert data == (struct.pack(">h", 2) + kstring("u") + struct.pack(">q", 3)
                    + struct.pack(">i", len(inner)) + inner)
    assert decode_metadata(data) == (2, WorkerState("u", 3, alloc))


def test_assignment_v0_groups_tasks_by_connector_with_minus_one_for_the_connector():
    a = ConnectAssignment(version=0, leader="w1", leader_url="http://w1/", config_offset=9,
                          assigned=Work.of(["a"], [("a", 1), ("b", 0)]))
    expected = (
        struct.pack(">hh", 0, 0) + kstring("w1") + kstring("http://w1/") + struct.pack(">q", 9)
        + struct.pack(">i", 2)
        + kstring("a") + struct.pack(">iii", 2, -1, 1)
        + kstring("b") + struct.pack(">ii", 1, 0)
    )
    assert encode_assignment(a) == expected
    assert decode_assignment(expected) == a


def test_assignment_v1_adds_revoked_and_the_scheduled_delay():
    a = ConnectAssignment(version=1, leader="w1", leader_url="u", config_offset=2,
                          assigned=Work.of(tasks=[("a", 0)]), revoked=Work.of(["b"]),
                          delay_ms=5_000)
    data = encode_assignment(a)
    tail = struct.pack(">i", 1) + kstring("b") + struct.pack(">iii", 1, -1, 5_000)
    assert data.endswith(tail)
    assert decode_assignment(data) == a


def test_v1_assignment_missing_its_trailing_fields_reads_them_as_empty_and_zero():
    full = encode_assignment(ConnectAssignment(version=1, leader="w", leader_url="u"))
    head = full[: 2 + 2 + 3 + 3 + 8]
    assert decode_assignment(head) == ConnectAssignment(version=1, leader="w", leader_url="u")
    nulls = head + struct.pack(">ii", -1, -1)
    assert decode_assignment(nulls).assigned == Work()


def test_an_empty_assignment_is_nothing_assigned():
    assert decode_assignment(b"").assigned == Work()


def test_a_worker_offers_its_modes_protocols_most_preferred_first():
    state = WorkerState("u", 0)
    assert [n for n, _ in join_protocols("sessioned", state)] == ["sessioned", "compatible",
                                                                   "default"]
    assert [n for n, _ in join_protocols("compatible", state)] == ["compatible", "default"]
    assert [n for n, _ in join_protocols("eager", state)] == ["default"]
    versions = [decode_metadata(b)[0] for _, b in join_protocols("sessioned", state)]
    assert versions == [2, 1, 0]


def test_owned_work_eager_is_the_last_assignment():
    meta = encode_metadata(WorkerState("u", 1), 0)
    a = encode_assignment(ConnectAssignment(version=0, assigned=Work.of(["x"], [("x", 0)])))
    assert owned_work(meta, a) == Work.of(["x"], [("x", 0)])
    assert owned_work(meta, None) == Work()


def test_owned_work_incremental_is_allocation_minus_revoked_plus_assigned():
    alloc = ConnectAssignment(version=1, leader="w", assigned=Work.of(["x"], [("x", 0), ("x", 1)]))
    meta = encode_metadata(WorkerState("u", 1, alloc), 1)
    assert owned_work(meta, None) == alloc.assigned
    delta = encode_assignment(ConnectAssignment(
        version=1, assigned=Work.of(tasks=[("y", 0)]), revoked=Work.of(tasks=[("x", 1)])))
    assert owned_work(meta, delta) == Work.of(["x"], [("x", 0), ("y", 0)])
    # A coordinator may send the whole set with the revocations: read the same way.
    whole = encode_assignment(ConnectAssignment(
        version=1, assigned=Work.of(["x"], [("x", 0), ("y", 0)]),
        revoked=Work.of(tasks=[("x", 1)])))
    assert owned_work(meta, whole) == Work.of(["x"], [("x", 0), ("y", 0)])


def test_bad_bytes_are_a_connect_protocol_error():
    for bad in [b"\x00", b"\xff\xff", struct.pack(">h", 0) + struct.pack(">h", 5) + b"ab",
                struct.pack(">h", 0) + struct.pack(">h", -1)]:
        with pytest.raises(ConnectProtocolError):
            decode_metadata(bad)
    with pytest.raises(ConnectProtocolError):
        decode_assignment(struct.pack(">hh", 0, 0) + kstring("w") + kstring("u")
                          + struct.pack(">q", 0) + struct.pack(">i", -1))
    with pytest.raises(ConnectProtocolError):
        decode_metadata("not bytes")  # type: ignore[arg-type]


names = st.text(min_size=1, max_size=12)
works = st.builds(
    Work.of,
    st.lists(names, max_size=4),
    st.lists(st.tuples(names, st.integers(0, 2**31 - 1)), max_size=6),
)
assignments = st.builds(
    ConnectAssignment,
    version=st.integers(0, 2),
    error=st.sampled_from([0, CONFIG_MISMATCH]),
    leader=st.text(max_size=8),
    leader_url=st.text(max_size=8),
    config_offset=st.integers(-1, 2**63 - 1),
    assigned=works,
    revoked=works,
    delay_ms=st.integers(0, 2**31 - 1),
)


@given(assignments)
def test_assignments_round_trip(a):
    if a.version == 0:
        a = ConnectAssignment(0, a.error, a.leader, a.leader_url, a.config_offset, a.assigned)
    assert decode_assignment(encode_assignment(a)) == a


@given(st.text(max_size=20), st.integers(-1, 2**63 - 1), st.none() | assignments,
       st.integers(0, 2))
def test_metadata_round_trips(url, offset, alloc, version):
    if alloc is not None:
        alloc = ConnectAssignment(1, alloc.error, alloc.leader, alloc.leader_url,
                                  alloc.config_offset, alloc.assigned, alloc.revoked,
                                  alloc.delay_ms)
    got_version, state = decode_metadata(encode_metadata(WorkerState(url, offset, alloc), version))
    assert got_version == version and (state.url, state.config_offset) == (url, offset)
    if version >= 1 and alloc is not None and (alloc.assigned or alloc.revoked or alloc.leader
                                               or alloc.error or alloc.delay_ms):
        assert state.allocation == alloc
    else:
        assert state.allocation is None


@given(st.binary(max_size=64))
def test_garbage_is_refused_cleanly(data):
    for decode in (decode_metadata, decode_assignment):
        with contextlib.suppress(ConnectProtocolError):
            decode(data)
