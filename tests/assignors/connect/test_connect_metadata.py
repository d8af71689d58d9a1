"""The connect assignor's versioned metadata: round trips, old versions, bad bytes."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from assignors.connect import IncrementalCooperativeAssignor, remaining_delay_ms
from assignors.connect.metadata import (
    MAX_VERSION,
    MIN_VERSION,
    GroupState,
    HeldWork,
    MetadataError,
    StormGuard,
    WorkerKey,
    WorkerMetadata,
    decode,
    encode,
)
from tests.assignors.connect.sim import ConnectCluster

PROPERTY = settings(max_examples=150)
texts = st.text(max_size=6)


@st.composite
def states(draw) -> GroupState:
    roster = tuple(
        WorkerKey(draw(texts), draw(st.none() | texts)) for _ in range(draw(st.integers(0, 4)))
    )
    names = sorted(set(draw(st.lists(texts, max_size=4))))
    connectors = tuple((n, draw(st.integers(0, 5))) for n in names)
    owner = st.integers(-1, len(roster) - 1)
    num_tasks = sum(n for _, n in connectors)
    held = ()
    if roster and connectors:
        held = tuple(
            HeldWork(
                owner=draw(st.sampled_from(roster)),
                lost_at_ms=draw(st.integers(-(2**40), 2**40)),
                connectors=tuple(draw(st.lists(st.sampled_from(names), max_size=2))),
                tasks=tuple(
                    (name, draw(st.integers(0, 9)))
                    for name in draw(st.lists(st.sampled_from(names), max_size=3))
                ),
            )
            for _ in range(draw(st.integers(0, 2)))
        )
    return GroupState(
        stamp=draw(st.integers(0, 2**62)),
        roster=roster,
        connectors=connectors,
        connector_owners=np.array([draw(owner) for _ in connectors], dtype=np.int32),
        task_owners=np.array([draw(owner) for _ in range(num_tasks)], dtype=np.int32),
        held=held,
        storm=StormGuard(draw(st.integers(0, 50)), draw(st.integers(-1, 2**40))),
    )


def without_instance_ids(state: GroupState) -> GroupState:
    def strip(key: WorkerKey) -> WorkerKey:
        return WorkerKey(key.member_id)

    return GroupState(
        stamp=state.stamp,
        roster=tuple(strip(k) for k in state.roster),
        connectors=state.connectors,
        connector_owners=state.connector_owners,
        task_owners=state.task_owners,
        held=tuple(
            HeldWork(strip(h.owner), h.lost_at_ms, h.connectors, h.tasks) for h in state.held
        ),
        storm=state.storm,
    )


@PROPERTY
@given(state=st.none() | states(), next_ms=st.integers(-1, 2**50))
def test_metadata_round_trips_at_every_version(state, next_ms):
    metadata = WorkerMetadata(next_ms, state)
    assert decode(encode(metadata, 2), 2) == metadata
    v1 = decode(encode(metadata, 1), 1)
    assert v1.next_rebalance_ms == next_ms
    if state is None:
        assert v1.state is None
    elif len(set(state.roster)) == len(state.roster):
        assert v1.state == without_instance_ids(state)  # version 1 knows member ids only


@PROPERTY
@given(data=st.binary(max_size=64), version=st.integers(-2, 4))
def test_any_bytes_either_decode_or_raise_metadata_error(data, version):
    with contextlib.suppress(MetadataError):
        decode(data, version)


@PROPERTY
@given(state=states(), cut=st.integers(1, 200))
def test_truncated_metadata_is_refused_not_misread(state, cut):
    data = encode(WorkerMetadata(5, state), 2)
    with pytest.raises(MetadataError):
        decode(data[: max(0, len(data) - cut)] or b"\x01", 2)


def test_empty_metadata_is_a_worker_never_served_at_any_version():
    for version in (0, 1, 2, 7):
        assert decode(b"", version) == WorkerMetadata()
    assert remaining_delay_ms(b"", 1, 0) is None


def test_a_version_outside_the_readers_range_is_not_readable():
    data = encode(WorkerMetadata(10), 2)
    with pytest.raises(MetadataError):
        decode(data, 2, readable=(1, 1))
    with pytest.raises(MetadataError):
        decode(data, MAX_VERSION + 1)
    assert decode(encode(WorkerMetadata(10), 1), 1, readable=(1, 1)).next_rebalance_ms == 10
    assert (MIN_VERSION, MAX_VERSION) == (1, 2)


def test_remaining_delay_counts_down_to_zero_and_never_below():
    data = encode(WorkerMetadata(next_rebalance_ms=5_000), 2)
    assert remaining_delay_ms(data, 2, 1_000) == 4_000
    assert remaining_delay_ms(data, 2, 9_000) == 0
    assert remaining_delay_ms(encode(WorkerMetadata(), 2), 2, 0) is None
    assert remaining_delay_ms(b"\x00", 2, 0) is None  # unreadable: schedule nothing


# -- workers with different version ranges --------------------------------------------------


def test_workers_with_different_ranges_interoperate():
    c = ConnectCluster({"s1": 6, "s2": 3})
    c.join("old", instance_id="host-old", maximum_version=1)
    c.join("new", instance_id="host-new", maximum_version=2)
    c.join("newer", instance_id="host-newer", maximum_version=2)
    first = c.round(0, IncrementalCooperativeAssignor(1_000))
    assert {m.member_id: m.version for m in first.members} == {"old": 1, "new": 2, "newer": 2}
    # A carrier at each version: whoever computes next can read a copy.
    carried = {w.version for w in c.workers.values() if decode(w.metadata, w.version).state}
    assert carried == {1, 2}
    # The next round is computed by a worker that reads version 1 only; "newer" is gone.
    gone = c.leave("newer")
    v1_only = IncrementalCooperativeAssignor(1_000, maximum_version=1)
    result = c.round(10, v1_only)
    assert [h.owner.member_id for h in result.held] == ["newer"]
    assert set(result.held[0].tasks) == gone.tasks
    assert all(m.version == 1 for m in result.members)
    # Back on a version-2 assignor, the copies written at version 1 still read.
    c.join("newer-again", instance_id="host-newer", maximum_version=2)
    result = c.round(20, IncrementalCooperativeAssignor(1_000))
    # Version 1 lost the instance id, so the bounced worker is not recognised: Kafka's
    # behaviour, until every worker reads version 2.
    assert result.held and c.workers["newer-again"].tasks == frozenset()


def test_an_unchanged_group_keeps_its_bytes_across_versions():
    c = ConnectCluster({"s1": 6})
    c.join("a", instance_id="host-a", maximum_version=1)
    c.join("b", instance_id="host-b", maximum_version=1)
    v1_only = IncrementalCooperativeAssignor(maximum_version=1)
    first = c.round(0, v1_only)
    # A version-2 assignor reads the version-1 copies and sees nothing new to record.
    again = c.round(5, IncrementalCooperativeAssignor())
    assert again.members == first.members
    assert again.state.stamp == first.state.stamp


def test_a_corrupt_copy_costs_memory_never_the_round():
    c = ConnectCluster({"s1": 4})
    for w in "ab":
        c.join(w)
    c.round(0)
    for worker in c.workers.values():
        worker.metadata = b"\x01garbage"
    result = c.round(10)
    assert set(c.all_tasks()) == c.configured_tasks()
    assert result.held == ()
