"""Streams groups (KIP-1071) with a real Kafka Streams 4.4 app: Apache Kafka 4.4 itself against
Cohort in front of Kafka 4.4, in one run (``--systems kafka,cohort``).

For each system, the word count of ``actors/tools/streams_app.py`` (a repartition, a
changelogged store) under a fresh application id, ``--processes`` JVMs of one KafkaStreams
instance each, the same group configs set on both sides by IncrementalAlterConfigs
(``streams.initial.rebalance.delay.ms`` = ``--initial-delay-ms``, Kafka's default 3,000 unless
told; ``streams.num.standby.replicas`` = ``--standbys``):

1. time to a stable group: from the first instance's ``KafkaStreams.start()`` (its first
   REBALANCING, as the instance reports it) to every instance RUNNING with every task active on
   exactly one instance (and its standbys placed), as the instances report them;
2. a rolling restart: each process in turn closed (its member leaves the group) and started
   again on the same state directory, the next once the group is settled again; the
   task-seconds during which a task had no active owner (from the instances' ``tasks`` and
   ``state`` lines, 50 ms resolution), and the restart's wall time.

``--trace DIR`` keeps, per system, every instance's events (``SYSTEM-events.jsonl``) and each
JVM's client log with the streams heartbeat manager and membership at DEBUG
(``SYSTEM-jvmN.log``: every heartbeat reply's statuses, tasks and epoch), to see where the time
went.

Before 2, ``--records`` records are produced and counted, so the restarted instances have state
to restore. It prints each figure and the ratio Cohort/Kafka (issue 31's goal: ≤ 1.0x). The
machine is shared: compare the ratios of one run, not absolute times across runs.

    flock /tmp/cohort-heavy.lock .venv/bin/python bench/streams.py [--systems kafka,cohort]
        [--processes 3] [--partitions 4] [--records 1000] [--standbys 1]
        [--initial-delay-ms 3000] [--trace DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from actors.tools import streams_app as sa
from actors.tools.reference_kafka import ReferenceKafka

SETTLE_S = 300.0


@contextlib.contextmanager
def cohort_in_front(upstream: str) -> Iterator[str]:
    """A local Ray and a Cohort in front of ``upstream``: its gateway's address."""
    import ray

    from actors.cluster import Cluster

    ray.init(address="local", namespace="cohort", include_dashboard=False,
             log_to_driver=False)
    with tempfile.TemporaryDirectory() as data:
        cluster = Cluster.start(num_partitions=4, storage_path=data, upstream=upstream,
                                upstream_config={"metadata.poll.interval.ms": 500})
        try:
            yield cluster.start_gateway(port=0)
        finally:
            cluster.stop_gateway()
            cluster.shutdown()
            ray.shutdown()


def _settled_ms(processes: list[sa.StreamsProcess], tasks: set[str], standbys: int) -> int:
    """Wait until the group is settled; the time it became so: the latest event that the
    settled picture rests on (each live instance's last state and tasks lines)."""
    processes[0].wait(lambda _: sa.settled(processes, tasks, standbys), SETTLE_S)
    return max(e["ms"] for p in processes if p.killed_ms is None
               for e in p.events() if e["event"] in ("state", "tasks"))


def _keep_trace(trace: Path, system: str, processes: list[sa.StreamsProcess]) -> None:
    """Write every instance's events and copy each JVM's log under ``trace``."""
    trace.mkdir(parents=True, exist_ok=True)
    events = sorted((e for p in processes for e in p.events()), key=lambda e: e.get("ms", 0))
    with open(trace / f"{system}-events.jsonl", "w") as out:
        for e in events:
            out.write(json.dumps(e) + "\n")
    for n, p in enumerate(processes):
        if p.log_path is not None and p.log_path.exists():
            shutil.copy(p.log_path, trace / f"{system}-jvm{n}.log")


def run(bootstrap: str, args: argparse.Namespace, state_root: Path,
        system: str = "") -> dict[str, float]:
    app = f"bench-{uuid.uuid4().hex[:8]}"
    source, sink = f"{app}-words", f"{app}-counts"
    sa.create_topic(bootstrap, source, args.partitions)
    sa.create_topic(bootstrap, sink, args.partitions)
    sa.set_group_configs(bootstrap, app, {
        "streams.initial.rebalance.delay.ms": args.initial_delay_ms,
        "streams.num.standby.replicas": args.standbys})
    tasks = sa.tasks_of(args.partitions)
    state_dir = state_root / app

    def process(i: int) -> sa.StreamsProcess:
        return sa.StreamsProcess(bootstrap, app, source, sink, state_dir, first=i,
                                 loggers=sa.HEARTBEAT_LOGGERS if args.trace else None).start()

    processes = [process(i) for i in range(args.processes)]
    everyone = list(processes)
    try:
        stable_ms = _settled_ms(processes, tasks, args.standbys)
        first_start_ms = min(e["ms"] for p in processes for e in p.events("state")
                             if e["state"] == "REBALANCING")
        expected = sa.produce_words(bootstrap, source, args.records)
        sa.wait_for_counts(bootstrap, sink, args.partitions, expected)

        restart_began_ms = int(time.time() * 1000)
        for i in range(args.processes):
            processes[i].stop()
            processes[i] = process(i)
            everyone.append(processes[i])
            _settled_ms(processes, tasks, args.standbys)
        restart_ended_ms = _settled_ms(processes, tasks, args.standbys)
        unowned = sa.unowned_task_seconds(sa.ownership_timeline(everyone), tasks,
                                          restart_began_ms, restart_ended_ms)
    finally:
        for p in processes:
            p.stop()
        if args.trace:
            _keep_trace(Path(args.trace), system, everyone)
    return {"stable_s": (stable_ms - first_start_ms) / 1000.0,
            "unowned_task_s": unowned,
            "restart_s": (restart_ended_ms - restart_began_ms) / 1000.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", default="kafka,cohort")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--records", type=int, default=1000)
    parser.add_argument("--standbys", type=int, default=1)
    parser.add_argument("--initial-delay-ms", type=int, default=3000)
    parser.add_argument("--trace", metavar="DIR", default=None,
                        help="keep each instance's events and each JVM's heartbeat log here")
    args = parser.parse_args()
    systems = args.systems.split(",")
    results: dict[str, dict[str, float]] = {}
    with ReferenceKafka() as kafka, tempfile.TemporaryDirectory() as state:
        print(f"Apache Kafka 4.4 up in {kafka.start_seconds:.1f} s at {kafka.bootstrap}",
              flush=True)
        for system in systems:
            if system == "kafka":
                results[system] = run(kafka.bootstrap, args, Path(state), system)
            elif system == "cohort":
                with cohort_in_front(kafka.bootstrap) as gateway:
                    results[system] = run(gateway, args, Path(state), system)
            else:
                raise SystemExit(f"unknown system {system!r}: kafka or cohort")
            print(f"{system:>7}: stable group {results[system]['stable_s']:.2f} s, rolling "
                  f"restart {results[system]['restart_s']:.2f} s with "
                  f"{results[system]['unowned_task_s']:.2f} task-s without an active owner",
                  flush=True)
    if "kafka" in results and "cohort" in results:
        for key, label in (("stable_s", "time to a stable group"),
                           ("unowned_task_s", "task-seconds unowned in a rolling restart"),
                           ("restart_s", "rolling restart's wall time")):
            k, c = results["kafka"][key], results["cohort"][key]
            ratio = f"{c / k:.2f}x" if k > 0 else "n/a (Kafka 0)"
            print(f"{label}: Cohort/Kafka = {ratio} (goal ≤ 1.0x)")


if __name__ == "__main__":
    main()
