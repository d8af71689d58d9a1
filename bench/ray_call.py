"""Where one request's time goes on the Ray path, call by call (issue 23, "the Ray path too").

Run: ``python bench/ray_call.py [--samples K] [--seconds S] [--callers N] [--against REV]``.
Every figure is one request in flight at a time unless it says callers:

1. turn, no Ray: ``PartitionTurns`` over the local log (fsync on), on one asyncio loop, as the
   partition actor runs it: a steady heartbeat (no record: the turn only checks its fence) and
   an offset commit (one record: append + fsync), each split into its stages by timing the
   functions it passes through (submit → the loop takes the event, tick, shard, encode, the
   thread hop, the fence, write, fsync, release → the caller has its reply);
2. Ray, from the driver: ``ray.get`` of a no-op actor call (split into submission, the trip in
   and the trip back, from the no-op's own clock), ``OffsetsPartition.handle`` called directly,
   and ``Cluster.call`` (routing and retries on top), for a heartbeat and a commit;
3. Ray, from a client actor (as ``ConsumerClient`` calls): the same no-op, heartbeat and commit,
   awaited one at a time;
4. throughput: ``--callers`` client actors each with one heartbeat in flight for ``--seconds``
   (``bench/heartbeat.py``'s one-per-call figure), next to the same callers' no-op calls.

``--against REV`` runs this same script over ``git archive REV`` (in a subprocess, with its own
local Ray) before measuring the working tree, and prints both with the ratios: before and after
in one run, on one machine state. Times are medians and p99 in microseconds (µs).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
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
from collections.abc import Callable, Iterator
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


def summary(samples_s: list[float]) -> dict[str, float]:
    """Median and p99 in µs."""
    xs = sorted(samples_s)
    return {"median_us": statistics.median(xs) * 1e6,
            "p99_us": xs[min(len(xs) - 1, int(len(xs) * 0.99))] * 1e6}


# ------------------------------------------------------------------------ 1. the turn, no Ray

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

    def finish(self, started: float, ended: float) -> None:
        row = dict(self.current)
        row["total"] = ended - started
        if "taken" in self.marks:
            row["wake"] = self.marks["taken"] - started
        if "release" in self.marks:
            row["release"] = ended - self.marks["release"]
        self.per_request.append(row)
        self.current = defaultdict(float)
        self.marks = {}


@contextlib.contextmanager
def patched(targets: list[tuple[object, str, Callable[[Callable], Callable]]]) -> Iterator[None]:
    saved = []
    for owner, attr, wrap in targets:
        if not hasattr(owner, attr):
            continue  # a revision without that function: the stage reads 0
        saved.append((owner, attr, owner.__dict__[attr]))
        setattr(owner, attr, wrap(getattr(owner, attr)))
    try:
        yield
    finally:
        for owner, attr, original in reversed(saved):
            setattr(owner, attr, original)


TURN_STAGES = ["wake", "tick", "shard", "append", "storage_append", "fence", "write", "fsync",
               "release", "total"]


def turn_breakdown(samples: int) -> dict[str, dict]:
    """Median stage times of a steady heartbeat and of a commit through ``PartitionTurns``."""
    from actors.runtime import fencing, log, turns
    from actors.runtime.controller import ControllerImage
    from actors.runtime.fileops import FileOps
    from protocol.shard import GroupCoordinatorShard

    image = ControllerImage(1, MetadataImage([TopicMetadata("t-id", TOPIC, 4)]), {})

    async def fetch_image() -> ControllerImage:
        return image

    async def scenario(directory: str) -> dict[str, dict]:
        stages = Stages()
        fence_fns = [(fencing.Fence, name, lambda f: stages.timed("fence", f))
                     for name in ("check", "check_cheap") if hasattr(fencing.Fence, name)]
        targets = [
            (turns.PartitionTurns, "_take_events", lambda f: stages.mark("taken", f)),
            (turns.PartitionTurns, "_release", lambda f: stages.mark("release", f)),
            (turns.PartitionTurns, "_append", lambda f: stages.timed("append", f)),
            (GroupCoordinatorShard, "tick", lambda f: stages.timed("tick", f)),
            (GroupCoordinatorShard, "handle_batch", lambda f: stages.timed("shard", f)),
            (log.PartitionLog, "append", lambda f: stages.timed("storage_append", f)),
            (FileOps, "write", lambda f: stages.timed("write", f)),
            (FileOps, "fsync", lambda f: stages.timed("fsync", f)),
            *fence_fns,
        ]
        storage = log.PartitionLog(directory)
        partition = turns.PartitionTurns("offsets-0", storage, CONFIG, fetch_image)
        task = asyncio.get_running_loop().create_task(partition.run())
        while partition.state != "active":
            await asyncio.sleep(0.01)
        [joined] = await partition.handle_batch([join("g-hb", "m1")])
        [joined] = await partition.handle_batch([steady(joined, "g-hb", "m1")])
        out = {}
        with patched(targets):
            for kind in ("heartbeat", "commit"):
                stages.per_request = []
                for i in range(samples):
                    req = steady(joined, "g-hb", "m1") if kind == "heartbeat" else commit("g-c", i)
                    stages.current.clear()
                    stages.marks.clear()
                    started = time.perf_counter()
                    [reply] = await partition.handle_batch([req])
                    stages.finish(started, time.perf_counter())
                    assert ok(reply), reply
                out[kind] = {
                    name: statistics.median(r.get(name, 0.0) for r in stages.per_request) * 1e6
                    for name in TURN_STAGES
                }
                out[kind]["p99"] = summary([r["total"] for r in stages.per_request])["p99_us"]
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        storage.close()
        return out

    with tempfile.TemporaryDirectory(prefix="cohort-raycall-", dir=ROOT) as directory:
        return asyncio.run(scenario(directory))


# ------------------------------------------------------------------------------ 2-4. over Ray

def ray_figures(samples: int, seconds: float, callers: int) -> dict:
    import ray

    from actors.cluster import Cluster

    @ray.remote(num_cpus=0)
    class Noop:
        async def ping(self, x: object) -> float:
            return time.perf_counter()  # CLOCK_MONOTONIC: one clock for every process here

    @ray.remote(num_cpus=0)
    class Caller:
        """A client actor: one call in flight, as ``ConsumerClient`` keeps one."""

        async def latencies(self, target, method: str, reqs: list, n: int) -> list[float]:
            out = []
            for i in range(n):
                started = time.perf_counter()
                reply = await getattr(target, method).remote(reqs[i % len(reqs)])
                out.append(time.perf_counter() - started)
                assert reply is None or isinstance(reply, float) or ok(reply), reply
            return out

        async def commits(self, target, group: str, n: int) -> list[float]:
            out = []
            for i in range(n):
                started = time.perf_counter()
                reply = await target.handle.remote(commit(group, i))
                out.append(time.perf_counter() - started)
                assert ok(reply), reply
            return out

        async def join(self, target, group: str, member: str) -> object:
            joined = await target.handle.remote(join(group, member))
            for _ in range(20):
                joined = await target.handle.remote(steady(joined, group, member))
            return steady(joined, group, member)

        async def spin(self, target, method: str, req: object, seconds_: float) -> int:
            n, deadline = 0, time.monotonic() + seconds_
            while time.monotonic() < deadline:
                reply = await getattr(target, method).remote(req)
                assert reply is None or isinstance(reply, float) or ok(reply), reply
                n += 1
            return n

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="cohort-raycall-", dir=ROOT) as data:
        cluster = Cluster.start(num_partitions=1, storage_path=data, config=CONFIG)
        try:
            cluster.create_topic(TOPIC, 64)
            partition = cluster.partition(0)
            noop = Noop.remote()
            hosts = [Caller.remote() for _ in range(max(1, callers))]
            ray.get([h.latencies.remote(noop, "ping", [None], 50) for h in hosts])  # warm

            # 2. the driver
            submit, trip_in, trip_back, whole = [], [], [], []
            for _ in range(samples):
                t0 = time.perf_counter()
                ref = noop.ping.remote(None)
                t1 = time.perf_counter()
                at = ray.get(ref)
                t2 = time.perf_counter()
                submit.append(t1 - t0)
                trip_in.append(at - t1)
                trip_back.append(t2 - at)
                whole.append(t2 - t0)
            out["driver_noop"] = summary(whole)
            out["driver_noop_split"] = {"submit": summary(submit)["median_us"],
                                        "trip_in": summary(trip_in)["median_us"],
                                        "trip_back": summary(trip_back)["median_us"]}
            hb = ray.get(hosts[0].join.remote(partition, "g-driver", "d1"))
            for name, call in (
                ("driver_handle_heartbeat", lambda i: ray.get(partition.handle.remote(hb))),
                ("driver_call_heartbeat", lambda i: cluster.call(hb)),
                ("driver_handle_commit",
                 lambda i: ray.get(partition.handle.remote(commit("g-dc", i)))),
                ("driver_call_commit", lambda i: cluster.call(commit("g-dc2", i))),
            ):
                times = []
                for i in range(samples):
                    started = time.perf_counter()
                    reply = call(i)
                    times.append(time.perf_counter() - started)
                    assert ok(reply), reply
                out[name] = summary(times)

            # 3. a client actor
            first = hosts[0]
            hb_actor = ray.get(first.join.remote(partition, "g-actor", "a1"))
            out["actor_noop"] = summary(ray.get(first.latencies.remote(noop, "ping", [None],
                                                                       samples)))
            out["actor_heartbeat"] = summary(ray.get(
                first.latencies.remote(partition, "handle", [hb_actor], samples)))
            out["actor_commit"] = summary(ray.get(first.commits.remote(partition, "g-ac",
                                                                       samples)))

            # 4. throughput, one call in flight per caller
            beats = ray.get([h.join.remote(partition, "g-many", f"c{i}")
                             for i, h in enumerate(hosts)])
            counts = ray.get([h.spin.remote(noop, "ping", None, seconds) for h in hosts])
            out["callers_noop_per_s"] = sum(counts) / seconds
            counts = ray.get([h.spin.remote(partition, "handle", b, seconds)
                              for h, b in zip(hosts, beats, strict=True)])
            out["callers_heartbeat_per_s"] = sum(counts) / seconds
            counts = ray.get([h.spin.remote(partition, "handle", commit(f"g-mc{i}", 1), seconds)
                              for i, h in enumerate(hosts)])
            out["callers_commit_per_s"] = sum(counts) / seconds
        finally:
            cluster.shutdown()
            ray.shutdown()
    return out


# ---------------------------------------------------------------------------------- printing

LATENCIES = [
    ("driver_noop", "driver: ray.get(no-op actor call)"),
    ("driver_handle_heartbeat", "driver: ray.get(partition.handle(heartbeat))"),
    ("driver_call_heartbeat", "driver: cluster.call(heartbeat)"),
    ("driver_handle_commit", "driver: ray.get(partition.handle(commit))"),
    ("driver_call_commit", "driver: cluster.call(commit)"),
    ("actor_noop", "client actor: await no-op actor call"),
    ("actor_heartbeat", "client actor: await partition.handle(heartbeat)"),
    ("actor_commit", "client actor: await partition.handle(commit)"),
]
RATES = [("callers_noop_per_s", "no-op calls"), ("callers_heartbeat_per_s", "heartbeats"),
         ("callers_commit_per_s", "commits")]


def measure(args: argparse.Namespace) -> dict:
    figures = {"turn": turn_breakdown(args.samples)}
    if not args.no_ray:
        figures["ray"] = ray_figures(args.samples, args.seconds, args.callers)
    figures["loadavg"] = os.getloadavg()
    return figures


def against(rev: str, args: argparse.Namespace) -> dict:
    """This script's figures over revision ``rev`` of the code, measured in a subprocess."""
    with tempfile.TemporaryDirectory(prefix="cohort-base-") as tree:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev], check=True,
                                 capture_output=True).stdout
        with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
            tar.extractall(tree, filter="data")
        shutil.copy(__file__, Path(tree) / "bench" / "ray_call.py")
        cmd = [sys.executable, str(Path(tree) / "bench" / "ray_call.py"), "--json",
               "--samples", str(args.samples), "--seconds", str(args.seconds),
               "--callers", str(args.callers), *(["--no-ray"] if args.no_ray else [])]
        done = subprocess.run(cmd, cwd=tree, check=True, capture_output=True, text=True)
        return json.loads(done.stdout.strip().splitlines()[-1])


def show(after: dict, before: dict | None, rev: str | None) -> None:
    def cols(new: float, old: float | None, fmt: str = "{:9,.0f}") -> str:
        if old is None:
            return fmt.format(new)
        ratio = old / new if new else float("nan")
        return f"{fmt.format(old)} {fmt.format(new)}   {ratio:5.2f}x"

    head = f"{'before':>9} {'after':>9}   faster" if before else f"{'now':>9}"
    where = f"; before = {rev}" if rev else ""
    print(f"one request in flight; µs, medians (p99 where said){where}")
    for kind in ("heartbeat", "commit"):
        print(f"\nturn without Ray, {kind} ({'no record' if kind == 'heartbeat' else '1 record'})"
              f"{'':14}{head}")
        new, old = after["turn"][kind], before["turn"][kind] if before else None
        for stage in [*TURN_STAGES, "p99"]:
            print(f"  {stage:42}{cols(new[stage], old[stage] if old else None)}")
    if "ray" in after:
        new, old = after["ray"], before.get("ray") if before else None
        print(f"\nover Ray{'':49}{head}")
        for key, label in LATENCIES:
            for stat in ("median_us", "p99_us"):
                tag = label if stat == "median_us" else "  p99"
                print(f"  {tag:55}"
                      f"{cols(new[key][stat], old[key][stat] if old else None)}")
        split = new["driver_noop_split"]
        print(f"  driver no-op split: submit {split['submit']:.0f}, trip in "
              f"{split['trip_in']:.0f}, trip back {split['trip_back']:.0f}")
        print(f"\n{args_callers(new)} callers, one call in flight each, per second{'':9}{head}")
        for key, label in RATES:
            # a rate: higher is better, so the ratio is after / before
            if old:
                print(f"  {label:55}{old[key]:9,.0f} {new[key]:9,.0f}   "
                      f"{new[key] / old[key]:5.2f}x")
            else:
                print(f"  {label:55}{new[key]:9,.0f}")
    load = after["loadavg"]
    print(f"\nload average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


def args_callers(ray_figures_: dict) -> str:
    return str(ray_figures_.get("callers", "N"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--samples", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--callers", type=int, default=8)
    ap.add_argument("--against", metavar="REV", help="also measure this git revision, first")
    ap.add_argument("--no-ray", action="store_true", help="only the turn, without Ray")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    args = ap.parse_args()
    before = against(args.against, args) if args.against else None
    after = measure(args)
    if "ray" in after:
        after["ray"]["callers"] = args.callers
    if args.json:
        print(json.dumps(after))
    else:
        show(after, before, args.against)


if __name__ == "__main__":
    main()
