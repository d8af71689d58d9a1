"""A group of 10,000 members, hosted by a few consumer actors, on 100,000 partitions.

Run: ``python bench/scale.py [--members N] [--partitions P] [--hosts H]``. Starts Cohort on a
local Ray (one ``__consumer_offsets`` partition, fsync on), creates one topic of P
partitions, and spawns H ``ConsumerClient`` actors hosting N/H members each; every actor
sends its members' heartbeats to the coordinator as one batched call. It prints when the
last member joined (all N are in the group) and when the group became stable (every member
at the group epoch, every partition owned by its target), and the time between the two,
which is what the issue asks for; also the time from the first spawn.

Kafka's defaults apply (5 s heartbeat interval, 45 s session timeout), so convergence is
counted in heartbeat rounds: members ack revocations at once, but a member waiting for a
partition to be released learns of it at its next heartbeat.

It also prints the partition actor's memory: its resident set (RSS) once the group is
stable and its peak (``VmHWM``), read from ``/proc`` of the actor's process (the bench runs
a local Ray, so the actor is on this machine), next to the RSS it had before the group
existed, so that the group's own share shows. ``--profile S`` records the partition actor
with py-spy (if installed) for S seconds from the first spawn, into
``bench/results/scale-<members>.txt`` (py-spy's collapsed stacks: one line per stack with
its sample count).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray

from actors.cluster import Cluster
from protocol.config import CoordinatorConfig

POLL_S = 0.5
PROGRESS_S = 15.0
RESULTS = Path(__file__).resolve().parent / "results"


def memory_mib(pid: int) -> dict[str, float]:
    """Resident set and its peak of a local process, in MiB (``/proc/<pid>/status``)."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024
    return found


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a local process so far (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def report_progress(elapsed_s: float, summary: dict, hosts: list, pid: int) -> None:
    """One line while waiting: members in, the epoch, the hosts' calls and failed calls
    (a failed call is a batch the host gave up on: a timeout re-sends work the partition
    may still be doing), and the partition actor's CPU so far."""
    stats = ray.get([h.stats.remote() for h in hosts])
    calls = sum(st["calls"] for st in stats)
    failed = sum(st["failed_calls"] for st in stats)
    print(f"  {elapsed_s:6.0f} s: {summary.get('members', 0):,} members, epoch "
          f"{summary.get('group_epoch')}, {summary.get('state')}; host calls {calls:,} "
          f"({failed:,} failed); partition CPU {cpu_s(pid):.0f} s", flush=True)


def start_profile(pid: int, seconds: float, members: int):
    """py-spy on the partition actor (bench-only tool, not a project dependency)."""
    import shutil
    import subprocess

    exe = shutil.which("py-spy")
    if exe is None:
        print("py-spy not installed: --profile ignored")
        return None
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"scale-{members}.txt"
    print(f"profiling pid {pid} for {seconds:.0f} s into {out}")
    return subprocess.Popen([exe, "record", "-p", str(pid), "-d", str(int(seconds)),
                             "-o", str(out), "--format", "raw", "--nonblocking"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, default=10_000)
    ap.add_argument("--partitions", type=int, default=100_000)
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--profile", type=float, default=0.0,
                    help="py-spy the partition actor for this many seconds")
    args = ap.parse_args()

    # A Ray of its own: "auto" would adopt whatever Ray (and Cohort) a ``ray start`` left
    # running on this shared machine.
    ray.init(namespace="cohort", include_dashboard=False, log_to_driver=False)
    with tempfile.TemporaryDirectory(prefix="cohort-scale-") as data:
        cluster = Cluster.start(num_partitions=1, storage_path=data, config=CoordinatorConfig())
        cluster.create_topic("scale", args.partitions)
        group = "scale-g"
        partition = cluster.coordinator(group)
        pid = ray.get(partition.info.remote())["pid"]
        idle = memory_mib(pid)
        profiler = start_profile(pid, args.profile, args.members) if args.profile else None
        started = time.monotonic()
        per_host = args.members // args.hosts
        hosts = [
            cluster.spawn_consumers(group, per_host + (1 if i < args.members % args.hosts else 0),
                                    topics=["scale"], stream=False)
            for i in range(args.hosts)
        ]
        last_join = stable = None
        summary: dict = {}
        reported = started
        while time.monotonic() - started < args.timeout:
            summary = ray.get(partition.group_summary.remote(group)) or {}
            now = time.monotonic()
            if now - reported >= PROGRESS_S:
                reported = now
                report_progress(now - started, summary, hosts, pid)
            if last_join is None and summary.get("members") == args.members:
                last_join = now
                print(f"last join after {now - started:6.1f} s (epoch {summary['group_epoch']})")
            if last_join is not None and summary.get("state") == "stable":
                stable = now
                break
            time.sleep(POLL_S)
        load = ray.get(partition.info.remote())
        memory = memory_mib(pid)
        partition_cpu = cpu_s(pid)
        client_cpu = [cpu_s(st["pid"]) for st in ray.get([h.stats.remote() for h in hosts])]
        if profiler is not None:
            profiler.wait()
        owned = sum(len(a) for a in ray.get([h.assignment.remote() for h in hosts]))
        cluster.shutdown()
        ray.shutdown()

    print(f"{args.members:,} members in {args.hosts} actors, {args.partitions:,} partitions")
    if stable is None:
        print(f"NOT stable after {args.timeout:.0f} s: {summary}")
        sys.exit(1)
    print(f"  last join -> stable group        {stable - last_join:6.1f} s")
    print(f"  first spawn -> stable group      {stable - started:6.1f} s")
    print(f"  group epoch {summary['group_epoch']}, partitions owned by clients {owned:,}, "
          f"coordinator pid {load['pid']}")
    print(f"  CPU seconds from start: partition actor {partition_cpu:.1f}, client actors "
          f"{' + '.join(f'{c:.1f}' for c in client_cpu)}")
    print(f"  partition actor RSS {memory['VmRSS']:,.0f} MiB when stable "
          f"(peak {memory['VmHWM']:,.0f} MiB; {idle['VmRSS']:,.0f} MiB before the group), "
          f"{(memory['VmRSS'] - idle['VmRSS']) * 1024 / args.members:.1f} KiB per member")


if __name__ == "__main__":
    main()
