"""A damaged object-store log never loads into less than was acknowledged (invariant 9): a slot
missing in the middle, a damaged slot or snapshot, refuses the load, naming the object and the
byte offset, and every object stays as it was. Pure cases, so obstore's ``MemoryStore`` (the
same calls an S3 store gets) is honest here."""

from __future__ import annotations

import obstore
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from obstore.store import MemoryStore

from actors.runtime.log import LogCorruptError
from actors.runtime.object_log import ObjectLog
from actors.runtime.object_slots import BATCH, FENCE, SLOT_HEADER

NAME = "offsets-0"


def written(batches: list[list[bytes]], snapshot_after: int | None = None) -> MemoryStore:
    """A store holding a log of ``batches`` (a snapshot after the first ``snapshot_after``)."""
    store = MemoryStore()
    log = ObjectLog(store, NAME)
    log.load()
    for i, batch in enumerate(batches):
        if i == snapshot_after:
            log.write_snapshot([r for b in batches[:i] for r in b])
        log.append(batch)
    log.close()
    return store


def objects(store: MemoryStore) -> dict[str, bytes]:
    return {meta["path"]: bytes(obstore.get(store, meta["path"]).bytes())
            for chunk in obstore.list(store, NAME) for meta in chunk}


def slot(seq: int) -> str:
    return f"{NAME}/log/{seq:020d}"


def refuses_keeping_objects(store: MemoryStore, key: str, offset: int | None = None) -> None:
    before = objects(store)
    with pytest.raises(LogCorruptError) as refused:
        ObjectLog(store, NAME).load()
    assert key in str(refused.value)
    if offset is not None:
        assert f"byte offset {offset}" in str(refused.value)
    assert objects(store) == before, "nothing written, nothing deleted"


def loads_everything(store: MemoryStore, batches: list[list[bytes]]) -> None:
    loaded = ObjectLog(store, NAME).load()
    got = [*loaded.snapshot, *(r for b in loaded.batches for r in b)]
    assert got == [r for b in batches for r in b]


BATCHES = [[f"commit-{i}".encode()] for i in range(6)]


def test_a_batch_slot_whose_kind_byte_turned_to_fence_refuses_the_load_naming_the_slot():
    store = written(BATCHES)
    data = bytearray(objects(store)[slot(3)])  # slot 0 is the first writer's fence
    assert data[4:5] == BATCH
    data[4:5] = FENCE  # one flipped bit: a batch that would read as an empty fence
    obstore.put(store, slot(3), bytes(data))

    refuses_keeping_objects(store, slot(3), 4)


def test_a_missing_slot_in_the_middle_refuses_the_load_and_keeps_the_objects():
    store = written(BATCHES)
    obstore.delete(store, slot(2))

    refuses_keeping_objects(store, slot(2), 0)


def test_a_flipped_byte_in_a_batch_slot_refuses_the_load_naming_its_offset():
    store = written(BATCHES)
    data = bytearray(objects(store)[slot(4)])
    data[SLOT_HEADER.size + 10] ^= 0x20
    obstore.put(store, slot(4), bytes(data))

    refuses_keeping_objects(store, slot(4), SLOT_HEADER.size)


def test_a_missing_snapshot_whose_marker_landed_refuses_the_load():
    store = written(BATCHES, snapshot_after=3)
    (snapshot,) = [k for k in objects(store) if "/snapshot/" in k]
    obstore.delete(store, snapshot)

    with pytest.raises(LogCorruptError):
        ObjectLog(store, NAME).load()


@settings(max_examples=150, deadline=None)
@given(
    batches=st.lists(st.lists(st.binary(min_size=1, max_size=30), min_size=1, max_size=3),
                     min_size=1, max_size=8),
    snapshot_after=st.one_of(st.none(), st.integers(min_value=1, max_value=7)),
    where=st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    mask=st.integers(min_value=1, max_value=255),
)
def test_a_flipped_byte_in_any_object_gives_everything_or_refuses_naming_the_object(
    batches: list[list[bytes]], snapshot_after: int | None, where: float, mask: int
) -> None:
    store = written(batches, snapshot_after)
    found = objects(store)
    keys = sorted(found)
    at = int(where * sum(map(len, found.values())))
    index = 0
    while at >= len(found[keys[index]]):
        at -= len(found[keys[index]])
        index += 1
    key = keys[index]
    data = bytearray(found[key])
    data[at] ^= mask
    obstore.put(store, key, bytes(data))

    before = objects(store)
    try:
        loads_everything(store, batches)
    except LogCorruptError as refused:
        assert key in str(refused)
        assert "byte offset" in str(refused)
        assert objects(store) == before
