"""The object-store log against the local log: turn latency, appends per second, load time.

Run: ``python bench/object_store.py [--seconds S] [--records R] [--turn-records N]``. It starts
SeaweedFS on loopback (``tests/object_store.py``; a real S3 endpoint, conditional PUTs and all)
and, side by side in one run:

- **appends**: writers each append one turn of N offset commits (default 10) after another,
  for S seconds (default 5): one partition, then four partitions at once (four threads, four
  logs), on the local log (``PartitionLog``, fsync on, as a partition runs) and on the object
  store (``ObjectLog``, one put-if-absent PUT per turn); prints appends per second (all writers
  together) and each turn's latency (median, p99);
- **load**: a 1,000,000-record log (``bench/load.py``'s ``mixed`` shape: consumer groups and
  their offset commits, turns of up to 1,000 records) loaded by a new incarnation
  (``load_shard``: read, compact, replay): from local disk, from the object store as it was
  written (one object per turn, read in parallel), and from the object store after a snapshot
  (one snapshot object + a few slots);

then the ratios object store / local disk. Loopback SeaweedFS is a floor for a PUT's cost:
cloud S3 Standard takes ~100 ms a PUT, S3 Express One Zone single-digit ms (docs/decisions.md).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors.runtime.loading import load_shard
from actors.runtime.log import PartitionLog
from actors.runtime.object_log import ObjectLog
from actors.runtime.object_slots import open_store
from actors.runtime.storage import PartitionStorage
from bench.load import CONFIG, _commit, image, write_log
from tests.object_store import aws_env, seaweedfs


def appends(open_log, writers: int, seconds: float, turn_records: int) -> dict:
    """``writers`` logs appended to at once for ``seconds``; appends/s and latency."""
    logs = [open_log(f"offsets-{w}") for w in range(writers)]
    for log in logs:
        log.load()
    latencies: list[list[float]] = [[] for _ in logs]
    start = threading.Barrier(writers)

    def run(w: int) -> None:
        start.wait()
        deadline = time.perf_counter() + seconds
        n = 0
        while time.perf_counter() < deadline:
            turn = [_commit(f"g{w}", p, n) for p in range(turn_records)]
            began = time.perf_counter()
            logs[w].append(turn)
            latencies[w].append(time.perf_counter() - began)
            n += 1

    threads = [threading.Thread(target=run, args=(w,)) for w in range(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for log in logs:
        log.close()
    every = sorted(x for per in latencies for x in per)
    return {
        "appends_per_s": len(every) / seconds,
        "median_ms": statistics.median(every) * 1000,
        "p99_ms": every[int(len(every) * 0.99)] * 1000,
    }


def timed_load(storage: PartitionStorage) -> tuple[float, float, int]:
    """(whole load s, storage read s, records) of a new incarnation."""
    started = time.perf_counter()
    _, _, stats = load_shard(storage, CONFIG, image())
    return time.perf_counter() - started, stats["log_seconds"], stats["records"]


def copy_log(local_dir: str, target: ObjectLog) -> int:
    """The local log's batches appended to ``target`` one by one (one object per turn)."""
    source = PartitionLog(local_dir, fsync=False)
    loaded = source.load()
    source.close()
    target.load()
    for batch in loaded.batches:
        target.append(batch)
    return len(loaded.batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--turn-records", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-objstore-") as tmp, seaweedfs() as server, \
            aws_env(server.env):
        rows = []
        for writers in (1, 4):
            local_root = Path(tmp, f"appends-{writers}")
            store = open_store(server.url())
            local = appends(lambda name, root=local_root: PartitionLog(root / name),
                            writers, args.seconds, args.turn_records)
            remote = appends(lambda name, s=store: ObjectLog(s, name),
                             writers, args.seconds, args.turn_records)
            rows.append((writers, local, remote))

        log_dir = str(Path(tmp, "load-local"))
        write_log(log_dir, "mixed", args.records)
        url = server.url()
        objects = copy_log(log_dir, ObjectLog(open_store(url), "offsets-0"))
        local_load = timed_load(PartitionLog(log_dir, fsync=False))
        slots_load = timed_load(ObjectLog(open_store(url), "offsets-0"))
        snap_url = server.url()
        writer = ObjectLog(open_store(snap_url), "offsets-0")
        copy_log(log_dir, writer)
        _, compacted, _ = load_shard(PartitionLog(log_dir, fsync=False), CONFIG, image())
        writer.write_snapshot(compacted.records())
        snap_load = timed_load(ObjectLog(open_store(snap_url), "offsets-0"))

    print(f"Appends: turns of {args.turn_records} offset commits, {args.seconds:.0f} s each; "
          "local = PartitionLog (fsync), object = ObjectLog on SeaweedFS (loopback)")
    print(f"{'partitions':>10} {'store':>7} {'appends/s':>10} {'median ms':>10} {'p99 ms':>8}")
    for writers, local, remote in rows:
        for name, r in (("local", local), ("object", remote)):
            print(f"{writers:>10} {name:>7} {r['appends_per_s']:>10.0f} {r['median_ms']:>10.2f} "
                  f"{r['p99_ms']:>8.2f}")
        rate = remote["appends_per_s"] / local["appends_per_s"]
        print(f"{writers:>10} {'ratio':>7} {rate:>10.2f}"
              f" {remote['median_ms'] / local['median_ms']:>10.2f} "
              f"{remote['p99_ms'] / local['p99_ms']:>8.2f}   (object / local)")
    print(f"\nLoad of {local_load[2]:,} records (mixed shape), whole load_shard / storage read:")
    print(f"  local disk:                    {local_load[0]:6.2f} s / {local_load[1]:.2f} s")
    print(f"  object store, {objects} objects: {slots_load[0]:6.2f} s / {slots_load[1]:.2f} s"
          f"  = {slots_load[0] / local_load[0]:.2f}x local")
    print(f"  object store, after snapshot:  {snap_load[0]:6.2f} s / {snap_load[1]:.2f} s"
          f"  = {snap_load[0] / local_load[0]:.2f}x local  ({snap_load[2]:,} records)")


if __name__ == "__main__":
    main()
