"""Reference paths that production code is checked against, kept out of production modules.

``load_shard_by_record``: every record of a log decoded and replayed in order, nothing compacted
or batched: slow, and what ``actors.runtime.loading.load_shard`` must equal (``test_load.py``,
``bench/load.py``). ``add_encoded``: one record read back from a log added to a
``CompactedState`` on its own, what ``CompactedState.add_batch`` must equal record by record.
"""

from __future__ import annotations

import time

from actors.runtime.compaction import CompactedState
from actors.runtime.loading import now_ms
from actors.runtime.storage import PartitionStorage
from protocol.codec import decode_record
from protocol.config import CoordinatorConfig
from protocol.metadata import MetadataImage
from protocol.shard import GroupCoordinatorShard


def load_shard_by_record(
    log: PartitionStorage, config: CoordinatorConfig, metadata: MetadataImage, seed: int = 0
) -> tuple[GroupCoordinatorShard, dict]:
    """The reference load: every record of the log decoded and replayed in order, nothing
    compacted or batched. Slow; the bulk path must build the same shard."""
    started = time.perf_counter()
    loaded = log.load()
    shard = GroupCoordinatorShard(config, metadata, now_ms=now_ms(), seed=seed)
    for batch in [loaded.snapshot, *loaded.batches]:
        for data in batch:
            shard.replay(decode_record(data))
    seconds = time.perf_counter() - started
    return shard, {
        "records": loaded.records,
        "records_per_s": loaded.records / seconds if seconds > 0 else 0.0,
    }


def add_encoded(state: CompactedState, data: bytes) -> None:
    """Add one encoded record to ``state`` by itself, as the live partition adds what it wrote."""
    state.add(decode_record(data), data)
