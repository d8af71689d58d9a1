"""Issue 30's wire fuzzer, long: every listener, every attack, and the issue's goals.

A local Ray and a Cohort of ``--partitions`` partitions (durable log, fsync on) with two
gateways: ``gateway`` (PLAINTEXT) and ``gateway-sasl`` (SASL_PLAINTEXT, PLAIN, the authorizer
on, the fuzzer's user a super user). Their listeners are the gateways and every partition's
listener for each; the fuzz targets are each plain listener (unauthenticated) and each SASL
listener twice (unauthenticated, and logged in). Then:

1. the idle RSS of every actor process (controller, partitions, gateways);
2. the probe starts (``actors.tools.fuzz_checks.Probe``: an ApiVersions round trip to every
   listener every 10 ms, the actors' RSS every 50 ms, from a process of its own);
3. the attacks the frames cannot make: 1,100 idle sockets to the gateway and to partition 0's
   listener (kept open to the end), 50 slow sockets to every listener (a byte every 100 ms,
   while the frames run), frames past every size bound to every listener;
4. ``--frames`` fuzzed frames (``actors.tools.wire_fuzz``: every API and version, one
   structure-aware mutation each, repeated entries up to ``--max-frame-bytes``) shared out
   among the targets, all at once;
5. then: every listener answers ApiVersions, no actor restarted (Ray's counts), a real
   confluent-kafka client commits and reads back its offset through each gateway (the idle
   sockets still open).

It prints each target's frames and answers (and the slowest answered), each listener's
longest ApiVersions round trip, each process's idle and peak RSS and its event loop's longest
stalls (``actors.runtime.loop_watch``: the CPU the loop's thread spent in one go, its own work,
how late its timer woke, the machine's scheduling included, and the longest pass of the cyclic
collector, which holds the GIL whatever thread runs it), and the goals of issue 30 with the
ratio of each figure to its goal. The stall goal is judged on the CPU the loop's thread or the
collector spent in one go: on a shared machine a round trip also waits for a CPU, which says
nothing of Cohort (the probe's figure is printed beside it).

    .venv/bin/python bench/fuzz.py [--frames 1000000] [--seed 1] [--partitions 3]
        [--workers 4] [--max-frame-bytes 1048576] [--idle 1100] [--slow 50]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ray

from actors.cluster import Cluster
from actors.tools import admin_security
from actors.tools.fuzz_checks import (
    Probe,
    actor_processes,
    census,
    commits_and_reads_back,
    heap_censuses,
    listeners,
    loop_stalls,
    rss_bytes,
)
from actors.tools.fuzz_run import (
    Tally,
    Target,
    answers_api_versions,
    fuzz_listeners,
    idle_sockets,
    oversized_frames,
    slow_sockets,
)
from actors.tools.wire_fuzz import Vocabulary
from protocol.wire.ids import topic_uuid

SASL_GATEWAY = "gateway-sasl"
FUZZ_MAX_CONNECTIONS = 1_000
USER, PASSWORD = "fuzzer", "fuzzer-secret"
GOAL_FRAMES = 1_000_000
GOAL_STALL_MS = 100.0
GOAL_RSS_RATIO = 2.0
# The fuzzer's names (it may delete the topic, join the group); the real client's are its own.
TOPIC, GROUP = "fuzz-orders", "fuzz-billing"
CHECK_TOPIC, CHECK_GROUP = "fuzz-check", "fuzz-check"
MIB = 1 << 20


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--frames", type=int, default=GOAL_FRAMES)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--workers", type=int, default=4, help="connections per target")
    ap.add_argument("--max-frame-bytes", type=int, default=MIB)
    ap.add_argument("--idle", type=int, default=1100, help="idle sockets per attacked listener")
    ap.add_argument("--slow", type=int, default=50, help="slow sockets per listener")
    args = ap.parse_args()
    os.environ.setdefault("RAY_worker_niceness", "0")  # as scripts/env.sh: not starved
    os.environ.setdefault("RAY_agent_register_timeout_ms", "120000")  # scripts/env.sh
    ray.init(address="local", namespace="cohort", include_dashboard=False, log_to_driver=False)
    data = tempfile.mkdtemp(prefix="bench-fuzz-")
    cluster = Cluster.start(num_partitions=args.partitions, storage_path=data)
    try:
        return asyncio.run(run(cluster, args))
    finally:
        cluster.shutdown()
        ray.shutdown()
        shutil.rmtree(data, ignore_errors=True)


async def run(cluster: Cluster, args: argparse.Namespace) -> int:
    admin_security.add_user(USER, PASSWORD)
    # A bound the --idle sockets exceed, so the full listener's reclaiming is attacked too.
    plain = cluster.start_gateway(port=0, max_connections=FUZZ_MAX_CONNECTIONS)
    secured = cluster.start_gateway(port=0, name=SASL_GATEWAY, sasl_mechanisms=["PLAIN"],
                                    authorizer=True, super_users=[f"User:{USER}"],
                                    max_connections=FUZZ_MAX_CONNECTIONS)
    topic_id = cluster.create_topic(TOPIC, 4)
    cluster.create_topic(CHECK_TOPIC, 1)
    vocabulary = Vocabulary(topics=(TOPIC,), topic_ids=(topic_uuid(topic_id),),
                            groups=(GROUP,))
    plain_listeners = listeners("gateway")
    sasl_listeners = listeners(SASL_GATEWAY)
    logged_in = [Target(t.name, t.address, (USER, PASSWORD)) for t in sasl_listeners]
    targets = plain_listeners + sasl_listeners + logged_in
    every = plain_listeners + sasl_listeners
    before = actor_processes()
    pids = {name: row["pid"] for name, row in before.items()}
    idle_rss = rss_bytes(pids)
    watched = [n for n in pids if n != "controller"]
    loop_stalls(watched)  # forget the start's (imports, loading)
    idle_heaps = heap_censuses(watched)
    print(f"Cohort wire fuzz: seed {args.seed}, {args.frames:,} frames, {args.partitions} "
          f"partitions, gateways {plain} (PLAINTEXT) and {secured} (SASL_PLAINTEXT/PLAIN), "
          f"{len(every)} listeners, {len(targets)} targets")

    probe = Probe(every, pids).start()
    started = time.monotonic()
    idle = []
    for target in (plain_listeners[0], plain_listeners[1]):
        idle += await idle_sockets(target.address, args.idle)
    oversized = {t.name: await oversized_frames(t.address) for t in every}
    slow = asyncio.gather(*(slow_sockets(t.address, args.slow, seconds=20.0) for t in every))
    tallies = await fuzz_listeners(targets, args.frames, args.seed, vocabulary,
                                   args.max_frame_bytes, args.workers)
    slow_closed = await slow
    took_s = time.monotonic() - started
    answering = {t.name: await answers_api_versions(t) for t in every}
    committed = {
        "gateway": commits_and_reads_back(plain, CHECK_TOPIC, CHECK_GROUP, 42),
        SASL_GATEWAY: commits_and_reads_back(secured, CHECK_TOPIC, CHECK_GROUP + "-sasl", 43, {
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": USER, "sasl.password": PASSWORD}),
    }
    result = probe.stop()
    stalls = loop_stalls(watched)
    left = census(plain)
    heaps = heap_censuses(watched)
    for writer in idle:
        writer.close()
    after = actor_processes()

    _print_tallies(tallies, took_s)
    print(f"\nattacks: {len(idle):,} idle sockets held to {plain_listeners[0].name} and "
          f"{plain_listeners[1].name}; {args.slow} slow sockets per listener "
          f"({sum(slow_closed)} closed by the listeners within 20 s); frames past the size "
          f"bounds refused: {sum(v for o in oversized.values() for v in o.values())} of "
          f"{sum(len(o) for o in oversized.values())}")
    print(f"left behind: {left}")
    print(f"\n{'listener':<28} {'answers after':>13} {'round trips':>12} {'longest ms':>11}")
    for t in every:
        print(f"{t.name:<28} {'yes' if answering[t.name] else 'NO':>13} "
              f"{result.rounds.get(t.name, 0):>12,} {result.longest_ms.get(t.name, 0):>11.1f}")
    print(f"\n{'process':<20} {'pid':>8} {'idle MiB':>9} {'peak MiB':>9} {'peak/idle':>10} "
          f"{'restarts':>9} {'loop busy ms':>13} {'loop late ms':>13} {'gc ms':>7}")
    ratios = {}
    for name in sorted(pids):
        idle_mib = idle_rss.get(name, 0) / MIB
        peak_mib = max(result.peak_rss.get(name, 0), idle_rss.get(name, 0)) / MIB
        ratios[name] = peak_mib / idle_mib if idle_mib else float("nan")
        restarts = after.get(name, {}).get("restarts", 0) - before[name]["restarts"]
        loop = stalls.get(name, {})
        print(f"{name:<20} {pids[name]:>8} {idle_mib:>9.1f} {peak_mib:>9.1f} "
              f"{ratios[name]:>10.2f} {restarts:>9} {loop.get('busy_ms', float('nan')):>13.1f} "
              f"{loop.get('late_ms', float('nan')):>13.1f} "
              f"{loop.get('gc_ms', float('nan')):>7.1f}")
    print(f"\n{'process':<20} {'tracked objects, idle':>22} {'after':>11}  commonest types after")
    for name, heap in sorted(heaps.items()):
        types = ", ".join(f"{t} {n:,}" for t, n in heap["types"])
        print(f"{name:<20} {idle_heaps[name]['objects']:>22,} {heap['objects']:>11,}  {types}")
    print("\nwhat each loop ran in its longest stall (samples every ~5 ms of its work, "
          "innermost frame first):")
    for name, loop in sorted(stalls.items()):
        for samples, stack in loop.get("stacks", []):
            print(f"  {name:<18} {samples:>4}  {stack}")
    print(f"\n{'process':<20} {'garbage in cycles':>18}  commonest types")
    for name, heap in sorted(heaps.items()):
        types = ", ".join(f"{t} {n:,}" for t, n in heap["garbage_types"])
        print(f"{name:<20} {heap['garbage']:>18,}  {types}")
    restarted = {n: after.get(n, {}).get("restarts", 0) - before[n]["restarts"] for n in pids}
    stall = max(max(s["busy_ms"], s["gc_ms"]) for s in stalls.values())
    felt = max(result.longest_ms.values(), default=float("nan"))
    goals = [
        ("fuzzed frames sent", f"{sum(t.sent for t in tallies.values()):,}",
         f"{GOAL_FRAMES:,}", sum(t.sent for t in tallies.values()) / GOAL_FRAMES),
        ("listeners answering afterwards", f"{sum(answering.values())}/{len(answering)}",
         "all", sum(answering.values()) / len(answering)),
        ("actors restarted", f"{sum(1 for n in restarted.values() if n)}", "0", None),
        ("peak RSS / idle RSS, worst", f"{max(ratios.values()):.2f}", f"<= {GOAL_RSS_RATIO}",
         max(ratios.values()) / GOAL_RSS_RATIO),
        ("longest event-loop stall (ms)", f"{stall:.1f}", f"<= {GOAL_STALL_MS:.0f}",
         stall / GOAL_STALL_MS),
        ("  as a client felt it (probe, ms)", f"{felt:.1f}", f"<= {GOAL_STALL_MS:.0f}",
         felt / GOAL_STALL_MS),
        ("real client commits and reads back",
         ", ".join(f"{k}: {v}" for k, v in committed.items()), "42, 43", None),
    ]
    print(f"\n{'goal (issue 30)':<36} {'got':>24} {'goal':>10} {'got/goal':>9}")
    for name, got, goal, ratio in goals:
        print(f"{name:<36} {got:>24} {goal:>10} {'' if ratio is None else f'{ratio:.2f}':>9}")
    met = (all(answering.values()) and not any(restarted.values())
           and max(ratios.values()) <= GOAL_RSS_RATIO and stall <= GOAL_STALL_MS
           and committed == {"gateway": 42, SASL_GATEWAY: 43})
    print(f"\nevery goal met but the frame count: {'yes' if met else 'NO'}")
    return 0


def _print_tallies(tallies: dict[str, Tally], took_s: float) -> None:
    total = Tally()
    print(f"\n{'target':<48} {'sent':>9} {'replied':>9} {'closed':>8} {'silent':>7} "
          f"{'refused':>8}")
    for label, t in tallies.items():
        total.add(t)
        print(f"{label:<48} {t.sent:>9,} {t.replied:>9,} {t.closed:>8,} {t.silent:>7,} "
              f"{t.refused:>8,}")
    print(f"{'all':<48} {total.sent:>9,} {total.replied:>9,} {total.closed:>8,} "
          f"{total.silent:>7,} {total.refused:>8,}   in {took_s:.0f} s")
    print("slowest answers (s, API key, version, mutation, bytes): " + "; ".join(
        f"{s:.2f} {key} v{v} {m} {n:,}" for s, key, v, m, n in total.slowest_first()))
    mutations = sorted({m for m, _ in total.by_mutation})
    print("by mutation (replied / closed / silent): " + "; ".join(
        f"{m} {total.by_mutation[(m, 'replied')]:,}/{total.by_mutation[(m, 'closed')]:,}/"
        f"{total.by_mutation[(m, 'silent')]:,}" for m in mutations))


if __name__ == "__main__":
    sys.exit(main())
