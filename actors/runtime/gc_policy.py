"""How a coordinator's process collects garbage: seldom, and never what it loaded.

CPython's cyclic collector runs a young-generation pass every 700 net allocations of container
objects and, every so often, a full pass over every object the process holds: the imported
codecs' schemas, the shard's groups and offsets. A partition serving pipelined commits
allocates a request, a reply, records and futures per commit, and those live across a turn's
fsync, so they survive into older generations and drag full passes along: measured on one
partition's listener fed by 8 librdkafka clients, the collector took half of the process's CPU
(8.7k commits/s with Python's defaults, 20k with this policy; ``bench/wire.py``'s figures come
with it). Nearly everything a request allocates is freed by reference counting; the collector
is only for cycles, and those are rare here.

So a coordinator process (a partition, a gateway) runs young passes every ``GEN0_THRESHOLD``
allocations, and once it has loaded, freezes what it holds (``gc.freeze``: moved out of every
generation, never scanned again, still freed by reference counting). A reload (after a failed
write or a bug) first unfreezes and collects, so a dropped shard's cycles are reclaimed, then
freezes the new state.
"""

from __future__ import annotations

import gc

# Net container allocations between young-generation passes (CPython's default: 700); the
# older generations keep a pass every 20 passes of the one below. 100,000 rather than 20,000
# gave bench/wire.py's async commits ~10% more (a young pass scans every request in flight).
GEN0_THRESHOLD = 100_000
OLDER_THRESHOLDS = (20, 20)


def tune() -> None:
    """Collect seldom (call once, when the process starts serving)."""
    gc.set_threshold(GEN0_THRESHOLD, *OLDER_THRESHOLDS)


def settle() -> None:
    """After a load: reclaim what an earlier load left in cycles, then freeze what is held
    now, so that full passes never scan the loaded state or the imported modules."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()
