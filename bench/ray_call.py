"""Where one request's time goes on the Ray path, call by call (issue 23, "the Ray path too").

Run: ``python bench/ray_call.py [--samples K] [--seconds S] [--callers N] [--against REV]
[--rounds R]``. Every figure is one request in flight at a time unless it says callers:

1. the turn without Ray: ``PartitionTurns`` over the local log (fsync on) on one asyncio loop,
   as the partition actor runs it: a steady heartbeat (no record: the turn only checks its
   fence) and an offset commit (one record: append + fsync), each split into its stages by
   timing the functions it passes through (submit → the loop takes the event, tick, shard,
   the append and inside it the fence, write and fsync, release → the caller has its reply);
2. over Ray from the driver, as ``Cluster.call`` calls: the same stages timed inside the
   partition actor (the bench patches them in through ``OffsetsPartition.query``), and the
   Ray part around them: submission (``.remote`` returns), the trip in (to
   ``PartitionTurns.handle_batch``), the trip back (to ``ray.get`` returning; pickling included
   where the revision's callers pickle), next to a no-op actor call split the same way;
   ``Cluster.call`` itself for a heartbeat and a commit;
3. from a client actor: a heartbeat sent as ``ConsumerClient`` sends it (a batch, with the
   client's waker), a commit as the other clients send one, a no-op call;
4. throughput: ``--callers`` client actors each with one heartbeat in flight, sent as
   ``ConsumerClient`` sends them, for ``--seconds`` (``bench/heartbeat.py``'s one-per-call
   figure), next to the same callers' no-op calls.

The callers call as the revision under test does (packed when its partition has
``handle_packed``), so ``--against REV`` compares the whole path: it runs this same script over
``git archive REV`` and over the working tree, each in a subprocess with its own local Ray,
alternating ``--rounds`` times (the machine is shared: its load drifts), and prints each
figure's median over the rounds, before and after, with the ratio. Times are µs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protocol import messages as m  # noqa: E402
from protocol.config import CoordinatorConfig  # noqa: E402
from protocol.errors import Errors  # noqa: E402
from protocol.metadata import MetadataImage, TopicMetadata  # noqa: E402

# Long sessions: nothing may expire while the bench runs.
CONFIG = CoordinatorConfig(
    group_consumer_session_timeout_ms=60_000, group_consumer_max_session_timeout_ms=120_000
)
TOPIC = "bench-t"
STAGES_KEY = "_cohort_ray_call_stages"  # where the partition actor keeps its timings


# ---------------------------------------------------------------------------------- requests

def join(group: str, member: str) -> m.ConsumerGroupHeartbeatRequest:
    return m.ConsumerGroupHeartbeatRequest(
        group, member, 0, rebalance_timeout_ms=60_000, subscribed_topic_names=[TOPIC],
        topic_partitions=[],
    )


def steady(joined: m.ConsumerGroupHeartbeatResponse, group: str,
           member: str) -> m.ConsumerGroupHeartbeatRequest:
    """The member's ordinary heartbeat once it owns what it was given: no record."""
    owned = [] if joined.assignment is None else joined.assignment.assigned_topic_partitions
    return m.ConsumerGroupHeartbeatRequest(group, member, joined.member_epoch,
                                           topic_partitions=owned)


def commit(group: str, offset: int) -> m.OffsetCommitRequest:
    """A simple consumer's commit (generation -1): one record, one append, one fsync."""
    return m.OffsetCommitRequest(group, topics=[
        m.OffsetCommitRequestTopic(TOPIC, [m.OffsetCommitRequestPartition(0, offset)])
    ])


def ok(reply: object) -> bool:
    if reply.error_code != Errors.NONE:
        return False
    topics = getattr(reply, "topics", None) or []
    return all(p.error_code == Errors.NONE for t in topics for p in t.partitions)


def median_us(samples_s: list[float]) -> float:
    return statistics.median(samples_s) * 1e6


def p99_us(samples_s: list[float]) -> float:
    xs = sorted(samples_s)
    return xs[min(len(xs) - 1, int(len(xs) * 0.99))] * 1e6


# -------------------------------------------------------------------------------- the stages

class Stages:
    """Wall time spent inside named functions during one request, summed per request."""

    def __init__(self) -> None:
        self.current: dict[str, float] = defaultdict(float)
        self.marks: dict[str, float] = {}
        self.per_request: list[dict[str, float]] = []

    def timed(self, name: str, fn: Callable) -> Callable:
        stages = self

        if asyncio.iscoroutinefunction(fn):
            async def awrapper(*args, **kwargs):
                started = time.perf_counter()
                try:
                    return await fn(*args, **kwargs)
                finally:
                    stages.current[name] += time.perf_counter() - started
            return awrapper

        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                stages.current[name] += time.perf_counter() - started
        return wrapper

    def mark(self, name: str, fn: Callable) -> Callable:
        """Note when ``fn`` is first entered during the request."""
        stages = self

        def wrapper(*args, **kwargs):
            stages.marks.setdefault(name, time.perf_counter())
            return fn(*args, **kwargs)
        return wrapper

    def whole(self, fn: Callable) -> Callable:
        """``PartitionTurns.handle_batch``: one request from its arrival to its reply."""
        stages = self

        async def wrapper(*args, **kwargs):
            stages.current.clear()
            stages.marks.clear()
            started = time.perf_counter()
            reply = await fn(*args, **kwargs)
            stages.finish(started, time.perf_counter())
            return reply
        return wrapper

    def finish(self, started: float, ended: float) -> None:
        row = dict(self.current)
        row["total"], row["entered"], row["left"] = ended - started, started, ended
        if "taken" in self.marks:
            row["wake"] = self.marks["taken"] - started
        if "release" in self.marks:
            row["release"] = ended - self.marks["release"]
        self.per_request.append(row)
        self.current = defaultdict(float)
        self.marks = {}


TURN_STAGES = ["wake", "tick", "shard", "append", "storage_append", "fence", "write", "fsync",
               "release", "metrics", "snapshot_check", "total"]


def install_stages(_shard: object = None) -> Stages:
    """Wrap the turn's functions with timers, in this process, for good (the bench's own
    partitions only); the timings collect in ``builtins.<STAGES_KEY>``. Run inside the
    partition actor through ``OffsetsPartition.query``, so it names nothing of the bench."""
    import builtins

    from actors.runtime import fencing, log, mailbox, turn_log, turns
    from actors.runtime.fileops import FileOps
    from protocol.shard import GroupCoordinatorShard

    stages = Stages()
    targets = [
        (turns.PartitionTurns, "handle_batch", stages.whole),
        (mailbox.Mailbox, "take", lambda f: stages.mark("taken", f)),
        (turns.PartitionTurns, "_release", lambda f: stages.mark("release", f)),
        (turn_log.TurnLog, "append", lambda f: stages.timed("append", f)),
        (GroupCoordinatorShard, "tick", lambda f: stages.timed("tick", f)),
        (GroupCoordinatorShard, "handle_batch", lambda f: stages.timed("shard", f)),
        (log.PartitionLog, "append", lambda f: stages.timed("storage_append", f)),
        (FileOps, "write", lambda f: stages.timed("write", f)),
        (FileOps, "fsync", lambda f: stages.timed("fsync", f)),
        (fencing.Fence, "check", lambda f: stages.timed("fence", f)),
        (turns.PartitionTurns, "_observe", lambda f: stages.timed("metrics", f)),
        (turn_log.TurnLog, "maybe_snapshot", lambda f: stages.timed("snapshot_check", f)),
    ]
    for owner, attr, wrap in targets:
        setattr(owner, attr, wrap(getattr(owner, attr)))
    builtins.__dict__[STAGES_KEY] = stages
    return stages


def stage_medians(rows: list[dict[str, float]]) -> dict[str, float]:
    out = {name: median_us([r.get(name, 0.0) for r in rows]) for name in TURN_STAGES}
    out["p99"] = p99_us([r["total"] for r in rows])
    return out


# ------------------------------------------------------------------------ 1. the turn, no Ray

def turn_breakdown(samples: int) -> dict[str, dict]:
    """Median stage times of a steady heartbeat and of a commit through ``PartitionTurns``."""
    from actors.runtime import log, turns
    from actors.runtime.controller import ControllerImage

    image = ControllerImage(1, MetadataImage([TopicMetadata("t-id", TOPIC, 4)]), {})

    async def fetch_image() -> ControllerImage:
        return image

    async def scenario(directory: str) -> dict[str, dict]:
        storage = log.PartitionLog(directory)
        partition = turns.PartitionTurns("offsets-0", storage, CONFIG, fetch_image)
        task = asyncio.get_running_loop().create_task(partition.run())
        while partition.state != "active":
            await asyncio.sleep(0.01)
        [joined] = await partition.handle_batch([join("g-hb", "m1")])
        [joined] = await partition.handle_batch([steady(joined, "g-hb", "m1")])
        stages = install_stages()  # this process is the bench's own: patched for good
        out = {}
        for kind in ("heartbeat", "commit"):
            stages.per_request = []
            for i in range(samples):
                req = steady(joined, "g-hb", "m1") if kind == "heartbeat" else commit("g-c", i)
                [reply] = await partition.handle_batch([req])
                assert ok(reply), reply
            out[kind] = stage_medians(stages.per_request)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        storage.close()
        return out

    with tempfile.TemporaryDirectory(prefix="cohort-raycall-", dir=ROOT) as directory:
        return asyncio.run(scenario(directory))


# ------------------------------------------------------------------------------ 2-4. over Ray

def packs(partition: object) -> bool:
    """Whether this revision's partition takes packed calls (and its callers make them)."""
    try:
        partition.handle_packed  # noqa: B018 - an actor handle lists its methods
    except AttributeError:
        return False
    return True


def ray_figures(samples: int, seconds: float, callers: int) -> dict:
    import pickle

    import ray

    from actors.cluster import Cluster

    @ray.remote(num_cpus=0)
    class Noop:
        async def ping(self, x: object) -> float:
            return time.perf_counter()  # CLOCK_MONOTONIC: one clock for every process here

    @ray.remote(num_cpus=0)
    class Caller:
        """A client actor: one call in flight, sent as the revision's clients send it."""

        def __init__(self, packed: bool) -> None:
            self.packed = packed
            me = ray.get_runtime_context().current_actor
            self.waker = pickle.dumps(me) if packed else me

        async def heartbeat(self, target, req: object) -> object:
            """As ``ConsumerClient._send``: a batch (of one here) with the waker."""
            if self.packed:
                data = await target.handle_batch_packed.remote(pickle.dumps([req]), self.waker)
                return pickle.loads(data)[0]
            return (await target.handle_batch.remote([req], waker=self.waker))[0]

        async def one(self, target, req: object) -> object:
            """As the classic, Connect and share clients: one request."""
            if self.packed:
                return pickle.loads(await target.handle_packed.remote(pickle.dumps(req)))
            return await target.handle.remote(req)

        async def latencies(self, target, kind: str, req: object, n: int) -> list[float]:
            out = []
            for i in range(n):
                started = time.perf_counter()
                if kind == "noop":
                    await target.ping.remote(None)
                elif kind == "heartbeat":
                    assert ok(await self.heartbeat(target, req))
                else:
                    assert ok(await self.one(target, commit(req, i)))
                out.append(time.perf_counter() - started)
            return out

        async def join(self, target, group: str, member: str) -> object:
            joined = await self.one(target, join(group, member))
            for _ in range(20):
                joined = await self.one(target, steady(joined, group, member))
            return steady(joined, group, member)

        async def spin(self, target, kind: str, req: object, seconds_: float) -> int:
            n, deadline = 0, time.monotonic() + seconds_
            while time.monotonic() < deadline:
                if kind == "noop":
                    await target.ping.remote(None)
                elif kind == "heartbeat":
                    assert ok(await self.heartbeat(target, req))
                else:
                    assert ok(await self.one(target, commit(req, n)))
                n += 1
            return n

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="cohort-raycall-", dir=ROOT) as data:
        cluster = Cluster.start(num_partitions=1, storage_path=data, config=CONFIG)
        try:
            cluster.create_topic(TOPIC, 64)
            partition = cluster.partition(0)
            packed = packs(partition)
            out["packed"] = packed
            noop = Noop.remote()
            hosts = [Caller.remote(packed) for _ in range(max(1, callers))]
            ray.get([h.latencies.remote(noop, "noop", None, 50) for h in hosts])  # warm

            def driver_call(req: object) -> object:
                """What ``Cluster.call`` does around the Ray call, split at ``.remote``."""
                if packed:
                    ref = partition.handle_packed.remote(pickle.dumps(req))
                    return ref, lambda: pickle.loads(ray.get(ref))
                ref = partition.handle.remote(req)
                return ref, lambda: ray.get(ref)

            # 2. the driver: a no-op, then heartbeats and commits with the actor's stages
            rows = []
            for _ in range(samples):
                t0 = time.perf_counter()
                ref = noop.ping.remote(None)
                t1 = time.perf_counter()
                at = ray.get(ref)
                rows.append((t1 - t0, at - t1, 0.0, time.perf_counter() - at))
            out["driver_noop"] = split(rows)
            hb = ray.get(hosts[0].join.remote(partition, "g-driver", "d1"))
            ray.get(partition.query.remote(install_stages))
            for kind in ("heartbeat", "commit"):
                ray.get(partition.query.remote(_clear_stages))
                ends = []
                for i in range(samples):
                    req = hb if kind == "heartbeat" else commit("g-dc", i)
                    t0 = time.perf_counter()
                    _, get = driver_call(req)
                    t1 = time.perf_counter()
                    assert ok(get())
                    ends.append((t0, t1, time.perf_counter()))
                inside = ray.get(partition.query.remote(_stage_rows))
                assert len(inside) == samples, (len(inside), samples)
                out[f"driver_{kind}"] = split([
                    (t1 - t0, r["entered"] - t1, r["total"], t2 - r["left"])
                    for (t0, t1, t2), r in zip(ends, inside, strict=True)
                ])
                out[f"actor_stages_{kind}"] = stage_medians(inside)
            for name, req in (("call_heartbeat", lambda i: hb),
                              ("call_commit", lambda i: commit("g-dcc", i))):
                times = []
                for i in range(samples):
                    started = time.perf_counter()
                    assert ok(cluster.call(req(i)))
                    times.append(time.perf_counter() - started)
                out[f"driver_{name}"] = {"median": median_us(times), "p99": p99_us(times)}

            # 3. a client actor
            first = hosts[0]
            hb_actor = ray.get(first.join.remote(partition, "g-actor", "a1"))
            for kind, target, req in (("noop", noop, None), ("heartbeat", partition, hb_actor),
                                      ("commit", partition, "g-ac")):
                times = ray.get(first.latencies.remote(target, kind, req, samples))
                out[f"actor_{kind}"] = {"median": median_us(times), "p99": p99_us(times)}

            # 4. throughput, one call in flight per caller
            beats = ray.get([h.join.remote(partition, "g-many", f"c{i}")
                             for i, h in enumerate(hosts)])
            for kind, target, reqs in (("noop", noop, [None] * len(hosts)),
                                       ("heartbeat", partition, beats),
                                       ("commit", partition, [f"g-mc{i}" for i in
                                                              range(len(hosts))])):
                counts = ray.get([h.spin.remote(target, kind, r, seconds)
                                  for h, r in zip(hosts, reqs, strict=True)])
                out[f"callers_{kind}_per_s"] = sum(counts) / seconds
        finally:
            cluster.shutdown()
            ray.shutdown()
    return out


def _clear_stages(_shard: object) -> None:
    import builtins

    builtins.__dict__[STAGES_KEY].per_request.clear()


def _stage_rows(_shard: object) -> list[dict[str, float]]:
    import builtins

    return list(builtins.__dict__[STAGES_KEY].per_request)


def split(rows: list[tuple[float, float, float, float]]) -> dict[str, float]:
    """Medians of (submit, trip in, in the partition, trip back) and of their sum."""
    names = ("submit", "trip_in", "partition", "trip_back")
    out = {name: median_us([r[i] for r in rows]) for i, name in enumerate(names)}
    totals = [sum(r) for r in rows]
    out["median"], out["p99"] = median_us(totals), p99_us(totals)
    return out


# ---------------------------------------------------------------------------------- running

def measure(args: argparse.Namespace) -> dict:
    figures: dict = {"turn": turn_breakdown(args.samples)}
    if not args.no_ray:
        figures["ray"] = ray_figures(args.samples, args.seconds, args.callers)
    figures["loadavg"] = list(os.getloadavg())
    return figures


def run_tree(tree: Path, args: argparse.Namespace) -> dict:
    """This script's figures over the code in ``tree``, in a subprocess of its own."""
    script = tree / "bench" / "ray_call.py"
    if tree != ROOT:
        shutil.copy(__file__, script)
    cmd = [sys.executable, str(script), "--json", "--samples", str(args.samples),
           "--seconds", str(args.seconds), "--callers", str(args.callers),
           *(["--no-ray"] if args.no_ray else [])]
    done = subprocess.run(cmd, cwd=tree, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{tree}: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def median_of(runs: list[dict]) -> dict:
    """Each number's median over the runs (same shape)."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: median_of([r[k] for r in runs]) for k in first}
    if isinstance(first, list):
        return [median_of([r[i] for r in runs]) for i in range(len(first))]
    if isinstance(first, bool):
        return first
    return statistics.median(runs)


def compare(args: argparse.Namespace) -> tuple[dict, dict | None]:
    before_runs, after_runs = [], []
    with tempfile.TemporaryDirectory(prefix="cohort-base-") as base:
        if args.against:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.against],
                                     check=True, capture_output=True).stdout
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(base, filter="data")
        for _ in range(args.rounds):
            if args.against:
                before_runs.append(run_tree(Path(base), args))
            after_runs.append(run_tree(ROOT, args))
    return median_of(after_runs), median_of(before_runs) if before_runs else None


# ---------------------------------------------------------------------------------- printing

def show(after: dict, before: dict | None, args: argparse.Namespace) -> None:
    def row(label: str, new: float, old: float | None, higher_is_better: bool = False) -> None:
        if old is None:
            print(f"  {label:48}{new:9,.0f}")
            return
        if not (new and old):
            print(f"  {label:48}{old:9,.0f} {new:9,.0f}       -")
            return
        ratio = new / old if higher_is_better else old / new
        print(f"  {label:48}{old:9,.0f} {new:9,.0f}   {ratio:5.2f}x")

    cols = f"{'before':>9} {'after':>9}   better" if before else f"{'now':>9}"
    where = f"before = {args.against}, after = the working tree; " if before else ""
    print(f"µs unless said; one request in flight; medians over {args.rounds} run(s) of "
          f"{args.samples} samples; {where}better = before/after (rates: after/before)")
    for kind in ("heartbeat", "commit"):
        what = "no record" if kind == "heartbeat" else "one record, fsync"
        print(f"\nthe turn without Ray, {kind} ({what}){'':>{max(0, 23 - len(what))}}{cols}")
        for stage in [*TURN_STAGES, "p99"]:
            row(stage, after["turn"][kind][stage], before["turn"][kind][stage] if before else None)
    if "ray" not in after:
        return
    new, old = after["ray"], before["ray"] if before else None

    def get(d: dict | None, *path: str) -> float | None:
        for key in path:
            if d is None:
                return None
            d = d.get(key)
        return d

    print(f"\nthe driver, as Cluster.call calls (packed: {get(old, 'packed')} -> "
          f"{new['packed']}){'':4}{cols}")
    for key, label in (("driver_noop", "no-op actor call"), ("driver_heartbeat", "heartbeat"),
                       ("driver_commit", "commit")):
        row(label, new[key]["median"], get(old, key, "median"))
        for part in ("submit", "trip_in", "partition", "trip_back", "p99"):
            row(f"  {part}", new[key][part], get(old, key, part))
    for kind in ("heartbeat", "commit"):
        print(f"  inside the partition actor, {kind}:")
        for stage in TURN_STAGES:
            row(f"    {stage}", new[f"actor_stages_{kind}"][stage],
                get(old, f"actor_stages_{kind}", stage))
    for key, label in (("driver_call_heartbeat", "Cluster.call(heartbeat)"),
                       ("driver_call_commit", "Cluster.call(commit)")):
        row(label, new[key]["median"], get(old, key, "median"))
        row("  p99", new[key]["p99"], get(old, key, "p99"))
    print(f"\na client actor, as Cohort's clients call{'':25}{cols}")
    for key, label in (("actor_noop", "no-op actor call"),
                       ("actor_heartbeat", "heartbeat (as ConsumerClient)"),
                       ("actor_commit", "commit (as the other clients)")):
        row(label, new[key]["median"], get(old, key, "median"))
        row("  p99", new[key]["p99"], get(old, key, "p99"))
    print(f"\nCohort's part of a call: the call minus a no-op call in the same run{'':1}{cols}")
    for base, key, label in (
        ("driver_noop", "driver_heartbeat", "driver, heartbeat"),
        ("driver_noop", "driver_commit", "driver, commit"),
        ("actor_noop", "actor_heartbeat", "client actor, heartbeat"),
        ("actor_noop", "actor_commit", "client actor, commit"),
    ):
        row(label, new[key]["median"] - new[base]["median"],
            None if old is None else old[key]["median"] - old[base]["median"])
    print(f"\n{args.callers} client actors, one call in flight each, per second{'':7}{cols}")
    for kind in ("noop", "heartbeat", "commit"):
        key = f"callers_{kind}_per_s"
        row(kind, new[key], get(old, key), higher_is_better=True)
    for kind in ("heartbeat", "commit"):
        key = f"callers_{kind}_per_s"
        share = 100 * new[key] / new["callers_noop_per_s"]
        old_share = None if old is None else 100 * old[key] / old["callers_noop_per_s"]
        row(f"{kind}, % of the no-op rate", share, old_share, higher_is_better=True)
    loads = [after["loadavg"]] + ([before["loadavg"]] if before else [])
    print("\nload average (1, 5, 15 min) at the end of a run: "
          + "; ".join(" ".join(f"{x:.2f}" for x in la) for la in loads))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--callers", type=int, default=8)
    ap.add_argument("--against", metavar="REV", help="also measure this git revision")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each tree, alternating")
    ap.add_argument("--no-ray", action="store_true", help="only the turn, without Ray")
    ap.add_argument("--json", action="store_true", help="measure here; one JSON line")
    args = ap.parse_args()
    if args.json:
        print(json.dumps(measure(args)))
        return
    after, before = compare(args)
    results = ROOT / "bench" / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "ray_call.json").write_text(json.dumps({"after": after, "before": before}))
    show(after, before, args)


if __name__ == "__main__":
    main()
