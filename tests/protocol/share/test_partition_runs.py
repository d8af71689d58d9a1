"""The share-partition kept as runs of offsets moves exactly as the one-offset-at-a-time
oracle (``per_offset_model``) does: the same acquisitions, the same refusals with the same
words, the same record after every move, the same answers to every question, whatever the
sequence of acquires, acknowledgements (well-formed or not, one type or one per offset),
releases, lock expiries, lowered delivery limits and resets."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import CoordinatorError
from protocol.share.messages import (
    ACK_ACCEPT,
    ACK_GAP,
    ACK_REJECT,
    ACK_RELEASE,
    AcknowledgementBatch,
)
from protocol.share.partition_state import Limits, SharePartition
from tests.protocol.share.per_offset_model import PerOffsetPartition

MEMBERS = ("a", "b", "c")
TYPES = (ACK_GAP, ACK_ACCEPT, ACK_RELEASE, ACK_REJECT)

members = st.sampled_from(MEMBERS)
limits = st.builds(Limits, record_lock_duration_ms=st.sampled_from([10, 100]),
                   delivery_count_limit=st.integers(1, 4), max_record_locks=st.just(40))


@st.composite
def batches(draw) -> list[AcknowledgementBatch]:
    """Mostly well-formed, ordered batches over the first 60 offsets; sometimes not."""
    out, pos = [], draw(st.integers(0, 30))
    for _ in range(draw(st.integers(0, 3))):
        first = pos + draw(st.integers(-2, 6))
        last = first + draw(st.integers(-1, 8))
        span = max(1, last - first + 1)
        if draw(st.booleans()):
            types = [draw(st.sampled_from(TYPES))]
        else:
            types = draw(st.lists(st.sampled_from((*TYPES, 9)), min_size=span - 1,
                                  max_size=span + 1))
        out.append(AcknowledgementBatch(first, last, types))
        pos = last + 1
    return out


moves = st.one_of(
    st.tuples(st.just("acquire"), members, st.integers(0, 30), st.integers(0, 80), limits,
              st.sampled_from((0, 0, 1, 3, 7))),
    st.tuples(st.just("acquire"), members, st.integers(0, 30), st.integers(0, 80), limits,
              st.sampled_from((0, 0, 1, 3, 7))),
    st.tuples(st.just("acknowledge"), members, batches(), limits),
    st.tuples(st.just("held"), members, st.lists(st.sampled_from(TYPES), min_size=1,
                                                 max_size=4), st.integers(1, 5), limits),
    st.tuples(st.just("held"), members, st.lists(st.sampled_from(TYPES), min_size=1,
                                                 max_size=4), st.integers(1, 5), limits),
    st.tuples(st.just("release"), members, limits),
    st.tuples(st.just("expire"), st.integers(0, 150), limits),
    st.tuples(st.just("time"), st.integers(0, 60)),
)


def held_batches(oracle: PerOffsetPartition, member: str, types: list[int],
                 piece: int) -> list[AcknowledgementBatch]:
    """Batches over what ``member`` holds (as the oracle says), in pieces of ``piece``
    offsets: one type per piece when ``types`` has one, else ``types`` cycled per offset."""
    held = oracle.acquired_by(member)
    out = []
    for k in range(0, len(held), piece):
        chunk = held[k:k + piece]
        if chunk[-1] - chunk[0] + 1 != len(chunk):  # not consecutive: one batch each
            out += [AcknowledgementBatch(o, o, [types[0]]) for o in chunk]
            continue
        ts = [types[0]] if len(types) == 1 else [types[i % len(types)]
                                                  for i in range(len(chunk))]
        out.append(AcknowledgementBatch(chunk[0], chunk[-1], ts))
    return out


def play(sp, move: tuple, now: int):
    """("ok", what the move returned) or ("refused", (error, message))."""
    kind, *args = move
    try:
        if kind == "acquire":
            m, n, end, lim, batch = args
            return "ok", sp.acquire(m, n, end, now, lim, batch)
        if kind == "acknowledge":
            return "ok", sp.acknowledge(*args)
        if kind == "release":
            return "ok", sp.release_member(*args)
        if kind == "expire":
            return "ok", sp.expire_locks(*args)
        return "ok", sp.reset(*args)
    except CoordinatorError as e:
        return "refused", (e.error, e.message)


@settings(max_examples=400, deadline=None)
@given(start=st.integers(0, 5), script=st.lists(moves, min_size=5, max_size=60),
       reset_at=st.integers(0, 80))
def test_runs_move_exactly_as_one_offset_at_a_time(start, script, reset_at):
    runs, oracle = SharePartition(start), PerOffsetPartition(start)
    now = 0
    for i, move in enumerate(script):
        if move[0] == "time":
            now += move[1]
            continue
        if move[0] == "held":
            _, member, types, piece, lim = move
            move = ("acknowledge", member, held_batches(oracle, member, types, piece), lim)
        if i == reset_at:
            move = ("reset", start + 3)
        got = [play(sp, move, now) for sp in (runs, oracle)]
        assert got[0] == got[1], move
        assert runs.to_value() == oracle.to_value(), move
        assert SharePartition.from_value(runs.to_value()) == runs
        assert runs.records == oracle.records
        assert (runs.start_offset, runs.next_offset) == (oracle.start_offset, oracle.next_offset)
        for m in MEMBERS:
            assert runs.acquired_by(m) == oracle.acquired_by(m)
            assert runs.holds(m) == bool(oracle.acquired_by(m))
        assert runs.in_flight() == oracle.in_flight()
        assert runs.next_lock_deadline_ms() == oracle.next_lock_deadline_ms()
        assert runs.lag(100) == oracle.lag(100)


def test_a_value_with_equal_neighbours_loads_as_one_run():
    from protocol.share.records import InFlightBatch, SharePartitionStateValue

    value = SharePartitionStateValue(0, (InFlightBatch(0, 3, 1, 1, "a", 5),
                                         InFlightBatch(4, 9, 1, 1, "a", 5)))
    sp = SharePartition.from_value(value)
    assert sp.runs == [InFlightBatch(0, 9, 1, 1, "a", 5)] and sp.next_offset == 10


def test_accepting_500_records_is_one_run_not_500():
    lim = Limits()
    sp = SharePartition(0)
    sp.acquire("a", 500, 10_000, 0, lim)
    sp.acquire("b", 500, 10_000, 0, lim)
    assert len(sp.runs) == 2
    sp.acknowledge("b", [AcknowledgementBatch(500, 999, [ACK_ACCEPT])], lim)
    assert len(sp.runs) == 2 and sp.start_offset == 0
    sp.acknowledge("a", [AcknowledgementBatch(0, 499, [ACK_ACCEPT])], lim)
    assert sp.runs == [] and sp.start_offset == sp.next_offset == 1000


