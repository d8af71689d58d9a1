"""Cohort in front of an upstream against the upstream itself, the same client on both sides.

For each upstream (``--upstreams tansu,kafka``: Tansu 0.6 and Apache Kafka 4.4.0, the
reference broker) a fresh local Ray and a Cohort in front of it, then:

Every figure of 1-3 is measured ``--repeats`` times, direct and through Cohort alternately, and
its median printed.

1. records/s produced (``--records`` of 100 bytes, one confluent-kafka producer, linger 5 ms,
   acks=all) directly to the upstream and through Cohort's gateway, into topics of
   ``--partitions`` partitions;
2. records/s fetched: one consumer ``assign()``ed every partition from the earliest offset
   reads the same records directly and through Cohort (``fetch.queue.backoff.ms`` 10 ms: with
   librdkafka's 1 s default the figure is mostly that backoff, see ``fetch_rate``);
3. one produce's round trip (a record, then ``flush``), median and p99 over ``--round-trips``,
   directly and through Cohort: the difference is what the relay adds;
4. (``--stable``) ``--members`` KIP-848 consumers (confluent-kafka, ``bench/groups.py``'s
   child processes, a thread each) from subscribe to a balanced group, every member owning
   its own partition of a topic of as many: through Cohort in front of the upstream, and on
   Apache Kafka 4.4 itself (its own coordinator: the peer); with each, what the processes
   did with the two cores meanwhile (``/proc/<pid>/task/*/schedstat``: seconds run, and
   seconds runnable but waiting for a CPU, summed over each process's threads): where a
   side's time goes when the clients share the machine;
5. (``--two-gateways``) records/s produced by two producers at once, both through one gateway
   and one through each of two gateways (``gateway`` and ``gateway-2``): how the relay scales
   past one gateway process.

It prints each figure and the ratio Cohort/upstream, the goals of issue 32 beside them. The
machine is shared: compare the ratios of one run, not absolute rates across runs.

    .venv/bin/python bench/upstream.py [--upstreams tansu,kafka] [--records 200000]
        [--partitions 6] [--round-trips 500] [--stable] [--members 1000] [--two-gateways]
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from actors.tools.stable_group import Owners
from bench.groups import RdkafkaHosts

QUIET = {"log_level": 0}
TIMEOUT_S = 300.0
CURVE_STEP_S = 2.0
STUCK_S = 60.0  # a curve unchanged this long ends the wait: NaN, with the reason printed
VALUE = b"x" * 100


@contextlib.contextmanager
def upstream_broker(kind: str) -> Iterator[Any]:
    """The upstream, running (``bootstrap``, ``pid``)."""
    if kind == "kafka":
        from actors.tools.reference_kafka import ReferenceKafka

        with ReferenceKafka() as kafka:
            yield kafka
        return
    from actors.tools.tansu import Tansu

    with Tansu() as tansu:
        yield tansu


@contextlib.contextmanager
def cohort_in_front(upstream: str, partitions: int = 4) -> Iterator[object]:
    import os

    import ray

    from actors.cluster import Cluster

    # As scripts/env.sh: Ray's default nice 15 would starve Cohort's actors behind the
    # benchmark's own clients, while the upstream it is compared with runs at the bench's nice.
    os.environ.setdefault("RAY_worker_niceness", "0")
    os.environ.setdefault("RAY_agent_register_timeout_ms", "120000")  # scripts/env.sh
    ray.init(address="local", namespace="cohort", include_dashboard=False,
             log_to_driver=False)
    with tempfile.TemporaryDirectory() as data:
        cluster = Cluster.start(num_partitions=partitions, storage_path=data,
                                upstream=upstream)
        try:
            cluster.bootstrap = cluster.start_gateway(port=0)
            yield cluster
        finally:
            cluster.stop_gateway()
            cluster.shutdown()
            ray.shutdown()


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    admin.create_topics([NewTopic(name, partitions)])[name].result(60)
    deadline = time.monotonic() + 60
    while len(admin.list_topics(name, timeout=10).topics[name].partitions) < partitions:
        assert time.monotonic() < deadline, f"{name} never showed its partitions"
        time.sleep(0.1)


def produce_rate(bootstrap: str, topic: str, records: int, partitions: int) -> float:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all", **QUIET})
    failed: list[str] = []
    t0 = time.perf_counter()
    for n in range(records):
        while True:
            try:
                p.produce(topic, VALUE, partition=n % partitions,
                          on_delivery=lambda err, _m: err and failed.append(str(err)))
                break
            except BufferError:
                p.poll(0.005)
    if p.flush(TIMEOUT_S) or failed:
        raise RuntimeError(f"records not produced: {failed[:1]}")
    return records / (time.perf_counter() - t0)


def fetch_rate(bootstrap: str, topic: str, records: int, partitions: int) -> float:
    # librdkafka stops fetching a partition whose local queue holds queued.min.messages
    # (100,000) and waits fetch.queue.backoff.ms (1 s) before it asks again: with its default,
    # 200,000 records took ~1.1 s on either side, ~0.9 s of it that wait (measured: 0.2 s
    # directly and 0.24 s through Cohort with 10 ms), so the figure was the backoff's.
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"bench-{time.time_ns()}",
                  "enable.auto.commit": False, "fetch.queue.backoff.ms": 10, **QUIET})
    c.list_topics(topic, timeout=30)  # leaders known before the clock starts
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    got, t0 = 0, time.perf_counter()
    deadline = time.monotonic() + TIMEOUT_S
    while got < records:
        for msg in c.consume(10_000, 0.5):
            if not msg.error():
                got += 1
        if time.monotonic() > deadline:
            raise RuntimeError(f"{got} of {records} records fetched in time")
    elapsed = time.perf_counter() - t0
    c.close()
    return records / elapsed


def round_trips(bootstrap: str, topic: str, n: int) -> tuple[float, float]:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": "all",
                  "socket.nagle.disable": True, **QUIET})
    p.produce(topic, VALUE, partition=0)
    p.flush(30)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        p.produce(topic, VALUE, partition=0)
        p.flush(30)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.99) - 1]


def warm_up_group(bootstrap: str, topic: str, label: str) -> None:
    """A group of two to stable, untimed, before the timed one: Kafka makes
    ``__consumer_offsets`` (50 partitions) on the first FindCoordinator, and while it does,
    every member of a timed group waits and then joins at once, so its first target already
    spreads the partitions (no revocation rounds) at the price of the wait; Cohort's partitions
    are up before its clients come. Warm on both sides, as ``bench/groups.py`` measures."""
    create_topic(bootstrap, topic, 2)
    if math.isnan(time_to_stable(bootstrap, topic, 2, 2, f"{label} warm-up", quiet=True)):
        print(f"  {label}: warm-up group never stable", flush=True)


def cpu_seconds(pids: list[int]) -> tuple[float, float]:
    """Seconds the processes' threads ran and waited runnable for a CPU, so far (Linux
    ``schedstat``; a thread that ended is no longer counted)."""
    ran = waited = 0
    for pid in pids:
        for stat in Path(f"/proc/{pid}/task").glob("*/schedstat"):
            with contextlib.suppress(OSError, ValueError):
                run_ns, wait_ns, _ = stat.read_text().split()
                ran, waited = ran + int(run_ns), waited + int(wait_ns)
    return ran / 1e9, waited / 1e9


def ray_processes(title: str) -> list[int]:
    """The pids of this machine's Ray workers whose process title starts with ``title``
    (``ray::Gateway``, ``ray::OffsetsPartition``)."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        with contextlib.suppress(OSError):
            if cmdline.read_bytes().startswith(title.encode()):
                pids.append(int(cmdline.parent.name))
    return pids


def cohort_processes(cluster: Any, group: str, upstream_pid: int) -> dict[str, list[int]]:
    """Cohort's processes by role for ``group``: the partition that coordinates it, the rest
    of Cohort (the gateway, the other partitions, the controller), and the upstream."""
    coordinator = cluster.query(group, lambda _shard: os.getpid())
    rest = [pid for pid in ray_processes("ray::") if pid != coordinator]
    return {"coordinator": [coordinator], "rest of cohort and ray": rest,
            "upstream": [upstream_pid]}


def time_to_stable(bootstrap: str, topic: str, members: int, partitions: int,
                   label: str, quiet: bool = False,
                   servers: Callable[[str], dict[str, list[int]]] | None = None) -> float:
    """Seconds from the moment ``members`` KIP-848 consumers (built first, in child processes:
    ``bench/groups.py``'s ``RdkafkaHosts``) subscribe until the group is stable as
    ``actors.tools.stable_group`` judges it (NaN after ``TIMEOUT_S``). Prints, under
    ``label``, how the group got there: members holding a partition and partitions held,
    every ``CURVE_STEP_S`` (where a slower side loses its time), and what each of ``servers``
    (the group's id -> name: pids) and the clients did with the CPUs meanwhile (``cpu_seconds``)."""
    owners = Owners(partitions)
    group = f"stable-{time.time_ns()}"
    hosts = RdkafkaHosts(bootstrap, topic, group, owners, members, TIMEOUT_S)
    owners.expect(set(hosts.keys))
    curve: list[tuple[int, int]] = []
    watched = {**(servers(group) if servers else {}), "clients": hosts.pids}
    before = {name: cpu_seconds(pids) for name, pids in watched.items()}
    try:
        t0 = hosts.start()
        while (done := owners.wait(CURVE_STEP_S)) is None and \
                time.perf_counter() - t0 < TIMEOUT_S and not stuck(curve):
            curve.append(owners.holding())
        spent = {name: tuple(b - a for a, b in zip(before[name], cpu_seconds(pids),
                                                   strict=True))
                 for name, pids in watched.items()}
        if done is None:
            print(f"  {label}: not stable; {why_not_stable(bootstrap, group, owners)}",
                  flush=True)
    finally:
        hosts.close()
    runs = [(point, len(list(same))) for point, same in itertools.groupby(curve)]
    if not quiet:
        print(f"  {label}: members holding a partition / partitions held, every "
              f"{CURVE_STEP_S:.0f} s: " + ", ".join(
                  f"{m}/{p}" + (f" x{n}" if n > 1 else "") for (m, p), n in runs), flush=True)
        print(f"  {label}: CPU s run / waited runnable, until stable: " + ", ".join(
            f"{name} {ran:.1f} / {waited:.1f}" for name, (ran, waited) in spent.items()),
            flush=True)
    return done - t0 if done is not None else float("nan")


def stuck(curve: list[tuple[int, int]]) -> bool:
    """Nothing moved for ``STUCK_S`` with every partition held: waiting on is no figure."""
    last = int(STUCK_S / CURVE_STEP_S)
    return len(curve) > last and len(set(curve[-last:])) == 1 and curve[-1][1] > 0


def why_not_stable(bootstrap: str, group: str, owners: Owners) -> str:
    """The members whose clients do not hold their share of partitions, beside what the group's
    coordinator says of them (assignment and target, ConsumerGroupDescribe)."""
    odd = {f"{group}-{k}": held for k, held in owners.unbalanced().items()}
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    try:
        described = admin.describe_consumer_groups([group])[group].result(30)
    except Exception as e:  # the figure stands without it
        return f"clients {odd}; the group could not be described: {e}"
    seen = {m.client_id: m for m in described.members}

    def parts(assignment) -> list[int] | None:
        return None if assignment is None else sorted(
            p.partition for p in assignment.topic_partitions)

    said = {c: (parts(seen[c].assignment), parts(seen[c].target_assignment))
            if c in seen else "not a member" for c in odd}
    return (f"group {described.state}, {len(described.members)} members; clients holding "
            f"other than their share (client: held): {odd}; the coordinator's (assignment, target) "
            f"for them: {said}")


def two_producers(bootstraps: list[str], topic: str, records: int, partitions: int) -> float:
    rates: list[float] = []

    def one(bootstrap: str) -> None:
        rates.append(produce_rate(bootstrap, topic, records // 2, partitions))

    threads = [threading.Thread(target=one, args=(b,)) for b in bootstraps]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(TIMEOUT_S)
    return records / (time.perf_counter() - t0)


def measure(kind: str, args: argparse.Namespace) -> dict[str, float]:
    out: dict[str, float] = {}
    with upstream_broker(kind) as broker, \
            cohort_in_front(broker.bootstrap, args.coordinator_partitions) as cluster:
        upstream, upstream_pid = broker.bootstrap, broker.pid
        direct, through = "bench-direct", "bench-cohort"
        create_topic(upstream, direct, args.partitions)
        create_topic(cluster.bootstrap, through, args.partitions)
        # Each figure ``--repeats`` times, direct and through Cohort alternately (the first
        # rounds warm the upstream's JIT and caches for both), its median kept: one pair of
        # runs on a shared machine says little.
        runs: dict[str, list] = {}
        for _ in range(args.repeats):
            for side, bootstrap, topic in (("direct", upstream, direct),
                                           ("cohort", cluster.bootstrap, through)):
                runs.setdefault(f"produced/s {side}", []).append(
                    produce_rate(bootstrap, topic, args.records, args.partitions))
        for _ in range(args.repeats):
            for side, bootstrap in (("direct", upstream), ("cohort", cluster.bootstrap)):
                runs.setdefault(f"fetched/s {side}", []).append(
                    fetch_rate(bootstrap, direct, args.records, args.partitions))
                median, p99 = round_trips(bootstrap, direct, args.round_trips)
                runs.setdefault(f"round trip ms {side}", []).append(median)
                runs.setdefault(f"round trip p99 {side}", []).append(p99)
        out.update({name: statistics.median(values) for name, values in runs.items()})
        if args.two_gateways:
            from actors.gateway.launch import start_gateway, stop_gateway

            second = start_gateway(cluster.num_partitions, cluster.config, port=0,
                                   name="gateway-2")
            try:
                out["2 producers, 1 gateway"] = two_producers(
                    [cluster.bootstrap] * 2, through, args.records, args.partitions)
                out["2 producers, 2 gateways"] = two_producers(
                    [cluster.bootstrap, second], through, args.records, args.partitions)
            finally:
                stop_gateway("gateway-2")
        if args.stable:  # a partition a member: stable once every member owns its own
            stable, size = f"stable-{kind}", args.stable_partitions or args.members
            create_topic(cluster.bootstrap, stable, size)
            warm_up_group(cluster.bootstrap, stable + "-warm", f"cohort over {kind}")
            out["stable s cohort"] = time_to_stable(
                cluster.bootstrap, stable, args.members, size, f"cohort over {kind}",
                servers=lambda group: cohort_processes(cluster, group, upstream_pid))
            if kind == "kafka":  # the peer: Kafka 4.4's own coordinator, the same group
                create_topic(upstream, stable + "-own", size)
                warm_up_group(upstream, stable + "-own-warm", "kafka itself")
                out["stable s kafka itself"] = time_to_stable(
                    upstream, stable + "-own", args.members, size, "kafka itself",
                    servers=lambda _group: {"kafka": [upstream_pid]})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--upstreams", default="tansu,kafka")
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--round-trips", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--stable", action="store_true")
    ap.add_argument("--members", type=int, default=1000)
    ap.add_argument("--stable-partitions", type=int, default=0,
                    help="partitions of --stable's topic (default: one a member)")
    ap.add_argument("--two-gateways", action="store_true")
    ap.add_argument("--coordinator-partitions", type=int, default=4,
                    help="Cohort's partitions (processes; each a broker its clients learn)")
    args = ap.parse_args()
    results = {kind: measure(kind, args) for kind in args.upstreams.split(",")}
    for kind, r in results.items():
        print(f"\n## Cohort in front of {kind}")
        for name, value in r.items():
            print(f"- {name}: {value:,.3f}")
        print(f"- produced/s, cohort/direct: {r['produced/s cohort'] / r['produced/s direct']:.2f}"
              " (goal >= 0.8)")
        print(f"- fetched/s, cohort/direct: {r['fetched/s cohort'] / r['fetched/s direct']:.2f}"
              " (goal >= 0.8)")
        added = r["round trip ms cohort"] - r["round trip ms direct"]
        print(f"- a produce's round trip adds {added:.3f} ms at the median (goal <= 0.2)")
        if "2 producers, 2 gateways" in r:
            scale = r["2 producers, 2 gateways"] / r["2 producers, 1 gateway"]
            print(f"- two gateways / one gateway, two producers: {scale:.2f}")
    tansu, kafka = results.get("tansu", {}), results.get("kafka", {})
    if "stable s cohort" in tansu and "stable s kafka itself" in kafka:
        ratio = tansu["stable s cohort"] / kafka["stable s kafka itself"]
        print(f"\n{args.members} KIP-848 consumers stable: Cohort over Tansu "
              f"{tansu['stable s cohort']:.2f} s, Kafka 4.4 itself "
              f"{kafka['stable s kafka itself']:.2f} s: {ratio:.2f}x its time (goal <= 1.0)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
