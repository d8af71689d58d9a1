"""Snapshot + log -> a shard: how a (re)started partition rebuilds what it acknowledged.

The partition answers COORDINATOR_LOAD_IN_PROGRESS until this returns, so its speed is the
failover time its clients see. It is built from bulk steps, each one msgpack call or one C-level
dict operation over many records, rather than one decoded object and one ``replay`` per record:

1. ``CompactedState.add_batch`` per log batch: keys read in one call per batch, the latest
   record per key kept by ``dict.update``; an overwritten record is never decoded.
2. The survivors' offset commits (most of a real ``__consumer_offsets`` log) are decoded in
   bulk and built into the offsets map directly (``GroupCoordinatorShard.replay_offsets``).
3. The groups the shard can build in bulk (``GroupCoordinatorShard.bulk_loader``: consumer
   groups, values decoded per record type, each member built once) are; the records of any
   other group are decoded and replayed one by one, in log order. This module knows no group
   type: which records go in bulk is the shard's answer.

The result equals replaying every record of the log in order (the reference path,
``tests/actors/runtime/reference.py``, which the tests and ``bench/load.py`` check it against):
records are the truth, compaction keeps the latest of each key, and offsets are independent of
group records.

It reads through the ``PartitionStorage`` interface, so it loads a local log or any other.

The cyclic garbage collector is paused while the load allocates its millions of objects (none
of them garbage), then the loaded state is moved out of its sight (``gc.freeze``): a full
collection would otherwise walk every offset and member on each pass, for nothing.
"""

from __future__ import annotations

import contextlib
import gc
import itertools
import operator
import time
from collections.abc import Callable, Iterator, Mapping

from actors.runtime.compaction import CompactedState
from actors.runtime.storage import PartitionStorage
from protocol.codec import decode_key, decode_value, offset_commits, split_records
from protocol.config import CoordinatorConfig, GroupConfig
from protocol.metadata import MetadataImage
from protocol.records import GroupRebalanceHistoryKey, OffsetCommitKey, Record
from protocol.shard import GroupCoordinatorShard

# Records per bulk step for a snapshot, which the log hands over as one long list.
CHUNK_RECORDS = 10_000
_OFFSET_COMMIT = OffsetCommitKey.TYPE
_TYPE_OF = operator.itemgetter(0)
# Record types whose replay creates no group: rebalance histories (offsets go apart anyway).
_NO_GROUP_TYPES = frozenset({GroupRebalanceHistoryKey.TYPE})


def now_ms() -> int:
    return int(time.monotonic() * 1000)


def load_shard(
    log: PartitionStorage,
    config: CoordinatorConfig,
    metadata: MetadataImage,
    seed: int = 0,
    recover: bool = False,
    clock_ms: Callable[[], int] = now_ms,
    group_configs: Mapping[str, GroupConfig] | None = None,
) -> tuple[GroupCoordinatorShard, CompactedState, dict]:
    """Snapshot + log -> a shard whose clock (and so every session timer) starts now
    (``clock_ms()``), the compacted state (what the next snapshot writes) and figures for the
    load's stats.

    ``group_configs``: the controller's dynamic group configs, in force before the first
    record replays, so that each member's session restarts for its group's own timeout (a
    group config), not the broker's default.

    ``recover``: the storage was loaded before and a write failed (or a turn broke the shard)
    since (``PartitionStorage.recover``); the caller has dropped its old shard, which the
    collector may now reclaim (``gc.unfreeze``).
    """
    started = time.perf_counter()
    gc.unfreeze()
    loaded = log.recover() if recover else log.load()
    with _gc_paused():
        compacted = CompactedState()
        for batch in _chunks(loaded.snapshot):
            compacted.add_batch(batch)
        for batch in loaded.batches:
            compacted.add_batch(batch)
        compacted_at = time.perf_counter()
        shard = GroupCoordinatorShard(config, metadata, now_ms=clock_ms(), seed=seed)
        if group_configs:
            shard.set_group_configs(dict(group_configs))
        replay_compacted(shard, compacted.records())
    seconds = time.perf_counter() - started
    return shard, compacted, {
        "records": loaded.records,
        "replayed": len(compacted),
        "records_per_s": loaded.records / seconds if seconds > 0 else 0.0,
        "log_seconds": loaded.seconds,
        "log_records_per_s": loaded.records_per_s,
        "compact_seconds": compacted_at - started - loaded.seconds,
        "replay_seconds": time.perf_counter() - compacted_at,
        "truncated_bytes": loaded.truncated_bytes,
    }


def replay_compacted(shard: GroupCoordinatorShard, records: list[bytes]) -> None:
    """Apply compacted records (at most one per key, in log order) to a fresh shard.

    Offset commits go in as one bulk step at the place of the first of them: nothing a group
    record's replay does depends on offsets or the other way round, but the retention timer
    they arm keeps its place among the members' session timers. The groups the shard builds in
    bulk (``GroupCoordinatorShard.bulk_loader``) each take their place among the groups at their
    first record; the records of any other group are replayed one by one, in order.
    """
    keys: list[tuple] = []
    blobs: list[bytes | None] = []
    for chunk in _chunks(records):
        chunk_keys, chunk_blobs, _ = split_records(chunk)
        keys += chunk_keys
        blobs += chunk_blobs
    is_offset = list(map(operator.eq, map(_TYPE_OF, keys), itertools.repeat(_OFFSET_COMMIT)))
    first_offset = is_offset.index(True) if True in is_offset else len(keys)
    others = list(map(operator.not_, is_offset))
    other_keys = list(itertools.compress(keys, others))
    other_blobs = list(itertools.compress(blobs, others))
    before = others[:first_offset].count(True)  # group records before the first commit
    bulk, in_bulk = shard.bulk_loader(other_keys, other_blobs)
    apart = list(map(operator.not_, in_bulk))
    if set(itertools.compress(map(_TYPE_OF, other_keys), apart)) <= _NO_GROUP_TYPES:
        # No other group is replayed record by record, so the bulk groups take their places
        # at once; the rest (rebalance histories) is replayed in order around the offsets.
        bulk.add_all(
            list(itertools.compress(other_keys, in_bulk)),
            list(itertools.compress(other_blobs, in_bulk)),  # type: ignore[arg-type]
        )
        other_keys, other_blobs, before = (
            list(itertools.compress(other_keys, apart)),
            list(itertools.compress(other_blobs, apart)),
            apart[:before].count(True),
        )
        in_bulk = [False] * len(other_keys)
    _replay_each(shard, bulk, other_keys[:before], other_blobs[:before], in_bulk[:before])
    shard.replay_offsets(
        offset_commits(
            list(itertools.compress(keys, is_offset)), list(itertools.compress(blobs, is_offset))
        )
    )
    _replay_each(shard, bulk, other_keys[before:], other_blobs[before:], in_bulk[before:])
    bulk.finish()


def _replay_each(
    shard: GroupCoordinatorShard,
    bulk,
    keys: list[tuple],
    blobs: list[bytes | None],
    in_bulk: list[bool],
) -> None:
    for key, blob, later in zip(keys, blobs, in_bulk, strict=True):
        if later:
            bulk.add(key, blob)  # type: ignore[arg-type]
        else:
            shard.replay(Record(decode_key(key), decode_value(key[0], blob)))


def _chunks(records: list[bytes]) -> Iterator[list[bytes]]:
    for start in range(0, len(records), CHUNK_RECORDS):
        yield records[start : start + CHUNK_RECORDS]


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """No cyclic collection while loading; afterwards everything allocated so far is frozen
    (``gc.freeze``) before collection resumes, so no pass ever walks the loaded state."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
